package replication

// The follower's side of a fetch session (KIP-227, Kafka's
// FetchSessionHandler): one session per fetcher, so per leader broker. The
// first fetch is full (session id 0, epoch 0) and asks the leader for a
// session; once the leader answers with an id, each fetch is incremental: it
// lists only the partitions added to the session or whose fetch parameters
// (offset, log start offset, leader epoch, last fetched epoch, max bytes)
// changed since the leader last saw them, and forgets those not fetched
// this round (unfollowed, truncating, backing off, throttled). The leader
// answers only the partitions with records, a new high watermark or log
// start offset, a diverging epoch, or an error. So an idle round between
// brokers of 10,000 partitions costs a few dozen bytes instead of every
// partition both ways.
//
// Any doubt about the leader's state of the session (a failed request, a
// session error, an answer naming another session) makes the next fetch
// full: with the session's id when one was known, which closes it on the
// leader, as Kafka's handler does.

import (
	"math"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// sessionPartKey names a partition in a follower's session: by topic id
// (Fetch v13+, which every Strait leader serves) and, for an older leader,
// by name.
type sessionPartKey struct {
	topic     string
	topicID   [16]byte
	partition int32
}

// sessionPartData is what the leader's session holds for a partition: the
// parameters it was last sent.
type sessionPartData struct {
	fetchOffset    int64
	logStartOffset int64
	leaderEpoch    int32
	// lastFetchedEpoch is the log's latest epoch (-1: none), which the
	// leader checks the fetch offset against (DivergingEpoch).
	lastFetchedEpoch int32
	maxBytes         int32
}

// followerSession is a fetcher's session with its leader. Only the fetcher's
// goroutine uses it.
type followerSession struct {
	id    int32
	epoch int32 // 0: the next fetch is full
	// parts is what the leader's session holds, valid while epoch > 0.
	parts map[sessionPartKey]*sessionPart
	round uint64 // build's count, to mark the partitions a round asks for

	// What the request built last changes in parts once the leader
	// accepts it (answered): partitions added or altered, and forgotten.
	upserts   []wantPart
	forgotten []sessionPartKey
	full      bool
}

// sessionPart is one partition of the session.
type sessionPart struct {
	data sessionPartData
	seen uint64 // the last round that asked for it
}

// wantPart is one partition a fetch round asks for.
type wantPart struct {
	key  sessionPartKey
	data sessionPartData
}

// build fills req's session fields, topics and forgotten topics for the
// partitions of this round (want), remembering the change to the session
// for answered. Besides a look-up per partition, its cost is that of what
// changed: an idle round lists and allocates nothing per partition.
func (s *followerSession) build(req *kmsg.FetchRequest, want []wantPart) {
	s.round++
	s.full = s.epoch == 0
	s.upserts, s.forgotten = s.upserts[:0], s.forgotten[:0]
	req.SessionID, req.SessionEpoch = s.id, s.epoch
	var topics map[sessionPartKey]int // request topic entry by topic (partition -1)
	for _, w := range want {
		var sp *sessionPart
		if !s.full {
			sp = s.parts[w.key]
		}
		// A full fetch (epoch 0 with our old id closes that session on
		// the leader and asks for a new one) lists every partition.
		if sp == nil || sp.data != w.data {
			if topics == nil {
				topics = map[sessionPartKey]int{}
			}
			addFetchPartition(req, topics, w)
			s.upserts = append(s.upserts, w)
		}
		if sp != nil {
			sp.seen = s.round
		}
	}
	if s.full {
		return
	}
	var byTopic map[sessionPartKey][]int32 // forgotten partitions by topic (partition -1)
	var order []sessionPartKey
	for k, sp := range s.parts {
		if sp.seen == s.round {
			continue
		}
		s.forgotten = append(s.forgotten, k)
		tk := sessionPartKey{topic: k.topic, topicID: k.topicID, partition: -1}
		if byTopic == nil {
			byTopic = map[sessionPartKey][]int32{}
		}
		if _, ok := byTopic[tk]; !ok {
			order = append(order, tk)
		}
		byTopic[tk] = append(byTopic[tk], k.partition)
	}
	for _, tk := range order {
		ft := kmsg.NewFetchRequestForgottenTopic()
		ft.Topic, ft.TopicID, ft.Partitions = tk.topic, tk.topicID, byTopic[tk]
		req.ForgottenTopics = append(req.ForgottenTopics, ft)
	}
}

// addFetchPartition appends w to req, in its topic's entry (topics indexes
// them).
func addFetchPartition(req *kmsg.FetchRequest, topics map[sessionPartKey]int, w wantPart) {
	tk := sessionPartKey{topic: w.key.topic, topicID: w.key.topicID, partition: -1}
	i, ok := topics[tk]
	if !ok {
		i = len(req.Topics)
		topics[tk] = i
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = w.key.topic, w.key.topicID
		req.Topics = append(req.Topics, rt)
	}
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition = w.key.partition
	rp.CurrentLeaderEpoch = w.data.leaderEpoch
	rp.FetchOffset = w.data.fetchOffset
	rp.LastFetchedEpoch = w.data.lastFetchedEpoch
	rp.LogStartOffset = w.data.logStartOffset
	rp.PartitionMaxBytes = w.data.maxBytes
	req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
}

// failed: the request's fate on the leader is unknown; start over with a
// full fetch that closes the session.
func (s *followerSession) failed() {
	s.epoch, s.parts = 0, nil
}

// isSessionError reports whether code is a session error: the next fetch
// is full, at once.
func isSessionError(code int16) bool {
	switch code {
	case kerr.FetchSessionIDNotFound.Code, kerr.InvalidFetchSessionEpoch.Code, kerr.FetchSessionTopicIDError.Code:
		return true
	}
	return false
}

// answered takes the leader's answer to the request build made last.
func (s *followerSession) answered(resp *kmsg.FetchResponse) {
	switch {
	case resp.ErrorCode == kerr.FetchSessionIDNotFound.Code:
		s.id, s.epoch, s.parts = 0, 0, nil // nothing to close
	case resp.ErrorCode != 0:
		s.failed()
	case s.full && resp.SessionID == 0:
		// The leader's session cache had no room: full fetches until it
		// has.
		s.id, s.epoch, s.parts = 0, 0, nil
	case s.full:
		s.id, s.epoch = resp.SessionID, 1
		s.parts = make(map[sessionPartKey]*sessionPart, len(s.upserts))
		for _, w := range s.upserts {
			s.parts[w.key] = &sessionPart{data: w.data, seen: s.round}
		}
	case resp.SessionID != s.id:
		// The leader closed the session (it went empty) or answered
		// another: start afresh.
		s.failed()
	default:
		for _, w := range s.upserts {
			if sp := s.parts[w.key]; sp != nil {
				sp.data = w.data
			} else {
				s.parts[w.key] = &sessionPart{data: w.data, seen: s.round}
			}
		}
		for _, k := range s.forgotten {
			delete(s.parts, k)
		}
		if s.epoch == math.MaxInt32 {
			s.epoch = 1
		} else {
			s.epoch++
		}
	}
	s.upserts, s.forgotten = s.upserts[:0], s.forgotten[:0]
}
