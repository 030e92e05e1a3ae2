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

// offsetCommitTopicIDs names the topics of an OffsetCommit v10 request from
// their ids. The topics with unknown ids are removed from req and their
// answers returned; fill sets the ids of the response's topics.
func (s *Server) offsetCommitTopicIDs(req *kmsg.OffsetCommitRequest) (unknown []kmsg.OffsetCommitResponseTopic, fill func(*kmsg.OffsetCommitResponse)) {
	ids := topicIDs{}
	kept := req.Topics[:0]
	for _, rt := range req.Topics {
		name, ok := ids.resolve(s, rt.TopicID)
		if ok {
			rt.Topic = name
			kept = append(kept, rt)
			continue
		}
		st := kmsg.NewOffsetCommitResponseTopic()
		st.TopicID = rt.TopicID
		for _, rp := range rt.Partitions {
			sp := kmsg.NewOffsetCommitResponseTopicPartition()
			sp.Partition, sp.ErrorCode = rp.Partition, kerr.UnknownTopicID.Code
			st.Partitions = append(st.Partitions, sp)
		}
		unknown = append(unknown, st)
	}
	req.Topics = kept
	return unknown, func(resp *kmsg.OffsetCommitResponse) {
		for i := range resp.Topics {
			if t := &resp.Topics[i]; t.Topic != "" {
				t.TopicID, _ = ids.id(s, t.Topic)
			}
		}
	}
}

// txnOffsetCommitTopicIDs is offsetCommitTopicIDs for TxnOffsetCommit v6.
func (s *Server) txnOffsetCommitTopicIDs(req *kmsg.TxnOffsetCommitRequest) (unknown []kmsg.TxnOffsetCommitResponseTopic, fill func(*kmsg.TxnOffsetCommitResponse)) {
	ids := topicIDs{}
	kept := req.Topics[:0]
	for _, rt := range req.Topics {
		name, ok := ids.resolve(s, rt.TopicID)
		if ok {
			rt.Topic = name
			kept = append(kept, rt)
			continue
		}
		st := kmsg.NewTxnOffsetCommitResponseTopic()
		st.TopicID = rt.TopicID
		for _, rp := range rt.Partitions {
			sp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
			sp.Partition, sp.ErrorCode = rp.Partition, kerr.UnknownTopicID.Code
			st.Partitions = append(st.Partitions, sp)
		}
		unknown = append(unknown, st)
	}
	req.Topics = kept
	return unknown, func(resp *kmsg.TxnOffsetCommitResponse) {
		for i := range resp.Topics {
			if t := &resp.Topics[i]; t.Topic != "" {
				t.TopicID, _ = ids.id(s, t.Topic)
			}
		}
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
		kept := g.Topics[:0]
		for _, rt := range g.Topics {
			name, ok := ids.resolve(s, rt.TopicID)
			if ok {
				rt.Topic = name
				kept = append(kept, rt)
				continue
			}
			st := kmsg.NewOffsetFetchResponseGroupTopic()
			st.TopicID = rt.TopicID
			for _, p := range rt.Partitions {
				sp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
				sp.Partition, sp.Offset, sp.LeaderEpoch, sp.ErrorCode = p, -1, -1, kerr.UnknownTopicID.Code
				sp.Metadata = kmsg.StringPtr("")
				st.Partitions = append(st.Partitions, sp)
			}
			unknown[g.Group] = append(unknown[g.Group], st)
		}
		g.Topics = kept
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
