package broker_test

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/broker"
	"github.com/strait/strait/config"
	"github.com/strait/strait/internal/clock"
)

// Share groups (KIP-932) end to end: franz-go's share consumer, and raw
// ShareFetch / ShareAcknowledge requests for the error codes and the
// share-partition state machine as Kafka 4.4's KafkaApis and SharePartition
// answer them.

func startShareBroker(t *testing.T) *broker.Server {
	t.Helper()
	cfg, _, err := config.Parse(map[string]string{"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Clock = clock.NewOffset() // JumpClock moves the acquisition locks' time
	srv, err := broker.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	<-srv.Ready()
	return srv
}

func produceStrings(t *testing.T, cl *kgo.Client, topic string, n int) {
	t.Helper()
	var rs []*kgo.Record
	for i := range n {
		rs = append(rs, &kgo.Record{Topic: topic, Value: []byte(strconv.Itoa(i))})
	}
	if err := cl.ProduceSync(ctxFor(t), rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

func TestShareGroupThreeConsumersGetDisjointRecordsCoveringAll(t *testing.T) {
	srv := startShareBroker(t)
	admin := newClient(t, srv)
	createTopic(t, admin, "share-three", 1, nil)
	if code, msg := alterGroup(t, admin, "sg-three", false, set("share.auto.offset.reset", "earliest")); code != 0 {
		t.Fatalf("group config: %d %s", code, msg)
	}
	const total = 600
	produceStrings(t, admin, "share-three", total)

	var mu sync.Mutex
	seen := map[string]int{} // value -> consumer
	per := make([]int, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for i := range 3 {
		cl := newClient(t, srv, kgo.ConsumeTopics("share-three"), kgo.ShareGroup("sg-three"), kgo.ShareMaxRecords(20), kgo.FetchMaxWait(200*time.Millisecond))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				fs := cl.PollRecords(ctx, 50)
				mu.Lock()
				for _, r := range fs.Records() {
					if prev, ok := seen[string(r.Value)]; ok {
						t.Errorf("record %s delivered to consumers %d and %d", r.Value, prev, i)
					}
					seen[string(r.Value)] = i
					per[i]++
				}
				done := len(seen) == total
				mu.Unlock()
				if done {
					cancel()
				}
			}
		}()
	}
	wg.Wait()
	if len(seen) != total {
		t.Fatalf("%d of %d records consumed", len(seen), total)
	}
	t.Logf("records per consumer: %v", per)
}

// shareSession drives raw ShareFetch / ShareAcknowledge for one member.
type shareSession struct {
	t      *testing.T
	cl     *kgo.Client
	group  string
	member string
	topic  [16]byte
	epoch  int32
	wait   int32 // MaxWaitMillis; 0: 100
	joined bool
}

// join makes the member join its group subscribing to the topic (once), so
// that the group's coordinator initializes the share-partitions, which a
// fetch needs as in Kafka. A topic id that names no topic is not joined.
func (s *shareSession) join() {
	s.t.Helper()
	if s.joined {
		return
	}
	s.joined = true
	md, err := kmsg.NewPtrMetadataRequest().RequestWith(ctxFor(s.t), s.cl)
	if err != nil {
		s.t.Fatal(err)
	}
	for _, mt := range md.Topics {
		if mt.Topic == nil || mt.TopicID != s.topic {
			continue
		}
		req := kmsg.NewPtrShareGroupHeartbeatRequest()
		req.GroupID, req.MemberID, req.SubscribedTopicNames = s.group, s.member, []string{*mt.Topic}
		resp, err := req.RequestWith(ctxFor(s.t), s.cl)
		if err != nil || resp.ErrorCode != 0 {
			s.t.Fatalf("join %s: %v %+v", s.group, err, resp)
		}
	}
}

func (s *shareSession) fetch(acks ...kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch) *kmsg.ShareFetchResponse {
	s.t.Helper()
	if s.group != "" && s.member != "" {
		s.join()
	}
	req := kmsg.NewPtrShareFetchRequest()
	req.GroupID, req.MemberID, req.ShareSessionEpoch = &s.group, &s.member, s.epoch
	req.MaxWaitMillis, req.MaxBytes, req.MaxRecords, req.BatchSize = 100, 1<<20, 500, 500
	if s.wait > 0 {
		req.MaxWaitMillis = s.wait
	}
	rt := kmsg.NewShareFetchRequestTopic()
	rt.TopicID = s.topic
	rp := kmsg.NewShareFetchRequestTopicPartition()
	rp.AcknowledgementBatches = acks
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctxFor(s.t), s.cl)
	if err != nil {
		s.t.Fatal(err)
	}
	if resp.ErrorCode == 0 {
		s.epoch++
	}
	return resp
}

func (s *shareSession) ack(first, last int64, typ int8) *kmsg.ShareAcknowledgeResponse {
	s.t.Helper()
	req := kmsg.NewPtrShareAcknowledgeRequest()
	req.GroupID, req.MemberID, req.ShareSessionEpoch = &s.group, &s.member, s.epoch
	rt := kmsg.NewShareAcknowledgeRequestTopic()
	rt.TopicID = s.topic
	rp := kmsg.NewShareAcknowledgeRequestTopicPartition()
	b := kmsg.NewShareAcknowledgeRequestTopicPartitionAcknowledgementBatch()
	b.FirstOffset, b.LastOffset, b.AcknowledgeTypes = first, last, []int8{typ}
	rp.AcknowledgementBatches = append(rp.AcknowledgementBatches, b)
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctxFor(s.t), s.cl)
	if err != nil {
		s.t.Fatal(err)
	}
	if resp.ErrorCode == 0 && s.epoch > 0 {
		s.epoch++
	}
	return resp
}

func acquired(resp *kmsg.ShareFetchResponse) []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord {
	var out []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			out = append(out, p.AcquiredRecords...)
		}
	}
	return out
}

func ackBatch(first, last int64, typ int8) kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch {
	b := kmsg.NewShareFetchRequestTopicPartitionAcknowledgementBatch()
	b.FirstOffset, b.LastOffset, b.AcknowledgeTypes = first, last, []int8{typ}
	return b
}

func TestShareFetchStateMachineAndErrors(t *testing.T) {
	srv := startShareBroker(t)
	cl := newClient(t, srv)
	createTopic(t, cl, "share-raw", 1, nil)
	if code, msg := alterGroup(t, cl, "sg-raw", false, set("share.auto.offset.reset", "earliest"), set("share.delivery.count.limit", "2")); code != 0 {
		t.Fatalf("group config: %d %s", code, msg)
	}
	produceStrings(t, cl, "share-raw", 10)
	md, err := kmsg.NewPtrMetadataRequest().RequestWith(ctxFor(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	var topicID [16]byte
	for _, mt := range md.Topics {
		if mt.Topic != nil && *mt.Topic == "share-raw" {
			topicID = mt.TopicID
		}
	}
	// The group exists once a member joined (ShareFetch itself does not
	// check membership, as Kafka's).
	join := kmsg.NewPtrShareGroupHeartbeatRequest()
	join.GroupID, join.MemberID, join.SubscribedTopicNames = "sg-raw", "member-a", []string{"share-raw"}
	if jr, err := join.RequestWith(ctxFor(t), cl); err != nil || jr.ErrorCode != 0 {
		t.Fatalf("join: %v %+v", err, jr)
	}
	a := &shareSession{t: t, cl: cl, group: "sg-raw", member: "member-a", topic: topicID}
	b := &shareSession{t: t, cl: cl, group: "sg-raw", member: "member-b", topic: topicID}

	// No session yet at epoch 1; acknowledgements on an initial fetch.
	a.epoch = 1
	if r := a.fetch(); r.ErrorCode != kerr.ShareSessionNotFound.Code {
		t.Fatalf("fetch without a session: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	a.epoch = 0
	if r := a.fetch(ackBatch(0, 0, 1)); r.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("acks on the initial fetch: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if r := a.ack(0, 0, 1); r.ErrorCode != kerr.InvalidShareSessionEpoch.Code {
		t.Fatalf("ShareAcknowledge at epoch 0: %v", kerr.ErrorForCode(r.ErrorCode))
	}

	// a acquires all ten, once delivered.
	r := a.fetch()
	if got := acquired(r); r.ErrorCode != 0 || len(got) != 1 || got[0].FirstOffset != 0 || got[0].LastOffset != 9 || got[0].DeliveryCount != 1 {
		t.Fatalf("first fetch: code %d acquired %+v", r.ErrorCode, got)
	}
	if r.AcquisitionLockTimeoutMillis != 30000 {
		t.Fatalf("lock timeout %d", r.AcquisitionLockTimeoutMillis)
	}
	// b gets nothing while a holds them, and cannot acknowledge them.
	r = b.fetch()
	if got := acquired(r); len(got) != 0 {
		t.Fatalf("b acquired %+v while a holds the records", got)
	}
	if r := b.ack(0, 0, 1); r.Topics[0].Partitions[0].ErrorCode != kerr.InvalidRecordState.Code {
		t.Fatalf("b acknowledging a's record: %v", kerr.ErrorForCode(r.Topics[0].Partitions[0].ErrorCode))
	}
	// A wrong epoch.
	saved := a.epoch
	a.epoch = saved + 5
	if r := a.fetch(); r.ErrorCode != kerr.InvalidShareSessionEpoch.Code {
		t.Fatalf("wrong epoch: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	a.epoch = saved

	// a accepts 0-3, releases 4-5, rejects 6, and lets 7-9 expire.
	if r := a.ack(0, 3, 1); r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("accept: %v", kerr.ErrorForCode(r.Topics[0].Partitions[0].ErrorCode))
	}
	r = a.fetch(ackBatch(4, 5, 2), ackBatch(6, 6, 3))
	if ac := r.Topics[0].Partitions[0].AcknowledgeErrorCode; ac != 0 {
		t.Fatalf("release and reject: %v", kerr.ErrorForCode(ac))
	}
	// The released records come back at once with delivery count 2.
	if got := acquired(r); len(got) != 1 || got[0].FirstOffset != 4 || got[0].LastOffset != 5 || got[0].DeliveryCount != 2 {
		t.Fatalf("after the release a got %+v, want 4-5 delivered twice", got)
	}
	if _, err := srv.JumpClock(31 * time.Second); err != nil {
		t.Fatal(err)
	}
	// Locks expired: 7-9 are redelivered (count 2); 4-5 reached the limit
	// of 2 and are archived; 6 was rejected; 0-3 accepted.
	r = b.fetch()
	if got := acquired(r); len(got) != 1 || got[0].FirstOffset != 7 || got[0].LastOffset != 9 || got[0].DeliveryCount != 2 {
		t.Fatalf("after the locks expired b got %+v, want 7-9 delivered twice", got)
	}
	if r := b.ack(7, 9, 1); r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("b accept: %v", kerr.ErrorForCode(r.Topics[0].Partitions[0].ErrorCode))
	}
	if got := acquired(b.fetch()); len(got) != 0 {
		t.Fatalf("records %+v delivered after every one was accepted or archived", got)
	}

	// DescribeShareGroupOffsets: the start offset moved past all ten.
	dreq := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	dg := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
	dg.GroupID = "sg-raw"
	dreq.Groups = append(dreq.Groups, dg)
	dresp, err := dreq.RequestWith(ctxFor(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	if g := dresp.Groups[0]; g.ErrorCode != 0 || len(g.Topics) != 1 || g.Topics[0].Partitions[0].StartOffset != 10 || g.Topics[0].Partitions[0].Lag != 0 {
		t.Fatalf("describe offsets: %+v", g)
	}
}

func TestShareGroupHeartbeatDescribeListDelete(t *testing.T) {
	srv := startShareBroker(t)
	cl := newClient(t, srv)
	createTopic(t, cl, "share-hb", 3, nil)
	hb := func(group, member string, epoch int32, topics ...string) *kmsg.ShareGroupHeartbeatResponse {
		t.Helper()
		req := kmsg.NewPtrShareGroupHeartbeatRequest()
		req.GroupID, req.MemberID, req.MemberEpoch, req.SubscribedTopicNames = group, member, epoch, topics
		resp, err := req.RequestWith(ctxFor(t), cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	r := hb("sg-hb", "m1", 0, "share-hb")
	if r.ErrorCode != 0 || r.MemberEpoch != 1 || r.Assignment == nil || len(r.Assignment.TopicPartitions[0].Partitions) != 3 {
		t.Fatalf("join: %+v", r)
	}
	// A consumer group's id cannot be joined as a share group.
	creq := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	creq.Group, creq.MemberID, creq.RebalanceTimeoutMillis = "cg-hb", "cm1-0123456789abcdef", 60000
	creq.SubscribedTopicNames, creq.Topics = []string{"share-hb"}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	if cr, err := creq.RequestWith(ctxFor(t), cl); err != nil || cr.ErrorCode != 0 {
		t.Fatalf("consumer group join: %v %v", err, cr)
	}
	if r := hb("cg-hb", "m1", 0, "share-hb"); r.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("share join of a consumer group: %v", kerr.ErrorForCode(r.ErrorCode))
	}

	dreq := kmsg.NewPtrShareGroupDescribeRequest()
	dreq.GroupIDs = []string{"sg-hb", "missing"}
	dresp, err := dreq.RequestWith(ctxFor(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	if g := dresp.Groups[0]; g.ErrorCode != 0 || g.GroupState != "Stable" || g.Assignor != "simple" || len(g.Members) != 1 || g.Members[0].MemberEpoch != 1 {
		t.Fatalf("describe: %+v", g)
	}
	if g := dresp.Groups[1]; g.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("describe of a missing group: %v", kerr.ErrorForCode(g.ErrorCode))
	}

	// DescribeGroups (classic groups) answers a share group as Kafka does.
	dgreq := kmsg.NewPtrDescribeGroupsRequest()
	dgreq.Groups = []string{"sg-hb"}
	dgresp, err := dgreq.RequestWith(ctxFor(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	if g := dgresp.Groups[0]; g.ErrorCode != kerr.GroupIDNotFound.Code || g.State != "Dead" || g.ErrorMessage == nil || *g.ErrorMessage != "Group sg-hb is not a classic group." {
		t.Fatalf("DescribeGroups of a share group: %+v", g)
	}

	lreq := kmsg.NewPtrListGroupsRequest()
	lreq.TypesFilter = []string{"share"}
	lresp, err := lreq.RequestWith(ctxFor(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(lresp.Groups) != 1 || lresp.Groups[0].Group != "sg-hb" || lresp.Groups[0].GroupType != "share" || lresp.Groups[0].GroupState != "Stable" {
		t.Fatalf("list of share groups: %+v", lresp.Groups)
	}

	del := func() int16 {
		req := kmsg.NewPtrDeleteGroupsRequest()
		req.Groups = []string{"sg-hb"}
		resp, err := req.RequestWith(ctxFor(t), cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Groups[0].ErrorCode
	}
	if code := del(); code != kerr.NonEmptyGroup.Code {
		t.Fatalf("delete with a member: %v", kerr.ErrorForCode(code))
	}
	if r := hb("sg-hb", "m1", -1); r.ErrorCode != 0 || r.MemberEpoch != -1 {
		t.Fatalf("leave: %+v", r)
	}
	if code := del(); code != 0 {
		t.Fatalf("delete of the empty group: %v", kerr.ErrorForCode(code))
	}
	if r := hb("sg-hb", "m1", 1); r.ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("heartbeat after the delete: %v", kerr.ErrorForCode(r.ErrorCode))
	}
}

func topicIDOf(t *testing.T, cl *kgo.Client, topic string) [16]byte {
	t.Helper()
	md, err := kmsg.NewPtrMetadataRequest().RequestWith(ctxFor(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	for _, mt := range md.Topics {
		if mt.Topic != nil && *mt.Topic == topic {
			return mt.TopicID
		}
	}
	t.Fatalf("no topic %s", topic)
	return [16]byte{}
}

func TestShareAutoOffsetReset(t *testing.T) {
	srv := startShareBroker(t)
	cl := newClient(t, srv)
	createTopic(t, cl, "share-reset", 1, nil)
	produceStrings(t, cl, "share-reset", 5)
	if code, msg := alterGroup(t, cl, "sg-dur", false, set("share.auto.offset.reset", "by_duration:PT1H")); code != 0 {
		t.Fatalf("group config: %d %s", code, msg)
	}
	id := topicIDOf(t, cl, "share-reset")
	latest := &shareSession{t: t, cl: cl, group: "sg-latest", member: "m", topic: id}
	dur := &shareSession{t: t, cl: cl, group: "sg-dur", member: "m", topic: id}
	if got := acquired(latest.fetch()); len(got) != 0 {
		t.Fatalf("latest (the default) delivered %+v from before the group", got)
	}
	if got := acquired(dur.fetch()); len(got) != 1 || got[0].FirstOffset != 0 || got[0].LastOffset != 4 {
		t.Fatalf("by_duration:PT1H delivered %+v, want 0-4", got)
	}
	produceStrings(t, cl, "share-reset", 1)
	if got := acquired(latest.fetch()); len(got) != 1 || got[0].FirstOffset != 5 || got[0].LastOffset != 5 {
		t.Fatalf("latest then delivered %+v, want 5", got)
	}
}

func TestShareReadCommittedArchivesAbortedRecords(t *testing.T) {
	srv := startShareBroker(t)
	cl := newClient(t, srv)
	createTopic(t, cl, "share-txn", 1, nil)
	for _, g := range []string{"sg-rc", "sg-ru"} {
		ops := []groupOp{set("share.auto.offset.reset", "earliest")}
		if g == "sg-rc" {
			ops = append(ops, set("share.isolation.level", "read_committed"))
		}
		if code, msg := alterGroup(t, cl, g, false, ops...); code != 0 {
			t.Fatalf("group config: %d %s", code, msg)
		}
	}
	txn := newClient(t, srv, kgo.TransactionalID("share-txn-producer"), kgo.DefaultProduceTopic("share-txn"))
	for i, commit := range []bool{false, true} {
		if err := txn.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for j := range 3 {
			if err := txn.ProduceSync(ctxFor(t), kgo.StringRecord(strconv.Itoa(i*3+j))).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		if err := txn.EndTransaction(ctxFor(t), kgo.TransactionEndTry(commit)); err != nil {
			t.Fatal(err)
		}
	}
	// The log: 0-2 aborted, 3 the abort marker, 4-6 committed, 7 the commit marker.
	id := topicIDOf(t, cl, "share-txn")
	rc := &shareSession{t: t, cl: cl, group: "sg-rc", member: "m", topic: id}
	if got := acquired(rc.fetch()); len(got) != 1 || got[0].FirstOffset != 4 || got[0].LastOffset != 6 {
		t.Fatalf("read_committed acquired %+v, want only the committed 4-6", got)
	}
	ru := &shareSession{t: t, cl: cl, group: "sg-ru", member: "m", topic: id}
	want := []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord{{FirstOffset: 0, LastOffset: 2, DeliveryCount: 1}, {FirstOffset: 4, LastOffset: 6, DeliveryCount: 1}}
	got := acquired(ru.fetch())
	if len(got) != 2 || got[0].FirstOffset != want[0].FirstOffset || got[0].LastOffset != want[0].LastOffset ||
		got[1].FirstOffset != want[1].FirstOffset || got[1].LastOffset != want[1].LastOffset {
		t.Fatalf("read_uncommitted acquired %+v, want 0-2 and 4-6 (markers never)", got)
	}
}

func TestShareFetchParkedWakesOnRelease(t *testing.T) {
	srv := startShareBroker(t)
	cl := newClient(t, srv)
	createTopic(t, cl, "share-wake", 1, nil)
	if code, msg := alterGroup(t, cl, "sg-wake", false, set("share.auto.offset.reset", "earliest")); code != 0 {
		t.Fatalf("group config: %d %s", code, msg)
	}
	produceStrings(t, cl, "share-wake", 3)
	id := topicIDOf(t, cl, "share-wake")
	a := &shareSession{t: t, cl: cl, group: "sg-wake", member: "a", topic: id}
	b := &shareSession{t: t, cl: cl, group: "sg-wake", member: "b", topic: id}
	if got := acquired(a.fetch()); len(got) != 1 || got[0].LastOffset != 2 {
		t.Fatalf("a acquired %+v", got)
	}
	if got := acquired(b.fetch()); len(got) != 0 {
		t.Fatalf("b acquired %+v while a holds everything", got)
	}
	// b parks for up to a minute; a's release must end that wait well
	// before (the request's context allows 20 s, the lock 30 s).
	b.wait = 60000
	done := make(chan []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord, 1)
	go func() {
		req := kmsg.NewPtrShareFetchRequest()
		req.GroupID, req.MemberID, req.ShareSessionEpoch = &b.group, &b.member, b.epoch
		req.MaxWaitMillis, req.MaxBytes, req.MaxRecords = b.wait, 1<<20, 500
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Errorf("parked fetch: %v", err)
			done <- nil
			return
		}
		done <- acquired(resp)
	}()
	if r := a.ack(0, 2, 2); r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("release: %v", kerr.ErrorForCode(r.Topics[0].Partitions[0].ErrorCode))
	}
	got := <-done
	if len(got) != 1 || got[0].FirstOffset != 0 || got[0].LastOffset != 2 || got[0].DeliveryCount != 2 {
		t.Fatalf("parked b got %+v, want 0-2 delivered twice", got)
	}
}
