package broker

// ListOffsets (key 2); versions: see the registration below (KIP-896
// removed v0).
//
// Special timestamps: -2 earliest (log start offset), -1 latest (the high
// watermark; read_committed: the last stable offset, which also bounds the
// other lookups as in Kafka), -3 the record with the
// largest timestamp (v7+), -4 earliest local (v8+, the log start offset while
// there is no tiered storage), -5 latest tiered (v9+, KIP-1005) and -6
// earliest pending upload (v11+, KIP-1023): offset, timestamp and leader
// epoch -1, as Kafka answers for a topic without remote storage. A
// timestamp >= 0 finds the first offset whose record timestamp is at least
// it, through the time index; none gives offset -1. current_leader_epoch
// (v4+) is checked like Fetch's. v10's timeout_ms (KIP-1075) bounds remote
// storage lookups, which Strait has none of: it is read and ignored.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/replication"
	"github.com/strait/strait/security/acl"
)

func init() { register(kmsg.ListOffsets, 1, 11, handleListOffsets) }

func handleListOffsets(c *conn, x *exchange) {
	req := x.req.Body.(*kmsg.ListOffsetsRequest)
	s := c.srv
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	dups := duplicateListOffsetsPartitions(req)
	for _, rt := range req.Topics {
		st := kmsg.NewListOffsetsResponseTopic()
		st.Topic = rt.Topic
		lt := s.replicas.TopicByName(rt.Topic)
		describeOK := c.authorizeTopic(acl.OpDescribe, rt.Topic) // authorize.go
		for _, rp := range rt.Partitions {
			sp := kmsg.NewListOffsetsResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.Timestamp, sp.Offset, sp.LeaderEpoch = -1, -1, -1
			p := lt.Partition(rp.Partition)
			if !describeOK {
				sp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			} else if _, dup := dups[topicPartition{rt.Topic, rp.Partition}]; dup {
				sp.ErrorCode = kerr.InvalidRequest.Code
			} else if p == nil {
				sp.ErrorCode = s.missingPartitionCode(rt.Topic, rp.Partition)
			} else if code := checkLeader(p, rp.CurrentLeaderEpoch); code != 0 {
				sp.ErrorCode = code
			} else {
				sp.ErrorCode = listOffset(p, rp.Timestamp, req.IsolationLevel, &sp)
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	x.respond(resp)
}

type topicPartition struct {
	topic     string
	partition int32
}

// duplicateListOffsetsPartitions is ListOffsetsRequest.duplicatePartitions:
// Kafka answers every occurrence of a partition named more than once with
// INVALID_REQUEST, and reads none of them.
func duplicateListOffsetsPartitions(req *kmsg.ListOffsetsRequest) map[topicPartition]struct{} {
	var seen, dups map[topicPartition]struct{}
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			tp := topicPartition{rt.Topic, rp.Partition}
			if seen == nil {
				seen = make(map[topicPartition]struct{})
			}
			if _, ok := seen[tp]; ok {
				if dups == nil {
					dups = make(map[topicPartition]struct{})
				}
				dups[tp] = struct{}{}
				continue
			}
			seen[tp] = struct{}{}
		}
	}
	return dups
}

func listOffset(p *replication.Partition, ts int64, isolation int8, sp *kmsg.ListOffsetsResponseTopicPartition) int16 {
	log := p.Log()
	epoch := p.LeaderEpoch()
	fetchable := log.HighWatermark()
	if isolation == 1 { // read_committed
		fetchable = log.LastStableOffset()
	}
	switch ts {
	case -2, -4: // earliest, earliest local
		sp.Offset, sp.LeaderEpoch = log.LogStartOffset(), epoch
	case -1: // latest
		sp.Offset, sp.LeaderEpoch = fetchable, epoch
	case -3: // max timestamp
		off, t := log.MaxTimestamp()
		if off >= 0 && off < fetchable {
			sp.Offset, sp.Timestamp, sp.LeaderEpoch = off, t, epoch
		}
	case -5, -6: // latest tiered, earliest pending upload: nothing is tiered
	default:
		if ts < 0 {
			return kerr.InvalidRequest.Code
		}
		off, t, found, err := log.OffsetForTimestamp(ts)
		if err != nil {
			code, _ := errorCode(err)
			return code
		}
		if found && off < fetchable {
			sp.Offset, sp.Timestamp, sp.LeaderEpoch = off, t, epoch
		}
	}
	return 0
}
