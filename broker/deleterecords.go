package broker

// DeleteRecords (key 21); versions: see the registration below.
//
// Moves each partition's log start offset up to the requested offset (-1:
// the high watermark); whole segments below it are removed at the next
// retention check, and fetches below it get OFFSET_OUT_OF_RANGE. An offset
// above the high watermark is OFFSET_OUT_OF_RANGE; one at or below the
// current log start offset changes nothing. The response's low watermark is
// the log start offset afterwards. A partition named more than once is
// answered once, with the last offset asked for, as Kafka's handler keys its
// work by partition.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/security/acl"
)

func init() { register(kmsg.DeleteRecords, 0, 2, handleDeleteRecords) }

func handleDeleteRecords(c *conn, x *exchange) {
	req := x.req.Body.(*kmsg.DeleteRecordsRequest)
	s := c.srv
	resp := req.ResponseKind().(*kmsg.DeleteRecordsResponse)
	// Collapse the duplicates: topics by name, partitions by index, the
	// last offset winning.
	type part struct {
		topic int // index in topics
		p     int32
	}
	topics := make([]kmsg.DeleteRecordsRequestTopic, 0, min(len(req.Topics), 1024))
	tindex := make(map[string]int, min(len(req.Topics), 1024))
	pindex := make(map[part]int)
	for _, rt := range req.Topics {
		ti, ok := tindex[rt.Topic]
		if !ok {
			ti = len(topics)
			tindex[rt.Topic] = ti
			topics = append(topics, kmsg.DeleteRecordsRequestTopic{Topic: rt.Topic})
		}
		for _, rp := range rt.Partitions {
			k := part{ti, rp.Partition}
			if pi, ok := pindex[k]; ok {
				topics[ti].Partitions[pi].Offset = rp.Offset
				continue
			}
			pindex[k] = len(topics[ti].Partitions)
			topics[ti].Partitions = append(topics[ti].Partitions, rp)
		}
	}
	for _, rt := range topics {
		st := kmsg.NewDeleteRecordsResponseTopic()
		st.Topic = rt.Topic
		lt := s.replicas.TopicByName(rt.Topic)
		deleteOK := c.authorizeTopic(acl.OpDelete, rt.Topic) // authorize.go
		for _, rp := range rt.Partitions {
			sp := kmsg.NewDeleteRecordsResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.LowWatermark = -1
			p := lt.Partition(rp.Partition)
			switch {
			case !deleteOK:
				sp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			case p == nil:
				sp.ErrorCode = s.missingPartitionCode(rt.Topic, rp.Partition)
			case !p.IsLeader():
				sp.ErrorCode = s.missingPartitionCode(rt.Topic, rp.Partition)
			default:
				offset := rp.Offset
				if offset == -1 {
					offset = p.Log().HighWatermark()
				}
				low, err := p.Log().DeleteRecordsBefore(offset)
				if err != nil {
					sp.ErrorCode, _ = errorCode(err)
				} else {
					sp.LowWatermark = low
					s.logger.Info("deleted records", "topic", rt.Topic, "partition", rp.Partition, "log_start_offset", low)
				}
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	x.respond(resp)
}
