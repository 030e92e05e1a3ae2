package straittest_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strait/strait/straittest"
)

// produce writes n records to topic with acks=all and fails the test on an
// error.
func produce(t *testing.T, cl *kgo.Client, topic string, from, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, "v%d", from+i)}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
}

// consume polls cl until it has n records or 30 s pass.
func consume(t *testing.T, cl *kgo.Client, n int) []*kgo.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var got []*kgo.Record
	for len(got) < n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d records: %v", len(got), n, err)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Errorf("fetch %s/%d: %v", topic, p, err) })
		got = append(got, fs.Records()...)
	}
	return got
}

// A seeded topic, produced to, consumed in a group, offsets committed: the
// group is stable and a second consumer of the group resumes after the
// commit.
func TestSeededTopicProduceConsumeCommit(t *testing.T) {
	c := straittest.Start(t, straittest.WithTopic("orders", 3, 1))
	if got := c.Leader("orders", 2); got != 1 {
		t.Fatalf("leader of orders/2 = %d, want 1", got)
	}
	produce(t, c.Client(), "orders", 0, 300)

	cl := c.Client(kgo.ConsumerGroup("g"), kgo.ConsumeTopics("orders"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
	if got := consume(t, cl, 300); len(got) != 300 {
		t.Fatalf("consumed %d records, want 300", len(got))
	}
	g := c.WaitGroupStable("g", 10*time.Second)
	if g.Members != 1 {
		t.Fatalf("group: %+v", g)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := cl.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatal(err)
	}
	cl.Close() // leaves the group

	produce(t, c.Client(), "orders", 300, 5)
	next := c.Client(kgo.ConsumerGroup("g"), kgo.ConsumeTopics("orders"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	got := consume(t, next, 5)
	for _, r := range got {
		var i int
		if _, err := fmt.Sscanf(string(r.Value), "v%d", &i); err != nil || i < 300 {
			t.Fatalf("after the commit the group read %q again", r.Value)
		}
	}
}

// Three brokers: a seeded RF=3 topic has all three in its ISR, the leader
// accessor agrees with the ISR one, and a stopped follower leaves the ISR
// (controlled shutdown) and comes back after Restart.
func TestClusterLeaderAndISR(t *testing.T) {
	for name, opts := range etcdModes {
		t.Run(name, func(t *testing.T) { testClusterLeaderAndISR(t, opts...) })
	}
}

// etcdModes are the two ways brokers keep metadata: an embedded etcd member
// each (the default), or the test process's shared etcd.
var etcdModes = map[string][]straittest.Option{
	"embedded":    {straittest.WithEmbeddedEtcd()},
	"shared-etcd": nil,
}

func testClusterLeaderAndISR(t *testing.T, opts ...straittest.Option) {
	c := straittest.StartCluster(t, 3, append(opts, straittest.WithTopic("t", 1, 3))...)
	st := c.WaitISR("t", 0, 3, 10*time.Second)
	if !slices.Equal(st.ISR, []int32{1, 2, 3}) || len(st.Replicas) != 3 {
		t.Fatalf("state: %+v", st)
	}
	leader := c.Leader("t", 0)
	if leader < 1 || leader > 3 {
		t.Fatalf("leader %d", leader)
	}
	follower := leader%3 + 1
	cl := c.Client(kgo.RequiredAcks(kgo.AllISRAcks()))
	produce(t, cl, "t", 0, 10)

	c.Stop(follower)
	st = c.WaitISR("t", 0, 2, 15*time.Second)
	if slices.Contains(st.ISR, follower) {
		t.Fatalf("stopped broker %d still in ISR %v", follower, st.ISR)
	}
	produce(t, cl, "t", 10, 10)
	c.Restart(follower)
	st = c.WaitISR("t", 0, 3, 30*time.Second)
	if !slices.Contains(st.ISR, follower) {
		t.Fatalf("restarted broker %d not back in ISR %v", follower, st.ISR)
	}
}

// A restarted broker keeps its port and directory: the client made before
// the restart goes on producing and reads what it wrote before.
func TestRestartKeepsPortAndClientContinues(t *testing.T) {
	for name, opts := range etcdModes {
		t.Run(name, func(t *testing.T) { testRestartKeepsPort(t, opts...) })
	}
}

func testRestartKeepsPort(t *testing.T, opts ...straittest.Option) {
	c := straittest.Start(t, append(opts, straittest.WithTopic("r", 1, 1))...)
	addr, dir := c.Broker(1).Addr(), c.Broker(1).Dir()
	cl := c.Client()
	produce(t, cl, "r", 0, 10)

	c.Restart(1)
	if got := c.Broker(1).Addr(); got != addr {
		t.Fatalf("address %s after restart, was %s", got, addr)
	}
	if got := c.Broker(1).Dir(); got != dir {
		t.Fatalf("directory %s after restart, was %s", got, dir)
	}
	produce(t, cl, "r", 10, 10)

	rd := c.Client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"r": {0: kgo.NewOffset().AtStart()}}))
	got := consume(t, rd, 20)
	for i, r := range got {
		if want := fmt.Sprintf("v%d", i); string(r.Value) != want || r.Offset != int64(i) {
			t.Fatalf("record %d: %q at %d, want %q at %d", i, r.Value, r.Offset, want, i)
		}
	}
}

// A full disk answers produce with KAFKA_STORAGE_ERROR.
func TestFullDiskGivesStorageError(t *testing.T) {
	c := straittest.Start(t, straittest.WithTopic("full", 1, 1), straittest.WithFaultyDisks())
	cl := c.Client(kgo.RecordRetries(0), kgo.DisableIdempotentWrite(), kgo.RequestRetries(0))
	produce(t, cl, "full", 0, 1)

	c.Broker(1).Disk().Fill()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := cl.ProduceSync(ctx, &kgo.Record{Topic: "full", Value: []byte("x")}).FirstErr()
	if !errors.Is(err, kerr.KafkaStorageError) {
		t.Fatalf("produce on a full disk: %v, want KAFKA_STORAGE_ERROR", err)
	}
}

// A slow disk delays the writes of a produce by the injected latency: the
// Disk counts the delayed writes (no timing is asserted).
func TestSlowDiskDelaysWrites(t *testing.T) {
	c := straittest.Start(t, straittest.WithTopic("slow", 1, 1), straittest.WithFaultyDisks())
	cl := c.Client()
	produce(t, cl, "slow", 0, 1)
	disk := c.Broker(1).Disk()
	before := disk.Stats()
	if before.DelayedWrites != 0 {
		t.Fatalf("writes delayed before any latency was set: %+v", before)
	}

	disk.SetLatency(5*time.Millisecond, 5*time.Millisecond)
	produce(t, cl, "slow", 1, 3)
	disk.SetLatency(0, 0)
	after := disk.Stats()
	writes := after.Writes - before.Writes
	delayed := after.DelayedWrites - before.DelayedWrites
	if writes == 0 || delayed != writes {
		t.Fatalf("%d writes during the slow produce, %d of them delayed; want every one (%+v)", writes, delayed, after)
	}
	produce(t, cl, "slow", 4, 1)
	if got := disk.Stats().DelayedWrites; got != after.DelayedWrites {
		t.Fatalf("writes delayed after the latency was removed: %d, was %d", got, after.DelayedWrites)
	}
}

// Failing writes (EIO) also give KAFKA_STORAGE_ERROR; Heal does not bring
// the log dir back (Kafka takes a failed log dir offline until restart), a
// Restart does.
func TestFailingWritesThenRestart(t *testing.T) {
	c := straittest.Start(t, straittest.WithTopic("eio", 1, 1), straittest.WithFaultyDisks())
	cl := c.Client(kgo.RecordRetries(0), kgo.DisableIdempotentWrite(), kgo.RequestRetries(0))
	produce(t, cl, "eio", 0, 1)

	disk := c.Broker(1).Disk()
	disk.FailWrites(true)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := cl.ProduceSync(ctx, &kgo.Record{Topic: "eio", Value: []byte("x")}).FirstErr()
	if !errors.Is(err, kerr.KafkaStorageError) {
		t.Fatalf("produce with failing writes: %v, want KAFKA_STORAGE_ERROR", err)
	}
	if disk.Stats().FailedWrites == 0 {
		t.Fatal("no write was refused")
	}
	disk.Heal()
	c.Restart(1)
	produce(t, c.Client(), "eio", 1, 1)
}

// The test defaults reach the broker, and WithConfig and WithBrokerConfig
// override them per key (read back with DescribeConfigs).
func TestConfigDefaultsAndOverrides(t *testing.T) {
	c := straittest.StartCluster(t, 2,
		straittest.WithConfig("group.initial.rebalance.delay.ms", "250"),
		straittest.WithBrokerConfig(2, "broker.rack", "r2"))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	want := map[int32]map[string]string{
		1: {"group.initial.rebalance.delay.ms": "250", "offsets.topic.num.partitions": "1", "broker.rack": ""},
		2: {"group.initial.rebalance.delay.ms": "250", "offsets.topic.num.partitions": "1", "broker.rack": "r2"},
	}
	for id, keys := range want {
		rcs, err := c.Admin().DescribeBrokerConfigs(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		rc, err := rcs.On(fmt.Sprint(id), nil)
		if err != nil || rc.Err != nil {
			t.Fatalf("broker %d: %v %v", id, err, rc.Err)
		}
		for k, v := range keys {
			got := ""
			for _, cfg := range rc.Configs {
				if cfg.Key == k && cfg.Value != nil {
					got = *cfg.Value
				}
			}
			if got != v {
				t.Errorf("broker %d: %s = %q, want %q", id, k, got, v)
			}
		}
	}
	if got := c.Broker(2).Config()["broker.rack"]; got != "r2" {
		t.Errorf("Config()[broker.rack] = %q", got)
	}
}
