package broker

// Topic ids in Produce v13 (KIP-516, produce.go) and in the offset APIs:
// OffsetCommit v10, OffsetFetch v10 and TxnOffsetCommit v6 name topics by
// id instead of by name (KIP-848, KIP-1319). As Kafka's KafkaApis does, the broker names each requested
// topic from its id before the coordinator sees the request (the
// coordinator keeps offsets by topic name); a topic whose id no topic has
// (or the zero id) is answered UNKNOWN_TOPIC_ID on each of its partitions,
// before authorization; and every topic of the response carries its id.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// topicIDs maps the names resolved from a request's ids back to those ids,
// for the response.
type topicIDs map[string][16]byte

// resolve names the topic with id, recording it; false if no topic has it.
func (ids topicIDs) resolve(s *Server, id [16]byte) (string, bool) {
	if id == ([16]byte{}) {
		return "", false
	}
	t, ok := s.ctrl.TopicByID(id)
	if !ok {
		return "", false
	}
	ids[t.Name] = id
	return t.Name, true
}

// id is the id of a topic the response names: the one the request used,
// else the topic's current one (OffsetFetch of every topic).
func (ids topicIDs) id(s *Server, name string) ([16]byte, bool) {
	if id, ok := ids[name]; ok {
		return id, true
	}
	if t, ok := s.ctrl.Topic(name); ok {
		return t.ID, true
	}
	return [16]byte{}, false
}

// nameByID names each of topics from its id (ref gives the id and where the
// name goes). The topics with unknown ids are left out of kept, and each
// gets the answer unknown builds for it.
func nameByID[T, A any](s *Server, ids topicIDs, topics []T, ref func(*T) ([16]byte, *string), unknown func(T) A) (kept []T, answers []A) {
	kept = topics[:0]
	for _, t := range topics {
		id, name := ref(&t)
		if n, ok := ids.resolve(s, id); ok {
			*name = n
			kept = append(kept, t)
			continue
		}
		answers = append(answers, unknown(t))
	}
	return kept, answers
}

// fillIDs sets the id of each named topic of a response (ref gives the
// topic's name and where its id goes).
func fillIDs[T any](s *Server, ids topicIDs, topics []T, ref func(*T) (string, *[16]byte)) {
	for i := range topics {
		if name, id := ref(&topics[i]); name != "" {
			*id, _ = ids.id(s, name)
		}
	}
}

// offsetCommitTopicIDs names the topics of an OffsetCommit v10 request from
// their ids. The topics with unknown ids are removed from req and their
// answers returned; fill sets the ids of the response's topics.
func (s *Server) offsetCommitTopicIDs(req *kmsg.OffsetCommitRequest) (unknown []kmsg.OffsetCommitResponseTopic, fill func(*kmsg.OffsetCommitResponse)) {
	ids := topicIDs{}
	req.Topics, unknown = nameByID(s, ids, req.Topics,
		func(t *kmsg.OffsetCommitRequestTopic) ([16]byte, *string) { return t.TopicID, &t.Topic },
		func(rt kmsg.OffsetCommitRequestTopic) kmsg.OffsetCommitResponseTopic {
			st := kmsg.NewOffsetCommitResponseTopic()
			st.TopicID = rt.TopicID
			for _, rp := range rt.Partitions {
				sp := kmsg.NewOffsetCommitResponseTopicPartition()
				sp.Partition, sp.ErrorCode = rp.Partition, kerr.UnknownTopicID.Code
				st.Partitions = append(st.Partitions, sp)
			}
			return st
		})
	return unknown, func(resp *kmsg.OffsetCommitResponse) {
		fillIDs(s, ids, resp.Topics, func(t *kmsg.OffsetCommitResponseTopic) (string, *[16]byte) { return t.Topic, &t.TopicID })
	}
}

// txnOffsetCommitTopicIDs is offsetCommitTopicIDs for TxnOffsetCommit v6.
func (s *Server) txnOffsetCommitTopicIDs(req *kmsg.TxnOffsetCommitRequest) (unknown []kmsg.TxnOffsetCommitResponseTopic, fill func(*kmsg.TxnOffsetCommitResponse)) {
	ids := topicIDs{}
	req.Topics, unknown = nameByID(s, ids, req.Topics,
		func(t *kmsg.TxnOffsetCommitRequestTopic) ([16]byte, *string) { return t.TopicID, &t.Topic },
		func(rt kmsg.TxnOffsetCommitRequestTopic) kmsg.TxnOffsetCommitResponseTopic {
			st := kmsg.NewTxnOffsetCommitResponseTopic()
			st.TopicID = rt.TopicID
			for _, rp := range rt.Partitions {
				sp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
				sp.Partition, sp.ErrorCode = rp.Partition, kerr.UnknownTopicID.Code
				st.Partitions = append(st.Partitions, sp)
			}
			return st
		})
	return unknown, func(resp *kmsg.TxnOffsetCommitResponse) {
		fillIDs(s, ids, resp.Topics, func(t *kmsg.TxnOffsetCommitResponseTopic) (string, *[16]byte) { return t.Topic, &t.TopicID })
	}
}

// offsetFetchTopicIDs names the topics of an OffsetFetch v10 request's
// groups from their ids. The topics with unknown ids are removed from req;
// fill answers them (UNKNOWN_TOPIC_ID, offset -1) after the group's other
// topics, sets the ids of the response's topics, and leaves out of an
// every-topic answer the topics that no longer exist (they have no id to
// name them by).
func (s *Server) offsetFetchTopicIDs(req *kmsg.OffsetFetchRequest) (fill func(*kmsg.OffsetFetchResponse)) {
	ids := topicIDs{}
	unknown := map[string][]kmsg.OffsetFetchResponseGroupTopic{}
	for gi := range req.Groups {
		g := &req.Groups[gi]
		if g.Topics == nil {
			continue
		}
		var answers []kmsg.OffsetFetchResponseGroupTopic
		g.Topics, answers = nameByID(s, ids, g.Topics,
			func(t *kmsg.OffsetFetchRequestGroupTopic) ([16]byte, *string) { return t.TopicID, &t.Topic },
			func(rt kmsg.OffsetFetchRequestGroupTopic) kmsg.OffsetFetchResponseGroupTopic {
				st := kmsg.NewOffsetFetchResponseGroupTopic()
				st.TopicID = rt.TopicID
				for _, p := range rt.Partitions {
					sp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
					sp.Partition, sp.Offset, sp.LeaderEpoch, sp.ErrorCode = p, -1, -1, kerr.UnknownTopicID.Code
					sp.Metadata = kmsg.StringPtr("")
					st.Partitions = append(st.Partitions, sp)
				}
				return st
			})
		unknown[g.Group] = append(unknown[g.Group], answers...)
	}
	return func(resp *kmsg.OffsetFetchResponse) {
		for gi := range resp.Groups {
			g := &resp.Groups[gi]
			kept := g.Topics[:0]
			for _, t := range g.Topics {
				id, ok := ids.id(s, t.Topic)
				if !ok {
					continue
				}
				t.TopicID = id
				kept = append(kept, t)
			}
			g.Topics = kept
			if g.ErrorCode == 0 {
				g.Topics = append(g.Topics, unknown[g.Group]...)
			}
		}
	}
}
