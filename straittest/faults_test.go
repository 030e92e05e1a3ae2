package straittest_test

import (
	"context"
	"errors"
	"hash/crc32"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/strait/strait/straittest"
)

// produceRequest is a Produce of one record to topic/0 with acks=1.
func produceRequest(topic string) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Acks = 1
	req.TimeoutMillis = 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = 0
	rp.Records = oneRecordBatch()
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// oneRecordBatch is a v2 record batch of one record, not idempotent.
func oneRecordBatch() []byte {
	rec := kmsg.Record{Length: 0, Key: nil, Value: []byte("raw")}
	rec.Length = int32(len(rec.AppendTo(nil)) - 1)
	recs := rec.AppendTo(nil)
	batch := kmsg.RecordBatch{
		PartitionLeaderEpoch: -1,
		Magic:                2,
		LastOffsetDelta:      0,
		ProducerID:           -1,
		ProducerEpoch:        -1,
		FirstSequence:        -1,
		NumRecords:           1,
		Records:              recs,
	}
	raw := batch.AppendTo(nil)
	batch.Length = int32(len(raw) - 12)
	raw = batch.AppendTo(nil)
	batch.CRC = int32(crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli)))
	return batch.AppendTo(nil)
}

// An error code chosen for Produce reaches the client exactly Times
// times: the raw requests see NOT_LEADER twice, then success; a producer
// retries through it; a non-retriable code fails the producer's record.
func TestInterceptErrorCode(t *testing.T) {
	c := straittest.Start(t, straittest.WithTopic("t", 1, 1), straittest.WithTopic("other", 1, 1))
	// NOT_LEADER makes kgo refresh metadata, at most every MetadataMinAge
	// (5 s by default).
	// The raw requests name their topic: Produce up to v12 (v13 goes by
	// topic id).
	byName := kversion.V4_4_0()
	byName.SetMaxKeyVersion(int16(kmsg.Produce), 12)
	cl := c.Client(kgo.MetadataMinAge(10*time.Millisecond), kgo.MaxVersions(byName))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	i := c.Intercept(straittest.Rule{Key: kmsg.Produce, Topic: "t", Partitions: []int32{0}, Times: 2, Err: kerr.NotLeaderForPartition})
	// Another topic's produce is not intercepted.
	if r, err := produceRequest("other").RequestWith(ctx, cl); err != nil || r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("produce to other: %v %+v", err, r)
	}
	var codes []int16
	for range 3 {
		resp, err := produceRequest("t").RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Topics) != 1 || resp.Topics[0].Topic != "t" || len(resp.Topics[0].Partitions) != 1 || resp.Topics[0].Partitions[0].Partition != 0 {
			t.Fatalf("response does not mirror the request: %+v", resp)
		}
		codes = append(codes, resp.Topics[0].Partitions[0].ErrorCode)
	}
	want := []int16{kerr.NotLeaderForPartition.Code, kerr.NotLeaderForPartition.Code, 0}
	if !slices.Equal(codes, want) || i.Count() != 2 {
		t.Fatalf("error codes %v, intercepted %d; want %v, 2", codes, i.Count(), want)
	}

	// A producer retries NOT_LEADER: two answered so, the third written.
	i = c.Intercept(straittest.Rule{Key: kmsg.Produce, Topic: "t", Times: 2, Err: kerr.NotLeaderForPartition})
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "t", Value: []byte("kgo")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if i.Count() != 2 {
		t.Fatalf("intercepted %d produces, want 2", i.Count())
	}
	// A non-retriable code fails the record with that error.
	c.Intercept(straittest.Rule{Key: kmsg.Produce, Topic: "t", Times: 1, Err: kerr.TopicAuthorizationFailed})
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "t", Value: []byte("denied")}).FirstErr(); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("produce: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}

	// What was written: the raw record once, the producer's once.
	got := consume(t, c.Client(kgo.ConsumeTopics("t"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())), 2)
	if len(got) != 2 || string(got[0].Value) != "raw" || string(got[1].Value) != "kgo" {
		t.Fatalf("records: %v", values(got))
	}
}

// A delay holds the request for at least the delay, then it is handled;
// a group rule matches that group's requests only.
func TestInterceptDelayAndGroup(t *testing.T) {
	c := straittest.Start(t, straittest.WithTopic("t", 1, 1))
	cl := c.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	const delay = 300 * time.Millisecond
	i := c.Intercept(straittest.Rule{Key: kmsg.ListOffsets, Topic: "t", Times: 1, Delay: delay})
	req := kmsg.NewPtrListOffsetsRequest()
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = "t"
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Timestamp = -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	start := time.Now()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("list offsets: %v %+v", err, resp)
	}
	// A lower bound only: a timer does not fire early.
	if took := time.Since(start); i.Count() != 1 || took < delay {
		t.Fatalf("intercepted %d, took %v; want 1, at least %v", i.Count(), took, delay)
	}

	g := c.Intercept(straittest.Rule{Key: kmsg.FindCoordinator, Group: "g", Times: 1, Err: kerr.CoordinatorNotAvailable})
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKey, fc.CoordinatorKeys = "h", []string{"h"}
	if r, err := fc.RequestWith(ctx, cl); err != nil || r.Coordinators[0].ErrorCode != 0 || g.Count() != 0 {
		t.Fatalf("group h: %v %+v, intercepted %d", err, r, g.Count())
	}
	fc.CoordinatorKey, fc.CoordinatorKeys = "g", []string{"g"}
	r, err := fc.RequestWith(ctx, cl)
	if err != nil || len(r.Coordinators) != 1 || r.Coordinators[0].Key != "g" ||
		r.Coordinators[0].ErrorCode != kerr.CoordinatorNotAvailable.Code || g.Count() != 1 {
		t.Fatalf("group g: %v %+v, intercepted %d", err, r, g.Count())
	}
}

// A dropped connection makes the client reconnect, and the producer's
// record is written once.
func TestInterceptDrop(t *testing.T) {
	c := straittest.Start(t, straittest.WithTopic("t", 1, 1))
	var connects, disconnects atomic.Int32
	cl := c.Client(kgo.WithHooks(connHooks{&connects, &disconnects}))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "t", Value: []byte("0")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	before := connects.Load()

	i := c.Intercept(straittest.Rule{Key: kmsg.Produce, Times: 1, Drop: true})
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "t", Value: []byte("1")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if i.Count() != 1 || disconnects.Load() < 1 || connects.Load() <= before {
		t.Fatalf("intercepted %d, disconnects %d, connects %d -> %d", i.Count(), disconnects.Load(), before, connects.Load())
	}
	got := consume(t, c.Client(kgo.ConsumeTopics("t"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())), 2)
	if v := values(got); !slices.Equal(v, []string{"0", "1"}) {
		t.Fatalf("records %v", v)
	}
}

type connHooks struct{ connects, disconnects *atomic.Int32 }

func (h connHooks) OnBrokerConnect(_ kgo.BrokerMetadata, _ time.Duration, _ net.Conn, err error) {
	if err == nil {
		h.connects.Add(1)
	}
}
func (h connHooks) OnBrokerDisconnect(kgo.BrokerMetadata, net.Conn) { h.disconnects.Add(1) }

func values(rs []*kgo.Record) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = string(r.Value)
	}
	return out
}

// ErrorResponse mirrors the request's topics, partitions, groups and keys
// with the code, and uses the top-level code when the request names none.
func TestErrorResponse(t *testing.T) {
	f := kmsg.NewPtrFetchRequest()
	f.SetVersion(13)
	ft := kmsg.NewFetchRequestTopic()
	ft.TopicID = [16]byte{1}
	for _, p := range []int32{0, 2} {
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.Partition = p
		ft.Partitions = append(ft.Partitions, fp)
	}
	f.Topics = append(f.Topics, ft)
	fr := straittest.ErrorResponse(f, kerr.NotLeaderForPartition.Code).(*kmsg.FetchResponse)
	if fr.Version != 13 || fr.ErrorCode != 0 || len(fr.Topics) != 1 || fr.Topics[0].TopicID != ft.TopicID ||
		len(fr.Topics[0].Partitions) != 2 || fr.Topics[0].Partitions[1].Partition != 2 ||
		fr.Topics[0].Partitions[1].ErrorCode != kerr.NotLeaderForPartition.Code || fr.Topics[0].Partitions[1].LogStartOffset != -1 {
		t.Fatalf("fetch: %+v", fr)
	}

	oc := kmsg.NewPtrOffsetFetchRequest()
	oc.SetVersion(7)
	oc.Group = "g"
	ot := kmsg.NewOffsetFetchRequestTopic()
	ot.Topic, ot.Partitions = "t", []int32{3}
	oc.Topics = append(oc.Topics, ot)
	or := straittest.ErrorResponse(oc, kerr.NotCoordinator.Code).(*kmsg.OffsetFetchResponse)
	if len(or.Topics) != 1 || or.Topics[0].Topic != "t" || or.Topics[0].Partitions[0].Partition != 3 ||
		or.Topics[0].Partitions[0].ErrorCode != kerr.NotCoordinator.Code {
		t.Fatalf("offset fetch: %+v", or)
	}

	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.Groups = []string{"a", "b"}
	dr := straittest.ErrorResponse(dg, kerr.CoordinatorLoadInProgress.Code).(*kmsg.DescribeGroupsResponse)
	if len(dr.Groups) != 2 || dr.Groups[1].Group != "b" || dr.Groups[1].ErrorCode != kerr.CoordinatorLoadInProgress.Code {
		t.Fatalf("describe groups: %+v", dr)
	}

	jg := kmsg.NewPtrJoinGroupRequest()
	jg.Group = "g"
	jr := straittest.ErrorResponse(jg, kerr.RebalanceInProgress.Code).(*kmsg.JoinGroupResponse)
	if jr.ErrorCode != kerr.RebalanceInProgress.Code {
		t.Fatalf("join group: %+v", jr)
	}
}

// A killed leader keeps its leadership until its registration lease
// expires, then it moves; after Restart every record acknowledged with
// acks=all is read back once.
// Both with embedded etcd members (the killed broker's member stops too)
// and with the shared etcd.
func TestKillLeader(t *testing.T) {
	t.Run("embedded", func(t *testing.T) { testKillLeader(t, straittest.WithEmbeddedEtcd()) })
	t.Run("shared", func(t *testing.T) { testKillLeader(t) })
}

func testKillLeader(t *testing.T, opts ...straittest.Option) {
	c := straittest.StartCluster(t, 3, append(opts, straittest.WithTopic("k", 1, 3),
		// A lease long enough that the killed broker is still the leader
		// when Kill returns (which waits up to 1 s for etcd's peers).
		straittest.WithConfig("broker.session.timeout.ms", "6000"))...)
	c.WaitISR("k", 0, 3, 30*time.Second)
	cl := c.Client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(0))

	var (
		mu    sync.Mutex
		acked []string
	)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		for n := 0; n < 100_000; n++ {
			select {
			case <-stop:
				return
			default:
			}
			v := strconv.Itoa(n)
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "k", Value: []byte(v)}).FirstErr(); err != nil {
				return
			}
			mu.Lock()
			acked = append(acked, v)
			mu.Unlock()
		}
	})
	countAcked := func() int { mu.Lock(); defer mu.Unlock(); return len(acked) }
	waitAcked := func(n int) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for countAcked() < n {
			if time.Now().After(deadline) {
				t.Fatalf("only %d records acknowledged, want %d", countAcked(), n)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	waitAcked(50)

	leader := c.Leader("k", 0)
	killed := time.Now()
	c.Kill(leader)
	// The lease has not expired: the cluster still names the killed broker.
	if st, err := c.Partition("k", 0); err != nil || st.Leader != leader {
		t.Fatalf("just after Kill (%v): %+v %v; want leader %d still", time.Since(killed), st, err, leader)
	}
	next := c.WaitLeader("k", 0, 30*time.Second)
	for next == leader || next < 0 {
		next = c.WaitLeader("k", 0, 30*time.Second, otherThan(leader)...)
	}
	t.Logf("leadership moved from %d to %d %v after Kill", leader, next, time.Since(killed))
	at := countAcked()
	waitAcked(at + 50) // the producer goes on with the new leader

	c.Restart(leader)
	c.WaitISR("k", 0, 3, 30*time.Second)
	waitAcked(countAcked() + 20)
	close(stop)
	wg.Wait()

	mu.Lock()
	want := slices.Clone(acked)
	mu.Unlock()
	got := values(consume(t, c.Client(kgo.ConsumeTopics("k"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())), len(want)))
	seen := map[string]int{}
	for _, v := range got {
		seen[v]++
	}
	for v, n := range seen {
		if n > 1 {
			t.Errorf("record %s read %d times", v, n)
		}
	}
	for _, v := range want {
		if seen[v] == 0 {
			t.Errorf("acknowledged record %s lost", v)
		}
	}
}

// otherThan is every broker id of a 3-broker cluster but id.
func otherThan(id int32) []int32 {
	var out []int32
	for b := int32(1); b <= 3; b++ {
		if b != id {
			out = append(out, b)
		}
	}
	return out
}

// lagConfigs make a follower that stops fetching leave the ISR after a
// second.
var lagConfigs = straittest.WithConfigs(map[string]string{
	"replica.lag.time.max.ms":   "1000",
	"replica.fetch.wait.max.ms": "100",
})

// follower is a replica of topic/0 other than its leader.
func follower(c *straittest.Cluster, topic string) int32 {
	leader := c.Leader(topic, 0)
	return otherThan(leader)[0]
}

// produceAcks1 writes n records to topic with acks=1 (which do not wait
// for a stopped follower).
func produceAcks1(t *testing.T, c *straittest.Cluster, topic string, n int) {
	t.Helper()
	produce(t, c.Client(kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite()), topic, 0, n)
}

// A paused follower leaves the ISR (it stops fetching, and its lease
// lapses) and rejoins once resumed.
func TestPauseResume(t *testing.T) {
	c := straittest.StartCluster(t, 3, straittest.WithTopic("p", 1, 3), lagConfigs)
	c.WaitISR("p", 0, 3, 30*time.Second)
	leader := c.Leader("p", 0)
	f := follower(c, "p")
	start := time.Now()
	c.Pause(f)
	produceAcks1(t, c, "p", 10)
	st := c.WaitISR("p", 0, 2, 30*time.Second)
	if slices.Contains(st.ISR, f) {
		t.Fatalf("paused broker %d still in the ISR: %+v", f, st)
	}
	t.Logf("paused broker %d left the ISR after %v", f, time.Since(start))
	// Its connections are open but unanswered.
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := askBroker(t, c.Broker(f).Addr()).Request(ctx, kmsg.NewPtrMetadataRequest()); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("paused broker %d: %v, want no answer", f, err)
	}
	// Its lease lapses: the other brokers no longer list it.
	waitListed(t, c, leader, f, false)
	t.Logf("paused broker %d unlisted after %v", f, time.Since(start))
	c.Resume(f)
	start = time.Now()
	waitListed(t, c, leader, f, true) // registered again
	t.Logf("resumed broker %d listed after %v", f, time.Since(start))
	st = c.WaitISR("p", 0, 3, 30*time.Second)
	if !slices.Contains(st.ISR, f) {
		t.Fatalf("resumed broker %d not back in the ISR: %+v", f, st)
	}
	t.Logf("resumed broker %d back in the ISR after %v", f, time.Since(start))
}

// askBroker is a client's connection to the broker at addr (its seed
// broker), whichever brokers the cluster lists.
func askBroker(t *testing.T, addr string) *kgo.Broker {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl.SeedBrokers()[0]
}

// A follower cut off from the other brokers leaves the ISR while clients
// still reach it, and rejoins after Heal.
func TestIsolateHeal(t *testing.T) {
	c := straittest.StartCluster(t, 3, straittest.WithTopic("i", 1, 3), lagConfigs)
	c.WaitISR("i", 0, 3, 30*time.Second)
	f := follower(c, "i")
	c.Isolate(f)
	produceAcks1(t, c, "i", 10)
	st := c.WaitISR("i", 0, 2, 30*time.Second)
	if slices.Contains(st.ISR, f) {
		t.Fatalf("isolated broker %d still in the ISR: %+v", f, st)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := askBroker(t, c.Broker(f).Addr()).Request(ctx, kmsg.NewPtrMetadataRequest()); err != nil {
		t.Fatalf("a client cannot reach the isolated broker %d: %v", f, err)
	}
	c.Heal(f)
	st = c.WaitISR("i", 0, 3, 30*time.Second)
	if !slices.Contains(st.ISR, f) {
		t.Fatalf("healed broker %d not back in the ISR: %+v", f, st)
	}
}

// waitListed waits until broker from's Metadata lists broker id (or no
// longer does), for at most 30 s.
func waitListed(t *testing.T, c *straittest.Cluster, from, id int32, want bool) {
	t.Helper()
	b := askBroker(t, c.Broker(from).Addr())
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		resp, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, b)
		cancel()
		if err == nil && slices.ContainsFunc(resp.Brokers, func(b kmsg.MetadataResponseBroker) bool { return b.NodeID == id }) == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("broker %d listed by broker %d: want %v after 30 s (last error %v)", id, from, want, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A leader cut off from etcd loses its lease: its leadership moves while
// clients still reach it; after Heal it registers again and rejoins the
// ISR.
func TestIsolateEtcd(t *testing.T) {
	c := straittest.StartCluster(t, 3, straittest.WithTopic("e", 1, 3), lagConfigs)
	c.WaitISR("e", 0, 3, 30*time.Second)
	leader := c.Leader("e", 0)
	other := otherThan(leader)[0]
	c.IsolateEtcd(leader)
	next := c.WaitLeader("e", 0, 30*time.Second, otherThan(leader)...)
	waitListed(t, c, other, leader, false)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := askBroker(t, c.Broker(leader).Addr()).Request(ctx, kmsg.NewPtrMetadataRequest()); err != nil {
		t.Fatalf("a client cannot reach broker %d cut off from etcd: %v", leader, err)
	}
	produceAcks1(t, c, "e", 10) // to the new leader
	c.Heal(leader)
	waitListed(t, c, next, leader, true)
	st := c.WaitISR("e", 0, 3, 30*time.Second)
	if !slices.Contains(st.ISR, leader) {
		t.Fatalf("healed broker %d not back in the ISR: %+v", leader, st)
	}
}

// A paused broker can be stopped, or killed, and restarted.
func TestStopOrKillPaused(t *testing.T) {
	c := straittest.Start(t, straittest.WithTopic("t", 1, 1))
	produce(t, c.Client(), "t", 0, 1)
	c.Pause(1)
	c.Stop(1)
	c.Restart(1)
	c.Pause(1)
	c.Kill(1)
	c.Restart(1)
	produce(t, c.Client(), "t", 1, 1)
	if got := consume(t, c.Client(kgo.ConsumeTopics("t"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())), 2); len(got) != 2 {
		t.Fatalf("read %d records, want 2", len(got))
	}
}
