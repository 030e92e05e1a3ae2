package broker

// OffsetForLeaderEpoch (key 23); versions: see the registration below (v0-1
// were removed in Kafka 4).
//
// For a partition this broker leads, the end offset of the requested leader
// epoch: the start offset of the first later epoch, with the largest epoch at
// or below the requested one, from the leader epoch cache
// (leader-epoch-checkpoint, storage.Log.EndOffsetForEpoch, Kafka's
// LeaderEpochFileCache.endOffsetFor). The current epoch ends at the log end
// offset; an epoch above it is unknown (-1, -1). Consumers ask after a
// leader change, to detect a truncated log; followers ask before fetching
// from a new leader, to find where their log diverges (KIP-101).
//
// current_leader_epoch (-1: not checked) older than the partition's is
// FENCED_LEADER_EPOCH, newer UNKNOWN_LEADER_EPOCH; a partition led elsewhere
// NOT_LEADER_OR_FOLLOWER; a missing one UNKNOWN_TOPIC_OR_PARTITION. Replica
// id -2 (debugging) may ask any replica.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/security/acl"
)

func init() { register(kmsg.OffsetForLeaderEpoch, 2, 4, handleOffsetForLeaderEpoch) }

// debuggingReplicaID may read from followers (ListOffsetsRequest.DEBUGGING_REPLICA_ID).
const debuggingReplicaID = -2

func handleOffsetForLeaderEpoch(c *conn, x *exchange) {
	req := x.req.Body.(*kmsg.OffsetForLeaderEpochRequest)
	s := c.srv
	resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	for _, rt := range req.Topics {
		st := kmsg.NewOffsetForLeaderEpochResponseTopic()
		st.Topic = rt.Topic
		lt := s.replicas.TopicByName(rt.Topic)
		// KIP-320: brokers with CLUSTER_ACTION, consumers with DESCRIBE.
		allowed := c.authorizeCluster(acl.OpClusterAction) || c.authorizeTopic(acl.OpDescribe, rt.Topic) // authorize.go
		for _, rp := range rt.Partitions {
			sp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			sp.Partition = rp.Partition
			p := lt.Partition(rp.Partition)
			switch {
			case !allowed:
				sp.ErrorCode, sp.LeaderEpoch, sp.EndOffset = kerr.TopicAuthorizationFailed.Code, -1, -1
			case p == nil:
				sp.ErrorCode = s.missingPartitionCode(rt.Topic, rp.Partition)
			case req.ReplicaID == debuggingReplicaID && rp.CurrentLeaderEpoch >= 0 && rp.CurrentLeaderEpoch != p.LeaderEpoch():
				sp.ErrorCode = kerr.FencedLeaderEpoch.Code
				if rp.CurrentLeaderEpoch > p.LeaderEpoch() {
					sp.ErrorCode = kerr.UnknownLeaderEpoch.Code
				}
			case req.ReplicaID != debuggingReplicaID && checkLeader(p, rp.CurrentLeaderEpoch) != 0:
				sp.ErrorCode = checkLeader(p, rp.CurrentLeaderEpoch)
			default:
				sp.LeaderEpoch, sp.EndOffset = p.Log().EndOffsetForEpoch(rp.LeaderEpoch)
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	x.respond(resp)
}
