package broker

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/strait/strait/controller"
)

// moveLeader makes broker `to` (a node id, already in the ISR) the leader
// of topic-p: the replicas are reordered with it first, then a preferred
// election runs. It returns the partition's state once every broker shows
// the new leader.
func (c *replicatedCluster) moveLeader(topic string, p int32, to int32) controller.PartitionInfo {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adm := kadm.NewClient(c.client())
	st := c.partitionOn(0, topic, p).State()
	replicas := append([]int32{to}, slices.DeleteFunc(slices.Clone(st.Replicas), func(id int32) bool { return id == to })...)
	waitFor(c.t, 20*time.Second, fmt.Sprintf("broker %d in the ISR of %s-%d", to, topic, p), func() bool {
		st := c.partitionOn(0, topic, p).State()
		return slices.Contains(st.ISR, to)
	})
	ar, err := adm.AlterPartitionAssignments(ctx, kadm.AlterPartitionAssignmentsReq{topic: {p: replicas}})
	if err != nil {
		c.t.Fatal(err)
	}
	ar.Each(func(r kadm.AlterPartitionAssignmentsResponse) {
		if r.Err != nil {
			c.t.Fatalf("reassign %s-%d to %v: %v", topic, p, replicas, r.Err)
		}
	})
	waitFor(c.t, 20*time.Second, "the reordered replicas", func() bool {
		st := c.partitionOn(0, topic, p).State()
		return slices.Equal(st.Replicas, replicas) && len(st.AddingReplicas) == 0 && len(st.RemovingReplicas) == 0
	})
	er, err := adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, kadm.TopicsSet{topic: {p: {}}})
	if err != nil {
		c.t.Fatal(err)
	}
	for _, r := range er[topic] {
		if r.Err != nil {
			c.t.Fatalf("preferred election of %s-%d: %v", topic, p, r.Err)
		}
	}
	var after *controller.PartitionInfo
	waitFor(c.t, 20*time.Second, fmt.Sprintf("broker %d to lead %s-%d everywhere", to, topic, p), func() bool {
		for i := range c.srvs {
			st := c.partitionOn(i, topic, p).State()
			if st == nil || st.Leader != to {
				return false
			}
			after = st
		}
		return true
	})
	return *after
}

// fetchAt sends one Fetch for topic-0 at offset 0 to broker i, at the
// highest version up to maxVersion, naming leaderEpoch as the client's
// current leader epoch (-1: none).
func (c *replicatedCluster) fetchAt(i int, maxVersion int16, topic string, topicID [16]byte, leaderEpoch int32) *kmsg.FetchResponse {
	c.t.Helper()
	versions := kversion.Stable()
	versions.SetMaxKeyVersion(int16(kmsg.Fetch), maxVersion)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.addrs[i]), kgo.MaxVersions(versions))
	if err != nil {
		c.t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = -1, 10, 1, 1<<20
	req.SessionEpoch = -1 // no session
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = topic, topicID
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = 0, 0, 1<<20, leaderEpoch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := cl.SeedBrokers()[0].Request(ctx, req)
	if err != nil {
		c.t.Fatal(err)
	}
	fr := resp.(*kmsg.FetchResponse)
	if fr.Version != maxVersion {
		c.t.Fatalf("asked for Fetch v%d, got v%d", maxVersion, fr.Version)
	}
	if fr.ErrorCode != 0 || len(fr.Topics) != 1 || len(fr.Topics[0].Partitions) != 1 {
		c.t.Fatalf("Fetch v%d: %+v", maxVersion, fr)
	}
	return fr
}

// TestFetchNamesTheLeader: from Fetch v16 (KIP-951), a partition answered
// NOT_LEADER_OR_FOLLOWER (fetched from a broker that does not host it) or
// FENCED_LEADER_EPOCH (a stale leader epoch, from the leader or a follower)
// carries the current leader and its epoch, and node_endpoints lists the
// leader on the client's listener; v15 carries neither, as in Kafka. A
// follower at the client's leader epoch serves a consumer's fetch from v11
// on (KIP-392), as Kafka's, so it answers no error there.
func TestFetchNamesTheLeader(t *testing.T) {
	c := startReplicatedCluster(t, 2, map[string]string{"auto.leader.rebalance.enable": "false"})
	c.createAssignedTopic("kip951", [][]int32{{1, 2}}, nil)
	produceAll := c.client(kgo.DefaultProduceTopic("kip951"), kgo.RequiredAcks(kgo.AllISRAcks()))
	for i := range 10 {
		if err := produceAll.ProduceSync(context.Background(), &kgo.Record{Value: fmt.Appendf(nil, "v%d", i)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	id := c.partitionOn(0, "kip951", 0).TopicID()
	before := *c.partitionOn(0, "kip951", 0).State()
	if before.Leader != 1 {
		t.Fatalf("leader %d, want broker 1", before.Leader)
	}

	check := func(what string, resp *kmsg.FetchResponse, code int16, leader, epoch int32, endpoint string) {
		t.Helper()
		sp := resp.Topics[0].Partitions[0]
		var eps []string
		for _, b := range resp.Brokers {
			eps = append(eps, fmt.Sprintf("%d=%s:%d", b.NodeID, b.Host, b.Port))
		}
		var want []string
		if endpoint != "" {
			want = []string{fmt.Sprintf("%d=%s", leader, endpoint)}
		}
		if sp.ErrorCode != code || sp.CurrentLeader.LeaderID != leader || sp.CurrentLeader.LeaderEpoch != epoch || !slices.Equal(eps, want) {
			t.Errorf("%s: error %v, current leader %d epoch %d, node endpoints %v; want %v, leader %d epoch %d, endpoints %v",
				what, kerr.ErrorForCode(sp.ErrorCode), sp.CurrentLeader.LeaderID, sp.CurrentLeader.LeaderEpoch, eps,
				kerr.ErrorForCode(code), leader, epoch, want)
		}
		if code != 0 && len(sp.RecordBatches) != 0 {
			t.Errorf("%s: %d record bytes with an error", what, len(sp.RecordBatches))
		}
	}
	nl := kerr.NotLeaderForPartition.Code
	for _, v := range []int16{15, 16, 17} {
		check(fmt.Sprintf("v%d from the follower", v), c.fetchAt(1, v, "kip951", id, before.LeaderEpoch), 0, -1, -1, "")
		check(fmt.Sprintf("v%d from the leader", v), c.fetchAt(0, v, "kip951", id, before.LeaderEpoch), 0, -1, -1, "")
	}

	after := c.moveLeader("kip951", 0, 2)
	if after.LeaderEpoch <= before.LeaderEpoch {
		t.Fatalf("leader epoch %d after the move, %d before", after.LeaderEpoch, before.LeaderEpoch)
	}
	check("v16 from the old leader, now a follower", c.fetchAt(0, 16, "kip951", id, after.LeaderEpoch), 0, -1, -1, "")
	check("v16 from the old leader with the old epoch", c.fetchAt(0, 16, "kip951", id, before.LeaderEpoch), kerr.FencedLeaderEpoch.Code, 2, after.LeaderEpoch, c.addrs[1])
	check("v16 with the old epoch", c.fetchAt(1, 16, "kip951", id, before.LeaderEpoch), kerr.FencedLeaderEpoch.Code, 2, after.LeaderEpoch, c.addrs[1])
	check("v15 with the old epoch", c.fetchAt(1, 15, "kip951", id, before.LeaderEpoch), kerr.FencedLeaderEpoch.Code, -1, -1, "")
	check("v16 from the new leader", c.fetchAt(1, 16, "kip951", id, after.LeaderEpoch), 0, -1, -1, "")
	// A broker that does not host the partition answers from the metadata.
	c.createAssignedTopic("kip951-remote", [][]int32{{2}}, nil)
	remote := *c.partitionOn(1, "kip951-remote", 0).State()
	remoteID := c.partitionOn(1, "kip951-remote", 0).TopicID()
	waitFor(t, 10*time.Second, "broker 1 to know kip951-remote", func() bool {
		_, ok := c.srvs[0].ctrl.TopicByID(remoteID)
		return ok
	})
	check("v16 for a partition hosted elsewhere", c.fetchAt(0, 16, "kip951-remote", remoteID, -1),
		nl, 2, remote.LeaderEpoch, c.addrs[1])
}

// metadataRequests counts a client's Metadata requests.
type metadataRequests struct{ n atomic.Int64 }

func (m *metadataRequests) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, _ error) {
	if key == int16(kmsg.Metadata) {
		m.n.Add(1)
	}
}

// TestFetchLeaderMoveKgoConsumer: a franz-go consumer keeps consuming a
// partition, in order and without gaps, while its leader moves to the other
// broker and back. The old leader stays a follower and answers the
// consumer's next fetch, at the old leader epoch, FENCED_LEADER_EPOCH naming
// the new leader, as Kafka 4.4 does (Partition.getLocalLog checks the epoch
// before leadership, and a follower serves consumers from Fetch v11);
// franz-go moves a partition without metadata only on NOT_LEADER_OR_FOLLOWER
// (KIP-951, checked in TestFetchNamesTheLeader), so here it refreshes its
// metadata.
func TestFetchLeaderMoveKgoConsumer(t *testing.T) {
	c := startReplicatedCluster(t, 2, map[string]string{"auto.leader.rebalance.enable": "false"})
	c.createAssignedTopic("kip951-move", [][]int32{{1, 2}}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	prod := c.client(kgo.DefaultProduceTopic("kip951-move"), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RecordRetries(1<<30), kgo.ProducerLinger(0),
		kgo.MetadataMinAge(100*time.Millisecond))
	var produced atomic.Int64
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // a record every 2 ms, acknowledged one by one
		defer wg.Done()
		for seq := int64(0); !stop.Load() && ctx.Err() == nil; seq++ {
			if err := prod.ProduceSync(ctx, &kgo.Record{Partition: 0, Value: fmt.Appendf(nil, "%d", seq)}).FirstErr(); err != nil {
				if ctx.Err() == nil {
					t.Errorf("produce %d: %v", seq, err)
				}
				return
			}
			produced.Store(seq + 1)
			time.Sleep(2 * time.Millisecond)
		}
	}()

	var metadata metadataRequests
	cons := c.client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"kip951-move": {0: kgo.NewOffset().AtStart()}}),
		kgo.FetchMaxWait(100*time.Millisecond), kgo.MetadataMaxAge(time.Minute), kgo.WithHooks(&metadata))
	var next int64 // the next sequence number expected
	consumeTo := func(n int64, within time.Duration) {
		t.Helper()
		deadline := time.Now().Add(within)
		for next < n {
			pctx, pcancel := context.WithDeadline(ctx, deadline)
			fs := cons.PollFetches(pctx)
			pcancel()
			if time.Now().After(deadline) {
				t.Fatalf("consumed up to %d, want %d within %v", next, n, within)
			}
			fs.EachError(func(topic string, p int32, err error) {
				t.Logf("fetch error %s-%d: %v (retried by the client)", topic, p, err)
			})
			fs.EachRecord(func(r *kgo.Record) {
				var seq int64
				fmt.Sscan(string(r.Value), &seq)
				if seq != next {
					t.Fatalf("record %d at offset %d, want %d", seq, r.Offset, next)
				}
				next++
			})
		}
	}
	waitFor(t, 20*time.Second, "records", func() bool { return produced.Load() >= 200 })
	consumeTo(200, 20*time.Second)
	for _, to := range []int32{2, 1} {
		before := metadata.n.Load()
		c.moveLeader("kip951-move", 0, to)
		// Records produced after the move come from the new leader.
		target := produced.Load() + 200
		waitFor(t, 20*time.Second, "records after the move", func() bool { return produced.Load() >= target })
		consumeTo(target, 10*time.Second)
		t.Logf("the consumer sent %d Metadata requests to follow the leader to broker %d", metadata.n.Load()-before, to)
	}
	stop.Store(true)
	wg.Wait()
}
