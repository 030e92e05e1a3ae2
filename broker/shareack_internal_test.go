package broker

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/coordinator/share"
)

// An acknowledgement whose state write fails is answered with the write's
// error and rolled back, as Kafka's SharePartition.acknowledge does on a
// persister failure: the records stay acquired by the member, which can
// acknowledge them again once the coordinator is back, and the stored
// start offset moves only then.
func TestShareAcknowledgeRolledBackOnFailedWrite(t *testing.T) {
	c := startReplicatedCluster(t, 1, nil)
	srv := c.srvs[0]
	const topic, group, member = "ack-rollback", "sg-ack-rollback", "m-ack-rollback"
	c.createTopic(topic, 1, 1, nil)
	cl := c.client()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	hb := kmsg.NewPtrShareGroupHeartbeatRequest()
	hb.GroupID, hb.MemberID, hb.SubscribedTopicNames = group, member, []string{topic}
	hr, err := hb.RequestWith(ctx, cl)
	if err != nil || hr.ErrorCode != 0 {
		t.Fatalf("join: %v %+v", err, hr)
	}
	ti, _ := srv.ctrl.Topic(topic)
	epoch := int32(0)
	fetch := func() *kmsg.ShareFetchResponse {
		t.Helper()
		req := kmsg.NewPtrShareFetchRequest()
		g, m := group, member
		req.GroupID, req.MemberID, req.ShareSessionEpoch = &g, &m, epoch
		req.MaxWaitMillis, req.MaxBytes, req.MaxRecords, req.BatchSize = 100, 1<<20, 500, 500
		rt := kmsg.NewShareFetchRequestTopic()
		rt.TopicID = ti.ID
		rt.Partitions = append(rt.Partitions, kmsg.NewShareFetchRequestTopicPartition())
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil || resp.ErrorCode != 0 {
			t.Fatalf("share fetch: %v %+v", err, resp)
		}
		epoch++
		return resp
	}
	ack := func() int16 {
		t.Helper()
		req := kmsg.NewPtrShareAcknowledgeRequest()
		g, m := group, member
		req.GroupID, req.MemberID, req.ShareSessionEpoch = &g, &m, epoch
		rt := kmsg.NewShareAcknowledgeRequestTopic()
		rt.TopicID = ti.ID
		rp := kmsg.NewShareAcknowledgeRequestTopicPartition()
		b := kmsg.NewShareAcknowledgeRequestTopicPartitionAcknowledgementBatch()
		b.FirstOffset, b.LastOffset, b.AcknowledgeTypes = 0, 2, []int8{share.AckAccept}
		rp.AcknowledgementBatches = append(rp.AcknowledgementBatches, b)
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil || resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("share acknowledge: %v %+v", err, resp)
		}
		epoch++
		return resp.Topics[0].Partitions[0].ErrorCode
	}

	fetch() // opens the session; the share-partition starts at the end (0)
	var rs []*kgo.Record
	for range 3 {
		rs = append(rs, &kgo.Record{Topic: topic, Value: []byte("v")})
	}
	if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	got := fetch()
	if len(got.Topics) != 1 || len(got.Topics[0].Partitions) != 1 || len(got.Topics[0].Partitions[0].AcquiredRecords) != 1 ||
		got.Topics[0].Partitions[0].AcquiredRecords[0].LastOffset != 2 {
		t.Fatalf("fetch acquired %+v, want 0-2", got.Topics)
	}

	fault := func(share.StateKey) int16 { return kerr.UnknownServerError.Code }
	srv.shareState().writeFault.Store(&fault)
	if code := ack(); code != kerr.UnknownServerError.Code {
		t.Fatalf("acknowledgement with a failing write answered %v, want the write's UNKNOWN_SERVER_ERROR", kerr.ErrorForCode(code))
	}
	sp := srv.shares().LookupPartition(group, ti.ID, 0)
	sp.Lock()
	for off := int64(0); off <= 2; off++ {
		if st, dc := sp.State(off); st != share.Acquired || dc != 1 {
			sp.Unlock()
			t.Fatalf("offset %d after the failed write: %v (deliveries %d), want still Acquired (1)", off, st, dc)
		}
	}
	start := sp.Start()
	sp.Unlock()
	if start != 0 {
		t.Fatalf("start offset %d after the failed write, want 0", start)
	}

	srv.shareState().writeFault.Store(nil)
	if code := ack(); code != 0 {
		t.Fatalf("acknowledging again once writes succeed answered %v", kerr.ErrorForCode(code))
	}
	st, found, code := srv.shareState().persistRead(share.StateKey{Group: group, Topic: ti.ID, Partition: 0}, -1, time.Now().Add(10*time.Second))
	if code != 0 || !found || st.StartOffset != 3 {
		t.Fatalf("stored state after the acknowledgement: start %d found %v code %d, want start 3", st.StartOffset, found, code)
	}
}
