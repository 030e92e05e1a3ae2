package replication

// The follower's side of a fetch session (KIP-227, Kafka's
// FetchSessionHandler): one session per fetcher, so per leader broker. The
// first fetch is full (session id 0, epoch 0) and asks the leader for a
// session; once the leader answers with an id, each fetch is incremental: it
// lists only the partitions added to the session or whose fetch parameters
// (offset, log start offset, leader epoch, max bytes) changed since the
// leader last saw them, and forgets those not fetched this round (unfollowed,
// truncating, backing off, throttled). The leader answers only the partitions
// with records, a new high watermark or log start offset, or an error. So an
// idle round between brokers of 10,000 partitions costs a few dozen bytes
// instead of every partition both ways.
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
	maxBytes       int32
}

// followerSession is a fetcher's session with its leader. Only the fetcher's
// goroutine uses it.
type followerSession struct {
	id    int32
	epoch int32 // 0: the next fetch is full
	// parts is what the leader's session holds, valid while epoch > 0.
	parts map[sessionPartKey]sessionPartData
}

// wantPart is one partition a fetch round asks for.
type wantPart struct {
	key  sessionPartKey
	data sessionPartData
}

// build fills req's session fields, topics and forgotten topics for the
// partitions of this round (want, grouped by topic in order), and returns
// the session state to take if the leader accepts the request.
func (s *followerSession) build(req *kmsg.FetchRequest, want []wantPart) (next map[sessionPartKey]sessionPartData, full bool) {
	next = make(map[sessionPartKey]sessionPartData, len(want))
	for _, w := range want {
		next[w.key] = w.data
	}
	full = s.epoch == 0
	req.SessionID, req.SessionEpoch = s.id, s.epoch
	topics := map[sessionPartKey]int{} // request topic entry by topic (partition -1)
	for _, w := range want {
		// A full fetch (epoch 0 with our old id closes that session on
		// the leader and asks for a new one) lists every partition.
		if old, ok := s.parts[w.key]; full || !ok || old != w.data {
			addFetchPartition(req, topics, w)
		}
	}
	if full {
		return next, true
	}
	forgotten := map[sessionPartKey][]int32{} // by topic (partition -1)
	var order []sessionPartKey
	for k := range s.parts {
		if _, ok := next[k]; ok {
			continue
		}
		tk := sessionPartKey{topic: k.topic, topicID: k.topicID, partition: -1}
		if _, ok := forgotten[tk]; !ok {
			order = append(order, tk)
		}
		forgotten[tk] = append(forgotten[tk], k.partition)
	}
	for _, tk := range order {
		ft := kmsg.NewFetchRequestForgottenTopic()
		ft.Topic, ft.TopicID, ft.Partitions = tk.topic, tk.topicID, forgotten[tk]
		req.ForgottenTopics = append(req.ForgottenTopics, ft)
	}
	return next, false
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
	rp.LastFetchedEpoch = -1
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

// answered takes the leader's answer to a request built with next and full.
func (s *followerSession) answered(resp *kmsg.FetchResponse, next map[sessionPartKey]sessionPartData, full bool) {
	switch {
	case resp.ErrorCode == kerr.FetchSessionIDNotFound.Code:
		s.id, s.epoch, s.parts = 0, 0, nil // nothing to close
	case resp.ErrorCode != 0:
		s.failed()
	case full && resp.SessionID == 0:
		// The leader's session cache had no room: full fetches until it
		// has.
		s.id, s.epoch, s.parts = 0, 0, nil
	case full:
		s.id, s.epoch, s.parts = resp.SessionID, 1, next
	case resp.SessionID != s.id:
		// The leader closed the session (it went empty) or answered
		// another: start afresh.
		s.failed()
	default:
		s.parts = next
		if s.epoch == math.MaxInt32 {
			s.epoch = 1
		} else {
			s.epoch++
		}
	}
}
