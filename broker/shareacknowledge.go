package broker

// ShareAcknowledge (key 79, KIP-932): a member acknowledges records it
// acquired (accept, release, reject, and from v2 renew) outside a
// ShareFetch, as KafkaApis.handleShareAcknowledgeRequest: the share session
// must exist at the request's epoch (0 is INVALID_SHARE_SESSION_EPOCH,
// an unknown session SHARE_SESSION_NOT_FOUND); -1 applies the
// acknowledgements and closes the session, releasing the member's other
// acquired records here. Each partition answers its own error, e.g.
// INVALID_RECORD_STATE for a record the member does not hold.

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/coordinator/share"
)

func init() { register(kmsg.ShareAcknowledge, 1, 2, handleShareAcknowledge) }

func handleShareAcknowledge(c *conn, x *exchange) {
	req := x.req.Body.(*kmsg.ShareAcknowledgeRequest)
	resp := req.ResponseKind().(*kmsg.ShareAcknowledgeResponse)
	if !c.shareCheck(x, resp, req.GroupID, req.MemberID) {
		return
	}
	sc := c.srv.shares()
	group, member := *req.GroupID, *req.MemberID
	resp.AcquisitionLockTimeoutMillis = int32(sc.Limits(group).LockDuration / time.Millisecond)
	if _, code := sc.SessionUpdate(group, member, req.ShareSessionEpoch, nil, nil, true); code != 0 {
		shareFail(x, resp, kerr.ErrorForCode(code).(*kerr.Error), "")
		return
	}
	// The partitions' state writes run together, each bounded by
	// shareStateTimeout.
	now := c.srv.clock.Now()
	deadline := time.Now().Add(shareStateTimeout)
	type ackTarget struct {
		t       *shareTarget
		batches []share.AckBatch
		code    int16
		msg     string
	}
	var todo []*ackTarget
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			t := &shareTarget{tp: share.TopicPartition{Topic: rt.TopicID, Partition: rp.Partition}}
			c.resolveShareTarget(t)
			batches := make([]share.AckBatch, 0, len(rp.AcknowledgementBatches))
			for _, b := range rp.AcknowledgementBatches {
				batches = append(batches, share.AckBatch{First: b.FirstOffset, Last: b.LastOffset, Types: b.AcknowledgeTypes})
			}
			todo = append(todo, &ackTarget{t: t, batches: batches})
		}
	}
	shareParallel(len(todo), func(i int) {
		a := todo[i]
		a.code, a.msg = c.srv.shareAcknowledge(group, member, a.t, a.batches, now, deadline)
	})
	for _, rt := range req.Topics {
		st := kmsg.NewShareAcknowledgeResponseTopic()
		st.TopicID = rt.TopicID
		for range rt.Partitions {
			a := todo[0]
			todo = todo[1:]
			sp := kmsg.NewShareAcknowledgeResponseTopicPartition()
			sp.Partition = a.t.tp.Partition
			sp.ErrorCode = a.code
			if a.msg != "" {
				sp.ErrorMessage = &a.msg
			}
			sp.CurrentLeader.LeaderID, sp.CurrentLeader.LeaderEpoch = c.srv.currentLeader(a.t.part, a.t.topic, a.t.tp.Partition)
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	if req.ShareSessionEpoch == share.FinalEpoch {
		sc.CloseSession(group, member)
	}
	x.respond(resp)
}
