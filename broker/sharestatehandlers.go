package broker

// InitializeShareGroupState (key 83), ReadShareGroupState (84),
// WriteShareGroupState (85), DeleteShareGroupState (86) and
// ReadShareGroupStateSummary (87): the share coordinator's RPCs, which
// share-partition leaders and the group coordinator send to the leader of
// a share-partition's __share_group_state partition (sharestate.go), as
// Kafka 4.4's ShareCoordinatorService. Brokers send them to each other:
// CLUSTER_ACTION on the cluster, else every partition answers
// CLUSTER_AUTHORIZATION_FAILED. A partition not coordinated here answers
// NOT_COORDINATOR; a read of a share-partition never written answers
// INVALID_REQUEST ("Data not found ..."), its summary StartOffset -1 with
// no error; an empty group id answers no topics (all as Kafka 4.4).

import (
	"time"

	"encoding/base64"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/coordinator/share"
	"github.com/strait/strait/security/acl"
)

func init() {
	register(kmsg.InitializeShareGroupState, 0, 0, handleInitializeShareGroupState)
	register(kmsg.ReadShareGroupState, 0, 0, handleReadShareGroupState)
	register(kmsg.WriteShareGroupState, 0, 1, handleWriteShareGroupState)
	register(kmsg.DeleteShareGroupState, 0, 0, handleDeleteShareGroupState)
	register(kmsg.ReadShareGroupStateSummary, 0, 1, handleReadShareGroupStateSummary)
}

// shareStateAsync runs fn off the connection's reader (it appends with
// acks=all) and answers with its response.
func shareStateAsync(c *conn, x *exchange, fn func() kmsg.Response) {
	if !c.srv.bg.Go(func() { x.respondAsync(fn()) }) {
		x.respond(fn())
	}
}

// shareStateCheck is the common first step: ClusterAction on the cluster
// (every partition answers CLUSTER_AUTHORIZATION_FAILED without it). ok
// is false for an empty group id, which Kafka 4.4 answers with no topics.
func shareStateCheck(c *conn, group string) (code int16, msg *string, ok bool) {
	if !c.authorizeCluster(acl.OpClusterAction) {
		return kerr.ClusterAuthorizationFailed.Code, nil, true
	}
	return 0, nil, group != ""
}

// shareStateNotFound is Kafka's answer to a read of a share-partition never
// initialized or written.
func shareStateNotFound(k share.StateKey) *string {
	return strp("Data not found for topic " + base64.RawURLEncoding.EncodeToString(k.Topic[:]) + ", partition " + strconv.Itoa(int(k.Partition)) + " for group " + k.Group + ", in the in-memory state of share coordinator")
}

func handleInitializeShareGroupState(c *conn, x *exchange) {
	req := x.req.Body.(*kmsg.InitializeShareGroupStateRequest)
	code, msg, ok := shareStateCheck(c, req.GroupID)
	shareStateAsync(c, x, func() kmsg.Response {
		resp := req.ResponseKind().(*kmsg.InitializeShareGroupStateResponse)
		if !ok {
			return resp
		}
		for _, rt := range req.Topics {
			t := kmsg.NewInitializeShareGroupStateResponseTopic()
			t.TopicID = rt.TopicID
			for _, rp := range rt.Partitions {
				p := kmsg.NewInitializeShareGroupStateResponseTopicPartition()
				p.Partition, p.ErrorCode, p.ErrorMessage = rp.Partition, code, msg
				if code == 0 {
					k := share.StateKey{Group: req.GroupID, Topic: rt.TopicID, Partition: rp.Partition}
					var m string
					p.ErrorCode, m = c.srv.shareState().initialize(k, rp.StateEpoch, rp.StartOffset, time.Now().Add(internalAppendTimeout))
					if m != "" {
						p.ErrorMessage = &m
					}
				}
				t.Partitions = append(t.Partitions, p)
			}
			resp.Topics = append(resp.Topics, t)
		}
		return resp
	})
}

func handleReadShareGroupState(c *conn, x *exchange) {
	req := x.req.Body.(*kmsg.ReadShareGroupStateRequest)
	code, msg, ok := shareStateCheck(c, req.GroupID)
	shareStateAsync(c, x, func() kmsg.Response {
		resp := req.ResponseKind().(*kmsg.ReadShareGroupStateResponse)
		if !ok {
			return resp
		}
		for _, rt := range req.Topics {
			t := kmsg.NewReadShareGroupStateResponseTopic()
			t.TopicID = rt.TopicID
			for _, rp := range rt.Partitions {
				p := kmsg.NewReadShareGroupStateResponseTopicPartition()
				p.Partition, p.ErrorCode, p.ErrorMessage, p.StartOffset = rp.Partition, code, msg, -1
				if code == 0 {
					k := share.StateKey{Group: req.GroupID, Topic: rt.TopicID, Partition: rp.Partition}
					st, found, ec := c.srv.shareState().read(k)
					p.ErrorCode = ec
					if ec == 0 && !found {
						p.ErrorCode, p.ErrorMessage, p.StartOffset = kerr.InvalidRequest.Code, shareStateNotFound(k), 0
					}
					if found {
						p.StateEpoch, p.StartOffset = st.StateEpoch, st.StartOffset
						for _, b := range st.Batches {
							sb := kmsg.NewReadShareGroupStateResponseTopicPartitionStateBatch()
							sb.FirstOffset, sb.LastOffset, sb.DeliveryState, sb.DeliveryCount = b.First, b.Last, b.State, b.Count
							p.StateBatches = append(p.StateBatches, sb)
						}
					}
				}
				t.Partitions = append(t.Partitions, p)
			}
			resp.Topics = append(resp.Topics, t)
		}
		return resp
	})
}

func handleWriteShareGroupState(c *conn, x *exchange) {
	req := x.req.Body.(*kmsg.WriteShareGroupStateRequest)
	code, msg, ok := shareStateCheck(c, req.GroupID)
	shareStateAsync(c, x, func() kmsg.Response {
		resp := req.ResponseKind().(*kmsg.WriteShareGroupStateResponse)
		if !ok {
			return resp
		}
		for _, rt := range req.Topics {
			t := kmsg.NewWriteShareGroupStateResponseTopic()
			t.TopicID = rt.TopicID
			for _, rp := range rt.Partitions {
				p := kmsg.NewWriteShareGroupStateResponseTopicPartition()
				p.Partition, p.ErrorCode, p.ErrorMessage = rp.Partition, code, msg
				if code == 0 {
					k := share.StateKey{Group: req.GroupID, Topic: rt.TopicID, Partition: rp.Partition}
					bs := make([]share.StateBatch, 0, len(rp.StateBatches))
					bad := false
					for _, b := range rp.StateBatches {
						if b.LastOffset < b.FirstOffset || (b.DeliveryState != share.DeliveryAvailable && b.DeliveryState != share.DeliveryAcknowledged && b.DeliveryState != share.DeliveryArchived) {
							bad = true
						}
						bs = append(bs, share.StateBatch{First: b.FirstOffset, Last: b.LastOffset, State: b.DeliveryState, Count: b.DeliveryCount})
					}
					if bad {
						p.ErrorCode, p.ErrorMessage = kerr.InvalidRequest.Code, strp("Invalid state batch.")
					} else {
						var m string
						p.ErrorCode, m = c.srv.shareState().write(k, rp.StateEpoch, rp.LeaderEpoch, rp.StartOffset, bs, time.Now().Add(internalAppendTimeout))
						if m != "" {
							p.ErrorMessage = &m
						}
					}
				}
				t.Partitions = append(t.Partitions, p)
			}
			resp.Topics = append(resp.Topics, t)
		}
		return resp
	})
}

func handleDeleteShareGroupState(c *conn, x *exchange) {
	req := x.req.Body.(*kmsg.DeleteShareGroupStateRequest)
	code, msg, ok := shareStateCheck(c, req.GroupID)
	shareStateAsync(c, x, func() kmsg.Response {
		resp := req.ResponseKind().(*kmsg.DeleteShareGroupStateResponse)
		if !ok {
			return resp
		}
		for _, rt := range req.Topics {
			t := kmsg.NewDeleteShareGroupStateResponseTopic()
			t.TopicID = rt.TopicID
			for _, rp := range rt.Partitions {
				p := kmsg.NewDeleteShareGroupStateResponseTopicPartition()
				p.Partition, p.ErrorCode, p.ErrorMessage = rp.Partition, code, msg
				if code == 0 {
					k := share.StateKey{Group: req.GroupID, Topic: rt.TopicID, Partition: rp.Partition}
					p.ErrorCode = c.srv.shareState().delete(k, time.Now().Add(internalAppendTimeout))
				}
				t.Partitions = append(t.Partitions, p)
			}
			resp.Topics = append(resp.Topics, t)
		}
		return resp
	})
}

func handleReadShareGroupStateSummary(c *conn, x *exchange) {
	req := x.req.Body.(*kmsg.ReadShareGroupStateSummaryRequest)
	code, msg, ok := shareStateCheck(c, req.GroupID)
	shareStateAsync(c, x, func() kmsg.Response {
		resp := req.ResponseKind().(*kmsg.ReadShareGroupStateSummaryResponse)
		if !ok {
			return resp
		}
		for _, rt := range req.Topics {
			t := kmsg.NewReadShareGroupStateSummaryResponseTopic()
			t.TopicID = rt.TopicID
			for _, rp := range rt.Partitions {
				p := kmsg.NewReadShareGroupStateSummaryResponseTopicPartition()
				p.Partition, p.ErrorCode, p.ErrorMessage = rp.Partition, code, msg
				p.StartOffset, p.LeaderEpoch, p.DeliveryCompleteCount = -1, -1, -1
				if code == 0 {
					k := share.StateKey{Group: req.GroupID, Topic: rt.TopicID, Partition: rp.Partition}
					st, found, ec := c.srv.shareState().read(k)
					p.ErrorCode = ec
					if ec == 0 && !found {
						p.LeaderEpoch = 0 // as Kafka 4.4 answers a share-partition it has no state for
					}
					if found {
						p.StateEpoch, p.LeaderEpoch, p.StartOffset = st.StateEpoch, st.LeaderEpoch, st.StartOffset
						p.DeliveryCompleteCount = share.DeliveryComplete(&st)
					}
				}
				t.Partitions = append(t.Partitions, p)
			}
			resp.Topics = append(resp.Topics, t)
		}
		return resp
	})
}

// shareStateSummary reads a share-partition's persisted start offset and
// leader epoch (ReadShareGroupStateSummary, here or at the coordinator),
// for DescribeShareGroupOffsets: found is false with no state.
func (s *Server) shareStateSummary(k share.StateKey) (share.SPState, bool, int16) {
	return s.shareState().persistRead(k, -1, time.Now().Add(shareStateTimeout))
}
