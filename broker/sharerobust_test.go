package broker_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/broker"
	"github.com/strait/strait/config"
)

// startShareBrokerWith starts a broker with extra settings (real clock).
func startShareBrokerWith(t *testing.T, extra map[string]string) *broker.Server {
	t.Helper()
	m := map[string]string{"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": t.TempDir()}
	for k, v := range extra {
		m[k] = v
	}
	cfg, _, err := config.Parse(m)
	if err != nil {
		t.Fatal(err)
	}
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

// readShareState is ReadShareGroupState for one share-partition: its error
// code and start offset.
func readShareState(t *testing.T, cl *kgo.Client, group string, topic [16]byte, part int32) (int16, int64) {
	t.Helper()
	req := kmsg.NewPtrReadShareGroupStateRequest()
	req.GroupID = group
	rt := kmsg.NewReadShareGroupStateRequestTopic()
	rt.TopicID = topic
	rp := kmsg.NewReadShareGroupStateRequestTopicPartition()
	rp.Partition, rp.LeaderEpoch = part, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctxFor(t), cl)
	if err != nil || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("read share state: %v %+v", err, resp)
	}
	p := resp.Topics[0].Partitions[0]
	return p.ErrorCode, p.StartOffset
}

// waitShareState polls the stored state until ok says it is as wanted (10
// s at most) and returns the last reading.
func waitShareState(t *testing.T, cl *kgo.Client, group string, topic [16]byte, part int32, ok func(code int16, start int64) bool) (int16, int64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, start := readShareState(t, cl, group, topic, part)
		if ok(code, start) || time.Now().After(deadline) {
			return code, start
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// shareTombstones counts the tombstones of __share_group_state whose key
// names group, reading until it has found want of them (or for 15 s).
func shareTombstones(t *testing.T, srv *broker.Server, group string, want int) int {
	t.Helper()
	cl := newClient(t, srv, kgo.ConsumeTopics("__share_group_state"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	n := 0
	for ctx.Err() == nil && n < want {
		fs := cl.PollFetches(ctx)
		fs.EachRecord(func(r *kgo.Record) {
			if r.Value == nil && bytes.Contains(r.Key, []byte(group)) {
				n++
			}
		})
	}
	return n
}

// A lock running out is written when it runs out, as Kafka's acquisition
// lock timer writes it: records past the delivery limit are archived and
// the stored start offset moves with no further request.
func TestShareLockExpiryIsWritten(t *testing.T) {
	srv := startShareBrokerWith(t, map[string]string{"group.share.record.lock.duration.ms": "1000"})
	cl := newClient(t, srv)
	createTopic(t, cl, "share-expiry", 1, nil)
	if code, msg := alterGroup(t, cl, "sg-expiry", false, set("share.auto.offset.reset", "earliest"), set("share.delivery.count.limit", "2")); code != 0 {
		t.Fatalf("group config: %d %s", code, msg)
	}
	produceStrings(t, cl, "share-expiry", 3)
	id := topicIDOf(t, cl, "share-expiry")
	a := &shareSession{t: t, cl: cl, group: "sg-expiry", member: "a", topic: id}
	if got := acquired(a.fetch()); len(got) != 1 || got[0].LastOffset != 2 || got[0].DeliveryCount != 1 {
		t.Fatalf("first delivery %+v", got)
	}
	if r := a.ack(0, 2, 2); r.Topics[0].Partitions[0].ErrorCode != 0 { // released
		t.Fatalf("release: %v", kerr.ErrorForCode(r.Topics[0].Partitions[0].ErrorCode))
	}
	if got := acquired(a.fetch()); len(got) != 1 || got[0].LastOffset != 2 || got[0].DeliveryCount != 2 {
		t.Fatalf("second delivery %+v", got)
	}
	// The last delivery's lock runs out after a second: archived, start 3.
	code, start := waitShareState(t, cl, "sg-expiry", id, 0, func(code int16, start int64) bool { return code == 0 && start == 3 })
	if code != 0 || start != 3 {
		t.Fatalf("stored state after the lock ran out: code %v start %d, want start 3", kerr.ErrorForCode(code), start)
	}
}

// Deleting a share group deletes its share-partitions' stored state
// (tombstones in __share_group_state): the group made again starts from
// share.auto.offset.reset, not from where the old one stopped.
func TestShareGroupDeleteDeletesState(t *testing.T) {
	srv := startShareBrokerWith(t, nil)
	cl := newClient(t, srv)
	createTopic(t, cl, "share-del", 2, nil)
	if code, msg := alterGroup(t, cl, "sg-del", false, set("share.auto.offset.reset", "earliest")); code != 0 {
		t.Fatalf("group config: %d %s", code, msg)
	}
	produceStrings(t, cl, "share-del", 5) // all to one partition or spread: both are read
	id := topicIDOf(t, cl, "share-del")
	hb := func(epoch int32) *kmsg.ShareGroupHeartbeatResponse {
		req := kmsg.NewPtrShareGroupHeartbeatRequest()
		req.GroupID, req.MemberID, req.MemberEpoch = "sg-del", "member-del-0001", epoch
		if epoch == 0 {
			req.SubscribedTopicNames = []string{"share-del"}
		}
		resp, err := req.RequestWith(ctxFor(t), cl)
		if err != nil || resp.ErrorCode != 0 {
			t.Fatalf("heartbeat %d: %v %+v", epoch, err, resp)
		}
		return resp
	}
	consume := func() (total int, counts map[int16]int) {
		counts = map[int16]int{}
		a := &shareSession{t: t, cl: cl, group: "sg-del", member: "member-del-0001", topic: id}
		for p := int32(0); p < 2; p++ {
			req := kmsg.NewPtrShareFetchRequest()
			req.GroupID, req.MemberID, req.ShareSessionEpoch = &a.group, &a.member, 0
			req.MaxWaitMillis, req.MaxBytes, req.MaxRecords = 100, 1<<20, 500
			rt := kmsg.NewShareFetchRequestTopic()
			rt.TopicID = id
			rp := kmsg.NewShareFetchRequestTopicPartition()
			rp.Partition = p
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			resp, err := req.RequestWith(ctxFor(t), cl)
			if err != nil || resp.ErrorCode != 0 {
				t.Fatalf("fetch: %v %+v", err, resp)
			}
			for _, ar := range acquired(resp) {
				n := int(ar.LastOffset - ar.FirstOffset + 1)
				total += n
				counts[ar.DeliveryCount] += n
				// Accepted, and the session closed.
				fin := kmsg.NewPtrShareAcknowledgeRequest()
				fin.GroupID, fin.MemberID, fin.ShareSessionEpoch = &a.group, &a.member, -1
				ft := kmsg.NewShareAcknowledgeRequestTopic()
				ft.TopicID = id
				fp := kmsg.NewShareAcknowledgeRequestTopicPartition()
				fp.Partition = p
				b := kmsg.NewShareAcknowledgeRequestTopicPartitionAcknowledgementBatch()
				b.FirstOffset, b.LastOffset, b.AcknowledgeTypes = ar.FirstOffset, ar.LastOffset, []int8{1}
				fp.AcknowledgementBatches = append(fp.AcknowledgementBatches, b)
				ft.Partitions = append(ft.Partitions, fp)
				fin.Topics = append(fin.Topics, ft)
				if r, err := fin.RequestWith(ctxFor(t), cl); err != nil || r.ErrorCode != 0 || r.Topics[0].Partitions[0].ErrorCode != 0 {
					t.Fatalf("accept: %v %+v", err, r)
				}
			}
		}
		return total, counts
	}
	hb(0)
	if n, counts := consume(); n != 5 || counts[1] != 5 {
		t.Fatalf("first group: %d records (counts %v), want 5 first deliveries", n, counts)
	}
	stored := 0
	for p := int32(0); p < 2; p++ {
		if code, start := readShareState(t, cl, "sg-del", id, p); code == 0 && start > 0 {
			stored++
		}
	}
	if stored == 0 {
		t.Fatal("no stored share state after the records were accepted")
	}
	hb(-1)
	req := kmsg.NewPtrDeleteGroupsRequest()
	req.Groups = []string{"sg-del"}
	resp, err := req.RequestWith(ctxFor(t), cl)
	if err != nil || len(resp.Groups) != 1 || resp.Groups[0].ErrorCode != 0 {
		t.Fatalf("delete: %v %+v", err, resp)
	}
	for p := int32(0); p < 2; p++ {
		if code, _ := readShareState(t, cl, "sg-del", id, p); code != kerr.InvalidRequest.Code {
			t.Fatalf("partition %d: stored state after the delete (code %v), want none", p, kerr.ErrorForCode(code))
		}
	}
	if n := shareTombstones(t, srv, "sg-del", stored); n < stored {
		t.Fatalf("%d tombstones of the group in __share_group_state, want at least %d", n, stored)
	}
	hb(0)
	if n, counts := consume(); n != 5 || counts[1] != 5 {
		t.Fatalf("group made again: %d records (counts %v), want all 5 as first deliveries from earliest", n, counts)
	}
}

// Deleting a topic deletes the stored share state of its partitions.
func TestShareTopicDeleteDeletesState(t *testing.T) {
	srv := startShareBrokerWith(t, nil)
	cl := newClient(t, srv)
	createTopic(t, cl, "share-tdel", 1, nil)
	if code, msg := alterGroup(t, cl, "sg-tdel", false, set("share.auto.offset.reset", "earliest")); code != 0 {
		t.Fatalf("group config: %d %s", code, msg)
	}
	produceStrings(t, cl, "share-tdel", 3)
	id := topicIDOf(t, cl, "share-tdel")
	a := &shareSession{t: t, cl: cl, group: "sg-tdel", member: "a", topic: id}
	if got := acquired(a.fetch()); len(got) != 1 {
		t.Fatalf("acquired %+v", got)
	}
	if r := a.ack(0, 2, 1); r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("accept: %v", kerr.ErrorForCode(r.Topics[0].Partitions[0].ErrorCode))
	}
	if code, start := readShareState(t, cl, "sg-tdel", id, 0); code != 0 || start != 3 {
		t.Fatalf("stored state: %v start %d", kerr.ErrorForCode(code), start)
	}
	dt := kmsg.NewPtrDeleteTopicsRequest()
	dt.TopicNames = []string{"share-tdel"}
	dtt := kmsg.NewDeleteTopicsRequestTopic()
	dtt.Topic = kmsg.StringPtr("share-tdel")
	dt.Topics = append(dt.Topics, dtt)
	if r, err := dt.RequestWith(ctxFor(t), cl); err != nil || len(r.Topics) != 1 || r.Topics[0].ErrorCode != 0 {
		t.Fatalf("delete topic: %v %+v", err, r)
	}
	code, _ := waitShareState(t, cl, "sg-tdel", id, 0, func(code int16, _ int64) bool { return code == kerr.InvalidRequest.Code })
	if code != kerr.InvalidRequest.Code {
		t.Fatalf("stored state of the deleted topic: %v, want none", kerr.ErrorForCode(code))
	}
	if n := shareTombstones(t, srv, "sg-tdel", 1); n == 0 {
		t.Fatal("no tombstone of the deleted topic's share state")
	}
}

// A client initializing and writing share state for ever more
// share-partitions is refused past strait.share.coordinator.max.state.entries
// with INVALID_REQUEST and its message, and the coordinator holds no more;
// deleting states makes room again.
func TestShareStateEntriesBounded(t *testing.T) {
	const max = 50
	srv := startShareBrokerWith(t, map[string]string{"strait.share.coordinator.max.state.entries": "50"})
	cl := newClient(t, srv)
	var topic [16]byte
	topic[0] = 7
	accepted, refused := 0, 0
	for round := range 4 {
		init := kmsg.NewPtrInitializeShareGroupStateRequest()
		init.GroupID = "hostile"
		rt := kmsg.NewInitializeShareGroupStateRequestTopic()
		rt.TopicID = topic
		for p := range int32(25) {
			rp := kmsg.NewInitializeShareGroupStateRequestTopicPartition()
			rp.Partition, rp.StartOffset = int32(round)*25+p, 0
			rt.Partitions = append(rt.Partitions, rp)
		}
		init.Topics = append(init.Topics, rt)
		resp, err := init.RequestWith(ctxFor(t), cl)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range resp.Topics[0].Partitions {
			switch {
			case p.ErrorCode == 0:
				accepted++
			case p.ErrorCode == kerr.InvalidRequest.Code && p.ErrorMessage != nil:
				refused++
			default:
				t.Fatalf("partition %d: %v", p.Partition, kerr.ErrorForCode(p.ErrorCode))
			}
		}
	}
	if accepted != max || refused != 100-max {
		t.Fatalf("%d states accepted, %d refused; want %d and %d", accepted, refused, max, 100-max)
	}
	// Writes adding batches to an accepted state are refused as well.
	w := kmsg.NewPtrWriteShareGroupStateRequest()
	w.GroupID = "hostile"
	wt := kmsg.NewWriteShareGroupStateRequestTopic()
	wt.TopicID = topic
	wp := kmsg.NewWriteShareGroupStateRequestTopicPartition()
	wp.Partition, wp.StartOffset, wp.LeaderEpoch = 0, 0, 0
	for o := int64(0); o < 1000; o += 2 {
		b := kmsg.NewWriteShareGroupStateRequestTopicPartitionStateBatch()
		b.FirstOffset, b.LastOffset, b.DeliveryState, b.DeliveryCount = o, o, 2, 1
		wp.StateBatches = append(wp.StateBatches, b)
	}
	wt.Partitions = append(wt.Partitions, wp)
	w.Topics = append(w.Topics, wt)
	if resp, err := w.RequestWith(ctxFor(t), cl); err != nil || resp.Topics[0].Partitions[0].ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("write of 500 batches past the bound: %v %+v", err, resp)
	}
	// Deleting ten states makes room for ten others.
	del := kmsg.NewPtrDeleteShareGroupStateRequest()
	del.GroupID = "hostile"
	dt := kmsg.NewDeleteShareGroupStateRequestTopic()
	dt.TopicID = topic
	for p := range int32(10) {
		dp := kmsg.NewDeleteShareGroupStateRequestTopicPartition()
		dp.Partition = p
		dt.Partitions = append(dt.Partitions, dp)
	}
	del.Topics = append(del.Topics, dt)
	if resp, err := del.RequestWith(ctxFor(t), cl); err != nil || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("delete: %v %+v", err, resp)
	}
	init := kmsg.NewPtrInitializeShareGroupStateRequest()
	init.GroupID = "hostile"
	rt := kmsg.NewInitializeShareGroupStateRequestTopic()
	rt.TopicID = topic
	for p := range int32(10) {
		rp := kmsg.NewInitializeShareGroupStateRequestTopicPartition()
		rp.Partition = 1000 + p
		rt.Partitions = append(rt.Partitions, rp)
	}
	init.Topics = append(init.Topics, rt)
	resp, err := init.RequestWith(ctxFor(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range resp.Topics[0].Partitions {
		if p.ErrorCode != 0 {
			t.Fatalf("partition %d after the delete: %v", p.Partition, kerr.ErrorForCode(p.ErrorCode))
		}
	}
}
