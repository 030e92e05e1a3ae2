package broker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/config"
	"github.com/strait/strait/replication"
)

// replicatedCluster is n in-process brokers whose embedded etcd members form
// one etcd cluster.
type replicatedCluster struct {
	t     *testing.T
	srvs  []*Server
	cfgs  []config.Config
	addrs []string
}

func startReplicatedCluster(t *testing.T, n int, extra map[string]string) *replicatedCluster {
	t.Helper()
	srvs, cfgs := startEtcdCluster(t, n, map[string]string{
		"broker.session.timeout.ms": "3000",
		"replica.fetch.backoff.ms":  "200",
	}, extra)
	c := &replicatedCluster{t: t, srvs: srvs, cfgs: cfgs, addrs: make([]string, n)}
	for i, s := range srvs {
		c.addrs[i] = s.Addr()
	}
	t.Cleanup(func() {
		var cw sync.WaitGroup
		for _, s := range c.srvs {
			cw.Go(func() { s.Close() })
		}
		cw.Wait()
	})
	return c
}

func (c *replicatedCluster) client(opts ...kgo.Opt) *kgo.Client {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.addrs...)}, opts...)...)
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(cl.Close)
	return cl
}

// waitFor polls cond for up to d.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// partitionOn is broker i's replica of topic-p, nil if it has none.
func (c *replicatedCluster) partitionOn(i int, topic string, p int32) *replication.Partition {
	return c.srvs[i].replicas.Partition(topic, p)
}

func (c *replicatedCluster) createTopic(topic string, partitions int32, rf int16, configs map[string]*string) {
	c.t.Helper()
	adm := kadm.NewClient(c.client())
	resp, err := adm.CreateTopic(context.Background(), partitions, rf, configs, topic)
	if err != nil || resp.Err != nil {
		c.t.Fatalf("create topic: %v %v", err, resp.Err)
	}
	// Every broker knows it and every replica has opened its log.
	waitFor(c.t, 10*time.Second, "replicas of "+topic, func() bool {
		for i := range c.srvs {
			for p := range partitions {
				if c.partitionOn(i, topic, p) == nil {
					return false
				}
			}
		}
		return true
	})
}

// TestReplicationRF3 produces with acks=all to an RF=3 topic and checks that
// every replica holds the same records, that the leader's high watermark
// covers them only once followers have them, and that consumers read them
// from the leader.
func TestReplicationRF3(t *testing.T) {
	c := startReplicatedCluster(t, 3, nil)
	min2 := "2"
	c.createTopic("repl", 3, 3, map[string]*string{"min.insync.replicas": &min2})
	cl := c.client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic("repl"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	const n = 3000
	var rs []*kgo.Record
	for i := range n {
		rs = append(rs, &kgo.Record{Value: []byte(fmt.Sprintf("v%05d", i)), Partition: int32(i % 3)})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// acks=all: once acknowledged, the records are on every in-sync
	// replica, and the leader's high watermark covers them.
	for p := range int32(3) {
		var leos []int64
		var leader *replication.Partition
		for i := range c.srvs {
			part := c.partitionOn(i, "repl", p)
			leos = append(leos, part.Log().LogEndOffset())
			if part.IsLeader() {
				leader = part
			}
		}
		if leader == nil {
			t.Fatalf("partition %d: no leader", p)
		}
		if hw := leader.Log().HighWatermark(); hw != n/3 {
			t.Errorf("partition %d: leader high watermark %d, want %d", p, hw, n/3)
		}
		st := leader.State()
		for i, leo := range leos {
			if slices.Contains(st.ISR, c.srvs[i].cfg.NodeID) && leo < n/3 {
				t.Errorf("partition %d: in-sync replica on broker %d has log end %d < %d", p, i+1, leo, n/3)
			}
		}
	}
	// Followers catch up fully and hold byte-identical logs.
	waitFor(t, 10*time.Second, "followers to catch up", func() bool {
		for p := range int32(3) {
			for i := range c.srvs {
				if c.partitionOn(i, "repl", p).Log().LogEndOffset() != n/3 {
					return false
				}
			}
		}
		return true
	})
	for p := range int32(3) {
		var want []byte
		for i := range c.srvs {
			got := readLogBytes(t, c.partitionOn(i, "repl", p))
			if i == 0 {
				want = got
			} else if !slices.Equal(got, want) {
				t.Errorf("partition %d: broker %d's log differs from broker 1's (%d vs %d bytes)", p, i+1, len(got), len(want))
			}
		}
	}
	got := consumeAll(t, c.client(kgo.ConsumeTopics("repl"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())), n)
	for p, vals := range got {
		for j, v := range vals {
			if want := fmt.Sprintf("v%05d", j*3+int(p)); v != want {
				t.Fatalf("partition %d offset %d: %q, want %q", p, j, v, want)
			}
		}
	}
}

// readLogBytes is a partition's whole log as stored.
func readLogBytes(t *testing.T, p *replication.Partition) []byte {
	t.Helper()
	var out []byte
	if err := readBatches(p.Log(), 0, 1<<20, func(b []byte) error {
		out = append(out, b...)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// consumeAll reads n records and returns their values by partition.
func consumeAll(t *testing.T, cl *kgo.Client, n int) map[int32][]string {
	t.Helper()
	out := map[int32][]string{}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	count := 0
	for count < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records", count, n)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Logf("fetch %s-%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			out[r.Partition] = append(out[r.Partition], string(r.Value))
			count++
		})
	}
	return out
}

// TestReplicationFailoverKeepsAcknowledgedRecords closes the leader of
// every partition in turn (controlled shutdown) while an idempotent acks=all
// producer writes, restarting each: every acknowledged record is read back
// once, in order.
func TestReplicationFailoverKeepsAcknowledgedRecords(t *testing.T) {
	c := startReplicatedCluster(t, 3, nil)
	min2 := "2"
	c.createTopic("failover", 3, 3, map[string]*string{"min.insync.replicas": &min2})
	cl := c.client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic("failover"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RecordRetries(1<<30),
		kgo.RetryTimeout(60*time.Second), kgo.ProducerLinger(time.Millisecond))
	var mu sync.Mutex
	acked := map[int32][]int{}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for p := range int32(3) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for seq := 0; ; seq++ {
				select {
				case <-stop:
					return
				default:
				}
				r := &kgo.Record{Partition: p, Value: []byte(fmt.Sprintf("%d", seq))}
				if err := cl.ProduceSync(context.Background(), r).FirstErr(); err != nil {
					t.Errorf("partition %d seq %d: %v", p, seq, err)
					return
				}
				mu.Lock()
				acked[p] = append(acked[p], seq)
				mu.Unlock()
			}
		}()
	}
	time.Sleep(500 * time.Millisecond)
	// Close broker 1 (a leader of some partitions), bring it back, then 2.
	for _, i := range []int{0, 1} {
		cfg := c.cfgs[i]
		if err := c.srvs[i].Close(); err != nil {
			t.Logf("closing broker %d: %v", i+1, err)
		}
		time.Sleep(time.Second)
		srv, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := srv.Start(); err != nil {
			t.Fatalf("restarting broker %d: %v", i+1, err)
		}
		c.srvs[i] = srv
		c.addrs[i] = srv.Addr()
		// Back in every ISR before the next one goes.
		waitFor(t, 20*time.Second, fmt.Sprintf("broker %d back in the ISRs", i+1), func() bool {
			for p := range int32(3) {
				part := c.partitionOn(i, "failover", p)
				if part == nil {
					return false
				}
				st := part.State()
				if st == nil || !slices.Contains(st.ISR, cfg.NodeID) {
					return false
				}
			}
			return true
		})
	}
	time.Sleep(300 * time.Millisecond)
	close(stop)
	wg.Wait()
	mu.Lock()
	total := 0
	for _, s := range acked {
		total += len(s)
	}
	mu.Unlock()
	if total == 0 {
		t.Fatal("nothing acknowledged")
	}
	got := consumeAll(t, c.client(kgo.ConsumeTopics("failover"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())), total)
	for p := range int32(3) {
		if len(got[p]) != len(acked[p]) {
			t.Errorf("partition %d: read %d records, %d acknowledged", p, len(got[p]), len(acked[p]))
		}
		for j, v := range got[p] {
			if want := fmt.Sprint(j); v != want {
				t.Fatalf("partition %d offset %d: %q, want %q (lost or duplicated records)", p, j, v, want)
			}
		}
	}
	t.Logf("acknowledged %d records across two leader restarts", total)
}

// TestMinInsyncReplicas: with the ISR below min.insync.replicas an acks=all
// produce is refused with NOT_ENOUGH_REPLICAS and nothing is appended; acks=1
// still works.
func TestMinInsyncReplicas(t *testing.T) {
	c := startReplicatedCluster(t, 3, nil)
	min3 := "3"
	c.createTopic("minisr", 1, 3, map[string]*string{"min.insync.replicas": &min3})
	cl := c.client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic("minisr"), kgo.RecordRetries(0))
	if err := cl.ProduceSync(context.Background(), &kgo.Record{Value: []byte("a")}).FirstErr(); err != nil {
		t.Fatalf("full ISR: %v", err)
	}
	// Close a follower: controlled shutdown takes it out of the ISR.
	var leaderIdx, followerIdx = -1, -1
	for i := range c.srvs {
		if c.partitionOn(i, "minisr", 0).IsLeader() {
			leaderIdx = i
		} else if followerIdx < 0 {
			followerIdx = i
		}
	}
	c.srvs[followerIdx].Close()
	leader := c.partitionOn(leaderIdx, "minisr", 0)
	waitFor(t, 10*time.Second, "ISR to shrink", func() bool { return len(leader.State().ISR) == 2 })
	before := leader.Log().LogEndOffset()
	produceReq := func(acks int16) *kmsg.ProduceRequest {
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = acks, 5000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic, rt.TopicID = "minisr", leader.TopicID() // by id from v13
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = plainBatch(1)
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return req
	}
	raw, err := kgo.NewClient(kgo.SeedBrokers(c.addrs[leaderIdx]))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	resp, err := raw.SeedBrokers()[0].Request(context.Background(), produceReq(-1))
	if err != nil {
		t.Fatal(err)
	}
	code := resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode
	if !errors.Is(kerr.ErrorForCode(code), kerr.NotEnoughReplicas) {
		t.Fatalf("acks=all below min ISR: %v, want NOT_ENOUGH_REPLICAS", kerr.ErrorForCode(code))
	}
	if leader.Log().LogEndOffset() != before {
		t.Fatalf("a refused produce appended: log end %d -> %d", before, leader.Log().LogEndOffset())
	}
	// kgo sends raw produces with its own acks setting.
	raw1, err := kgo.NewClient(kgo.SeedBrokers(c.addrs[leaderIdx]), kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	if err != nil {
		t.Fatal(err)
	}
	defer raw1.Close()
	resp, err = raw1.SeedBrokers()[0].Request(context.Background(), produceReq(1))
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("acks=1 below min ISR: %v", kerr.ErrorForCode(code))
	}
}

// TestReplicaFetchFromNonBrokerRefused: a Fetch carrying a replica id that
// is not a broker replicating the partition gets NOT_LEADER_OR_FOLLOWER and
// no records.
func TestReplicaFetchFromNonBrokerRefused(t *testing.T) {
	c := startReplicatedCluster(t, 3, nil)
	c.createTopic("guarded", 1, 3, nil)
	cl := c.client(kgo.DefaultProduceTopic("guarded"))
	if err := cl.ProduceSync(context.Background(), &kgo.Record{Value: []byte("secret")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	var leaderIdx int
	for i := range c.srvs {
		if c.partitionOn(i, "guarded", 0).IsLeader() {
			leaderIdx = i
		}
	}
	raw, err := kgo.NewClient(kgo.SeedBrokers(c.addrs[leaderIdx]))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	id := c.partitionOn(leaderIdx, "guarded", 0).TopicID()
	for _, replica := range []int32{99, c.srvs[leaderIdx].cfg.NodeID%3 + 1} {
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID, req.ReplicaState.ID, req.ReplicaState.Epoch = replica, replica, 12345
		req.MaxBytes, req.SessionEpoch = 1<<20, -1
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = "guarded", id
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = 1<<20, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := raw.SeedBrokers()[0].Request(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		sp := resp.(*kmsg.FetchResponse).Topics[0].Partitions[0]
		if sp.ErrorCode != kerr.NotLeaderForPartition.Code || len(sp.RecordBatches) != 0 {
			t.Errorf("replica id %d (broker epoch 12345): error %v with %d record bytes, want NOT_LEADER_OR_FOLLOWER and none",
				replica, kerr.ErrorForCode(sp.ErrorCode), len(sp.RecordBatches))
		}
	}
}

// TestProduceToFollowerNamesTheLeader: a produce sent to a follower gets
// NOT_LEADER_OR_FOLLOWER with the current leader, its epoch and its endpoint
// (KIP-951), so that clients switch without a metadata round trip.
func TestProduceToFollowerNamesTheLeader(t *testing.T) {
	c := startReplicatedCluster(t, 3, nil)
	c.createTopic("redirect", 1, 3, nil)
	leaderIdx, followerIdx := -1, -1
	for i := range c.srvs {
		if c.partitionOn(i, "redirect", 0).IsLeader() {
			leaderIdx = i
		} else {
			followerIdx = i
		}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.addrs[followerIdx]))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic, rt.TopicID = "redirect", c.partitionOn(leaderIdx, "redirect", 0).TopicID() // by id from v13
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = plainBatch(1)
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	raw, err := cl.SeedBrokers()[0].Request(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	resp := raw.(*kmsg.ProduceResponse)
	sp := resp.Topics[0].Partitions[0]
	st := c.partitionOn(leaderIdx, "redirect", 0).State()
	if sp.ErrorCode != kerr.NotLeaderForPartition.Code || sp.CurrentLeader.LeaderID != st.Leader || sp.CurrentLeader.LeaderEpoch != st.LeaderEpoch {
		t.Fatalf("got error %v, current leader %+v; want NOT_LEADER_OR_FOLLOWER naming leader %d epoch %d",
			kerr.ErrorForCode(sp.ErrorCode), sp.CurrentLeader, st.Leader, st.LeaderEpoch)
	}
	if len(resp.Brokers) != 1 || fmt.Sprintf("%s:%d", resp.Brokers[0].Host, resp.Brokers[0].Port) != c.addrs[leaderIdx] {
		t.Fatalf("node endpoints %+v, want the leader at %s", resp.Brokers, c.addrs[leaderIdx])
	}
}

// TestTransactionsAcrossBrokers: a transactional producer whose coordinator
// is on one broker writes to partitions led by all three (the produce
// verification asks the coordinator over AddPartitionsToTxn, the markers
// travel as WriteTxnMarkers); read_committed sees the committed
// transactions only.
func TestTransactionsAcrossBrokers(t *testing.T) {
	c := startReplicatedCluster(t, 3, nil)
	c.createTopic("txns", 6, 3, nil)
	for i, txnID := range []string{"tx-a", "tx-b", "tx-c"} {
		cl := c.client(kgo.TransactionalID(txnID), kgo.DefaultProduceTopic("txns"),
			kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.TransactionTimeout(20*time.Second))
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		for round := range 2 {
			if err := cl.BeginTransaction(); err != nil {
				t.Fatal(err)
			}
			var rs []*kgo.Record
			for p := range int32(6) {
				rs = append(rs, &kgo.Record{Partition: p, Value: []byte(fmt.Sprintf("%s-%d-%d", txnID, round, p))})
			}
			if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
				t.Fatalf("%s round %d: %v", txnID, round, err)
			}
			commit := kgo.TransactionEndTry(round == 0 || i == 1) // tx-a and tx-c abort their second round
			if err := cl.EndTransaction(ctx, commit); err != nil {
				t.Fatalf("%s round %d end: %v", txnID, round, err)
			}
		}
		cancel()
	}
	// Committed: round 0 of each, round 1 of tx-b: 4 x 6 records.
	got := consumeAll(t, c.client(kgo.ConsumeTopics("txns"), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())), 24)
	n := 0
	for p, vals := range got {
		for _, v := range vals {
			n++
			if strings.HasSuffix(v, fmt.Sprintf("-1-%d", p)) && !strings.HasPrefix(v, "tx-b") {
				t.Errorf("partition %d: aborted record %q read with read_committed", p, v)
			}
		}
	}
	if n != 24 {
		t.Fatalf("read %d committed records, want 24", n)
	}
}
