package broker

// DescribeShareGroupOffsets (key 90), AlterShareGroupOffsets (91) and
// DeleteShareGroupOffsets (92), KIP-932's admin calls on a share group's
// start offsets (SPSO), as kafka-share-groups --describe, --reset-offsets
// and --delete-offsets use them. Altering and deleting need an empty group
// (NON_EMPTY_GROUP); altering a group that does not exist creates it
// empty. Authorization: DESCRIBE on the group and topics to describe, READ
// on the group and topics to alter, DELETE on the group and READ on the
// topics to delete (a topic not described answers TOPIC_AUTHORIZATION_FAILED
// per partition). A partition its group has not initialized, or whose
// leader has not served it since (the group coordinator initializes it
// with start offset -1, which the leader's first fetch sets), has
// StartOffset -1, as Kafka's.

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/coordinator/share"
	"github.com/strait/strait/security/acl"
)

func init() {
	register(kmsg.DescribeShareGroupOffsets, 0, 1, handleDescribeShareGroupOffsets)
	register(kmsg.AlterShareGroupOffsets, 0, 0, handleAlterShareGroupOffsets)
	register(kmsg.DeleteShareGroupOffsets, 0, 0, handleDeleteShareGroupOffsets)
}

func strp(s string) *string { return &s }

func handleDescribeShareGroupOffsets(c *conn, x *exchange) {
	req := x.req.Body.(*kmsg.DescribeShareGroupOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeShareGroupOffsetsResponse)
	sc := c.srv.shares()
	for _, rg := range req.Groups {
		g := kmsg.NewDescribeShareGroupOffsetsResponseGroup()
		g.GroupID = rg.GroupID
		switch {
		case !c.authorizeGroup(acl.OpDescribe, rg.GroupID):
			g.ErrorCode = kerr.GroupAuthorizationFailed.Code
		case sc.Owns(rg.GroupID) != 0:
			g.ErrorCode = sc.Owns(rg.GroupID)
		default:
			// A group with no share state (none at all, as Kafka 4.4) lists
			// the partitions asked for with start offset -1.
			type tps struct {
				name  string
				id    [16]byte
				parts []int32
			}
			var want []tps
			if rg.Topics == nil {
				// The share-partitions the group initialized, as Kafka's
				// describe of all of a group's offsets.
				for id, parts := range sc.InitializedPartitions(rg.GroupID) {
					if t, ok := c.srv.ctrl.TopicByID(id); ok {
						want = append(want, tps{t.Name, id, parts})
					}
				}
			} else {
				for _, rt := range rg.Topics {
					t, _ := c.srv.ctrl.Topic(rt.Topic)
					want = append(want, tps{rt.Topic, t.ID, rt.Partitions})
				}
			}
			for _, w := range want {
				rt := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopic()
				rt.Topic, rt.TopicID = w.name, w.id
				ti, known := c.srv.ctrl.Topic(w.name)
				described := c.authorizeTopic(acl.OpDescribe, w.name)
				for _, p := range w.parts {
					rp := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopicPartition()
					rp.Partition, rp.StartOffset, rp.LeaderEpoch, rp.Lag = p, -1, -1, -1
					if !described {
						rp.ErrorCode = kerr.TopicAuthorizationFailed.Code
						rt.Partitions = append(rt.Partitions, rp)
						continue
					}
					if !known || p < 0 || int(p) >= len(ti.Partitions) {
						rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
						rt.Partitions = append(rt.Partitions, rp)
						continue
					}
					// The persisted state (ReadShareGroupStateSummary's), then
					// this broker's copy when it leads the partition.
					k := share.StateKey{Group: rg.GroupID, Topic: w.id, Partition: p}
					st, found, code := c.srv.shareStateSummary(k)
					if code != 0 {
						rp.ErrorCode = code
						rt.Partitions = append(rt.Partitions, rp)
						continue
					}
					var hw int64 = -1
					if lt := c.srv.replicas.TopicByID(w.id); lt != nil {
						if part := lt.Partition(p); part != nil && part.IsLeader() {
							hw = part.Log().HighWatermark()
						}
					}
					if found && st.StartOffset >= 0 {
						rp.StartOffset, rp.LeaderEpoch = st.StartOffset, max(st.LeaderEpoch, 0)
						if hw >= 0 {
							rp.Lag = max(0, hw-st.StartOffset-int64(share.DeliveryComplete(&st)))
						}
					}
					if sp := sc.LookupPartition(rg.GroupID, w.id, p); sp != nil && hw >= 0 {
						sp.Lock()
						if sp.Initialized() {
							rp.StartOffset, rp.LeaderEpoch = sp.Start(), max(sp.LeaderEpoch(), 0)
							rp.Lag = sp.Lag(hw)
						}
						sp.Unlock()
					}
					rt.Partitions = append(rt.Partitions, rp)
				}
				g.Topics = append(g.Topics, rt)
			}
		}
		resp.Groups = append(resp.Groups, g)
	}
	x.respond(resp)
}

func handleAlterShareGroupOffsets(c *conn, x *exchange) {
	req := x.req.Body.(*kmsg.AlterShareGroupOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.AlterShareGroupOffsetsResponse)
	sc := c.srv.shares()
	switch {
	case !c.authorizeGroup(acl.OpRead, req.GroupID):
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
	case sc.Owns(req.GroupID) != 0:
		resp.ErrorCode = sc.Owns(req.GroupID)
	case !sc.GroupEmpty(req.GroupID):
		resp.ErrorCode, resp.ErrorMessage = kerr.NonEmptyGroup.Code, strp("The group is not empty.")
	}
	if resp.ErrorCode == 0 && !sc.EnsureGroup(req.GroupID) {
		resp.ErrorCode, resp.ErrorMessage = kerr.GroupMaxSizeReached.Code, strp("The maximum number of share groups has been reached.")
	}
	if resp.ErrorCode != 0 {
		x.respond(resp)
		return
	}
	for _, rt := range req.Topics {
		t := kmsg.NewAlterShareGroupOffsetsResponseTopic()
		t.Topic = rt.Topic
		ti, known := c.srv.ctrl.Topic(rt.Topic)
		t.TopicID = ti.ID
		allowed := c.authorizeTopic(acl.OpRead, rt.Topic)
		for _, rp := range rt.Partitions {
			p := kmsg.NewAlterShareGroupOffsetsResponseTopicPartition()
			p.Partition = rp.Partition
			switch {
			case !allowed:
				p.ErrorCode = kerr.TopicAuthorizationFailed.Code
			case !known || rp.Partition < 0 || int(rp.Partition) >= len(ti.Partitions):
				p.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case rp.StartOffset < -1:
				p.ErrorCode, p.ErrorMessage = kerr.InvalidRequest.Code, strp("The start offset is invalid.")
			default:
				sp := sc.Partition(req.GroupID, ti.ID, rp.Partition)
				sp.Lock()
				start := rp.StartOffset
				if start == -1 { // latest, as kafka-share-groups --to-latest sends it
					start = 0
					if lt := c.srv.replicas.TopicByID(ti.ID); lt != nil {
						if part := lt.Partition(rp.Partition); part != nil {
							start = part.Log().HighWatermark()
						}
					}
				}
				sp.Reset(start)
				sp.Unlock()
				// A new state epoch at the coordinator: the share-partition's
				// leader, fenced at its next write, reads it again.
				k := share.StateKey{Group: req.GroupID, Topic: ti.ID, Partition: rp.Partition}
				ss := c.srv.shareState()
				deadline := time.Now().Add(shareStateTimeout)
				st, _, code := ss.persistRead(k, -1, deadline)
				if code == 0 {
					code = ss.persistInitialize(k, st.StateEpoch+1, start, deadline)
				}
				if code == 0 {
					if err := sc.MarkInitialized(req.GroupID, ti.ID, []int32{rp.Partition}); err != nil {
						c.srv.logger.Warn("recording an initialized share-partition failed", "group", req.GroupID, "err", err)
					}
				}
				p.ErrorCode = code
			}
			t.Partitions = append(t.Partitions, p)
		}
		resp.Topics = append(resp.Topics, t)
	}
	x.respond(resp)
}

func handleDeleteShareGroupOffsets(c *conn, x *exchange) {
	req := x.req.Body.(*kmsg.DeleteShareGroupOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteShareGroupOffsetsResponse)
	sc := c.srv.shares()
	switch {
	case !c.authorizeGroup(acl.OpDelete, req.GroupID):
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
	case sc.Owns(req.GroupID) != 0:
		resp.ErrorCode = sc.Owns(req.GroupID)
	case !sc.IsShareGroup(req.GroupID):
		resp.ErrorCode, resp.ErrorMessage = kerr.GroupIDNotFound.Code, strp("Group "+req.GroupID+" not found.")
	case !sc.GroupEmpty(req.GroupID):
		resp.ErrorCode, resp.ErrorMessage = kerr.NonEmptyGroup.Code, strp("The group is not empty.")
	}
	if resp.ErrorCode != 0 {
		x.respond(resp)
		return
	}
	parts := sc.GroupPartitions(req.GroupID)
	for _, rt := range req.Topics {
		t := kmsg.NewDeleteShareGroupOffsetsResponseTopic()
		t.Topic = rt.Topic
		ti, known := c.srv.ctrl.Topic(rt.Topic)
		t.TopicID = ti.ID
		switch {
		case !c.authorizeTopic(acl.OpRead, rt.Topic):
			t.ErrorCode = kerr.TopicAuthorizationFailed.Code
		case !known:
			t.ErrorCode = kerr.UnknownTopicOrPartition.Code
		default:
			for _, p := range parts[ti.ID] {
				sc.DeletePartition(req.GroupID, ti.ID, p)
			}
			// The partitions the group initialized, their topic recorded
			// as deleting until their state is gone.
			ids := [][16]byte{ti.ID}
			del, code := sc.BeginDelete(req.GroupID, ids)
			if code == 0 {
				code = c.srv.shareState().deleteGroup(req.GroupID, del, time.Now().Add(shareStateTimeout))
			}
			if code == 0 {
				if err := sc.EndDelete(req.GroupID, ids); err != nil {
					c.srv.logger.Warn("recording deleted share-partitions failed", "group", req.GroupID, "err", err)
				}
			}
			t.ErrorCode = code
		}
		resp.Topics = append(resp.Topics, t)
	}
	x.respond(resp)
}
