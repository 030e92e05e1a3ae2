package broker

// DescribeProducers (key 61); versions: see the registration below. The
// producers a partition this broker leads tracks, with their epoch, last
// sequence and open transaction's start, as Kafka's KafkaApis answers. A
// malformed topic name is INVALID_TOPIC_EXCEPTION and a missing topic
// UNKNOWN_TOPIC_OR_PARTITION (with the message), a partition led elsewhere
// NOT_LEADER_OR_FOLLOWER.

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/controller"
	"github.com/strait/strait/security/acl"
)

func init() { register(kmsg.DescribeProducers, 0, 0, handleDescribeProducers) }

func handleDescribeProducers(c *conn, x *exchange) {
	req := x.req.Body.(*kmsg.DescribeProducersRequest)
	resp := req.ResponseKind().(*kmsg.DescribeProducersResponse)
	s := c.srv
	// Each partition is answered once (dedup.go): every copy would list
	// the partition's producers again.
	topics := make([]kmsg.DescribeProducersRequestTopic, 0, min(len(req.Topics), 1024))
	index := make(map[string]int, min(len(req.Topics), 1024))
	for _, rt := range req.Topics {
		if i, ok := index[rt.Topic]; ok {
			topics[i].Partitions = append(topics[i].Partitions, rt.Partitions...)
			continue
		}
		index[rt.Topic] = len(topics)
		rt.Partitions = slices.Clip(rt.Partitions)
		topics = append(topics, rt)
	}
	for _, rt := range topics {
		rt.Partitions = uniqueInt32s(rt.Partitions)
		st := kmsg.NewDescribeProducersResponseTopic()
		st.Topic = rt.Topic
		var topicErr error
		if !c.authorizeTopic(acl.OpRead, rt.Topic) { // authorize.go
			topicErr = kerr.TopicAuthorizationFailed
		} else if err := controller.ValidateTopicName(rt.Topic); err != nil {
			topicErr = err
		} else if _, ok := s.ctrl.Topic(rt.Topic); !ok {
			topicErr = kerr.UnknownTopicOrPartition
		}
		for _, idx := range rt.Partitions {
			sp := kmsg.NewDescribeProducersResponseTopicPartition()
			sp.Partition = idx
			if topicErr != nil {
				// Kafka's ApiError: the exception's message, or the
				// error's default description.
				sp.ErrorCode, _ = errorCode(topicErr)
				msg := controller.ErrorMessage(topicErr)
				sp.ErrorMessage = &msg
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			p := s.replicas.Partition(rt.Topic, idx)
			switch {
			case p == nil:
				sp.ErrorCode = s.missingPartitionCode(rt.Topic, idx)
			case !p.IsLeader():
				sp.ErrorCode = kerr.NotLeaderForPartition.Code
			default:
				for _, ps := range p.Log().ActiveProducers() {
					ap := kmsg.NewDescribeProducersResponseTopicPartitionActiveProducer()
					ap.ProducerID, ap.ProducerEpoch = ps.ProducerID, int32(ps.ProducerEpoch)
					ap.LastSequence, ap.LastTimestamp = ps.LastSequence, ps.LastTimestamp
					ap.CoordinatorEpoch, ap.CurrentTxnStartOffset = ps.CoordinatorEpoch, ps.CurrentTxnStartOffset
					sp.ActiveProducers = append(sp.ActiveProducers, ap)
				}
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	x.respond(resp)
}
