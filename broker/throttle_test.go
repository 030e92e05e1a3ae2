package broker

import (
	"context"
	"crypto/rand"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const mib = 1 << 20

// setThrottles sets (value non-nil) or deletes the replication throttle rates
// on each of brokers, per broker, as kafka-reassign-partitions --throttle
// does.
func (c *replicatedCluster) setThrottles(adm *kadm.Client, value *string, brokers ...int32) {
	c.t.Helper()
	op := kadm.SetConfig
	if value == nil {
		op = kadm.DeleteConfig
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{
		{Op: op, Name: "leader.replication.throttled.rate", Value: value},
		{Op: op, Name: "follower.replication.throttled.rate", Value: value},
	}, brokers...)
	if err != nil {
		c.t.Fatal(err)
	}
	for _, r := range res {
		if r.Err != nil {
			c.t.Fatalf("broker %s: %v %s", r.Name, r.Err, r.ErrMessage)
		}
	}
}

func (c *replicatedCluster) setThrottledReplicas(adm *kadm.Client, topic string, leader, follower *string) {
	c.t.Helper()
	op := kadm.SetConfig
	if leader == nil {
		op = kadm.DeleteConfig
	}
	res, err := adm.AlterTopicConfigs(context.Background(), []kadm.AlterConfig{
		{Op: op, Name: "leader.replication.throttled.replicas", Value: leader},
		{Op: op, Name: "follower.replication.throttled.replicas", Value: follower},
	}, topic)
	if err != nil {
		c.t.Fatal(err)
	}
	if err := res[0].Err; err != nil {
		c.t.Fatalf("topic configs: %v %s", err, res[0].ErrMessage)
	}
}

func (c *replicatedCluster) reassign(adm *kadm.Client, topic string, p int32, replicas []int32) {
	c.t.Helper()
	var req kadm.AlterPartitionAssignmentsReq
	req.Assign(topic, p, replicas)
	res, err := adm.AlterPartitionAssignments(context.Background(), req)
	if err != nil {
		c.t.Fatal(err)
	}
	if r := res[topic][p]; r.Err != nil {
		c.t.Fatalf("reassigning %s-%d: %v %s", topic, p, r.Err, r.ErrMessage)
	}
}

// logEnd is broker i's log end offset of topic-p, -1 without a replica.
func (c *replicatedCluster) logEnd(i int, topic string, p int32) int64 {
	if rp := c.partitionOn(i, topic, p); rp != nil {
		return rp.Log().LogEndOffset()
	}
	return -1
}

// TestReplicationThrottleReassignment moves a partition holding 30 MiB onto
// a new broker under 1 MiB/s leader and follower throttles, set as
// kafka-reassign-partitions --throttle sets them (the rates on each broker,
// the topic's leader throttled replicas on the current replicas, the
// follower's on the new one): the new replica copies at an average between
// 0.5 and 2 MiB/s over the whole move (Kafka's rate windows let about ten
// windows' worth through at once, then hold it to the rate), while the
// in-sync follower is never throttled (acks=all produces complete while the
// leader's quota is exceeded). A second move onto another broker is
// throttled likewise until the throttles are removed, after which it
// finishes faster than the throttle would ever allow.
func TestReplicationThrottleReassignment(t *testing.T) {
	const (
		topic      = "throttled"
		recordSize = 64 << 10
		preload    = 30 * mib / recordSize
		rate       = mib
	)
	c := startReplicatedCluster(t, 4, nil)
	c.createAssignedTopic(topic, [][]int32{{1, 2}}, nil)
	adm := kadm.NewClient(c.client())
	cl := c.client(kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerBatchCompression(kgo.NoCompression()))
	produce := func(n int) {
		t.Helper()
		recs := make([]*kgo.Record, n)
		for i := range recs {
			v := make([]byte, recordSize)
			rand.Read(v)
			recs[i] = &kgo.Record{Partition: 0, Value: v}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	produce(preload)
	leader := c.partitionOn(0, topic, 0)
	if leader == nil || !leader.IsLeader() {
		t.Fatal("broker 1 does not lead throttled-0")
	}

	rateStr := fmt.Sprint(rate)
	c.setThrottles(adm, &rateStr, 1, 2, 3)
	c.setThrottledReplicas(adm, topic, kmsg.StringPtr("0:1,0:2"), kmsg.StringPtr("0:3"))
	start := time.Now()
	c.reassign(adm, topic, 0, []int32{1, 2, 3})

	// Once broker 3's copying exceeds the leader's quota, it gets no
	// records, but broker 2 (in the ISR) does.
	waitFor(t, 30*time.Second, "the leader's replication quota to be exceeded", func() bool {
		return c.srvs[0].leaderQuota.Exceeded(time.Now())
	})
	if !leader.ShouldLeaderThrottle(3) {
		// The quota may have dropped back under its bound in between:
		// check again at the next excess.
		waitFor(t, 30*time.Second, "broker 3's fetches to be throttled", func() bool { return leader.ShouldLeaderThrottle(3) })
	}
	if leader.ShouldLeaderThrottle(2) {
		t.Fatal("the leader throttles broker 2, an in-sync replica")
	}
	produce(16) // acks=all: broker 2, in the ISR, must copy it
	if got, want := c.logEnd(1, topic, 0), c.logEnd(0, topic, 0); got != want {
		t.Fatalf("after acks=all produces, broker 2 is at %d, the leader at %d", got, want)
	}
	if c.logEnd(2, topic, 0) >= c.logEnd(0, topic, 0) {
		t.Fatal("broker 3 caught up while its replication was throttled")
	}

	target := c.logEnd(0, topic, 0)
	waitFor(t, 120*time.Second, "broker 3 to catch up under the throttle", func() bool { return c.logEnd(2, topic, 0) >= target })
	elapsed := time.Since(start)
	avg := float64(target*recordSize) / mib / elapsed.Seconds()
	t.Logf("throttled move: %d MiB in %v: %.2f MiB/s (leader rate %.2f MiB/s, follower rate %.2f MiB/s now)",
		target*recordSize/mib, elapsed.Round(time.Millisecond), avg,
		c.srvs[0].leaderQuota.Rate(time.Now())/mib, c.srvs[2].followerQuota.Rate(time.Now())/mib)
	if avg < 0.5 || avg > 2 {
		t.Fatalf("the throttled replica copied at %.2f MiB/s on average, want between 0.5 and 2 (throttle 1 MiB/s)", avg)
	}
	waitFor(t, 30*time.Second, "the reassignment to complete", func() bool {
		_, ok := reassignmentListed(t, adm, topic, 0)
		return !ok
	})

	// The second move: throttled until the throttles go.
	c.setThrottles(adm, &rateStr, 4)
	c.setThrottledReplicas(adm, topic, kmsg.StringPtr("0:1,0:2,0:3"), kmsg.StringPtr("0:4"))
	c.reassign(adm, topic, 0, []int32{1, 2, 3, 4})
	waitFor(t, 30*time.Second, "broker 4's replica and a throttle in force", func() bool {
		now := time.Now()
		return c.partitionOn(3, topic, 0) != nil && (c.srvs[0].leaderQuota.Exceeded(now) || c.srvs[3].followerQuota.Exceeded(now))
	})
	removed := time.Now()
	remaining := target - c.logEnd(3, topic, 0)
	if remaining*recordSize < 10*mib {
		t.Fatalf("broker 4 copied %d of %d records before the throttle held it", target-remaining, target)
	}
	c.setThrottles(adm, nil, 1, 2, 3, 4)
	c.setThrottledReplicas(adm, topic, nil, nil)
	waitFor(t, 60*time.Second, "broker 4 to catch up without throttles", func() bool { return c.logEnd(3, topic, 0) >= target })
	after := time.Since(removed)
	fast := float64(remaining*recordSize) / mib / after.Seconds()
	t.Logf("after removing the throttles: %d MiB in %v: %.2f MiB/s", remaining*recordSize/mib, after.Round(time.Millisecond), fast)
	if fast <= 2 {
		t.Fatalf("without throttles broker 4 copied at %.2f MiB/s, no faster than the throttle allows", fast)
	}
}
