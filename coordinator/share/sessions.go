package share

import (
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Share sessions (KIP-932's ShareSessionCache): a member's ShareFetch and
// ShareAcknowledge requests to one broker form a session whose epoch rises
// by one per request. Epoch 0 opens a session (replacing the member's
// previous one, whose acquired records are released), -1 closes it
// (releasing the member's acquired records here), and any other epoch must
// be the next one expected. A session remembers the partitions fetched, so
// a request names only the partitions it adds (Topics) and removes
// (ForgottenTopicsData).

type sessionKey struct{ group, member string }

// TopicPartition names a partition by topic ID.
type TopicPartition struct {
	Topic     [16]byte
	Partition int32
}

// Session is a member's share session on this broker.
type Session struct {
	epoch    int32 // the next epoch expected
	parts    []TopicPartition
	set      map[TopicPartition]struct{} // parts as a set: requests may name many
	lastUsed time.Time
}

// Session epochs of ShareFetch and ShareAcknowledge.
const (
	InitialEpoch int32 = 0
	FinalEpoch   int32 = -1
)

// SessionUpdate validates a request's epoch against member's session and
// applies it: at epoch 0 a new session with add; at -1 the session ends
// (the caller then calls CloseSession after applying acknowledgements); at
// N the session must expect N, gains add and loses forget, and moves to
// N+1. It returns the partitions the session fetches, and an error code.
// ack is set for ShareAcknowledge, where epoch 0 is refused.
func (c *Coordinator) SessionUpdate(groupID, memberID string, epoch int32, add, forget []TopicPartition, ack bool) ([]TopicPartition, int16) {
	now := c.cfg.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	k := sessionKey{groupID, memberID}
	s := c.sessions[k]
	switch {
	case epoch == InitialEpoch && ack:
		return nil, kerr.InvalidShareSessionEpoch.Code
	case epoch == InitialEpoch:
		if s != nil {
			c.releaseMemberLocked(groupID, memberID)
			delete(c.sessions, k)
		}
		if len(c.sessions) >= c.cfg.MaxShareSessions {
			c.evictIdleLocked(now)
			if len(c.sessions) >= c.cfg.MaxShareSessions {
				return nil, kerr.ShareSessionLimitReached.Code
			}
		}
		if !c.admitLocked(groupID, now) {
			return nil, kerr.GroupMaxSizeReached.Code
		}
		s = &Session{epoch: 1, lastUsed: now, set: map[TopicPartition]struct{}{}}
		s.add(add, c.cfg.PartitionExists)
		c.sessions[k] = s
		return slices.Clone(s.parts), 0
	case s == nil:
		return nil, kerr.ShareSessionNotFound.Code
	case epoch == FinalEpoch:
		return slices.Clone(s.parts), 0
	case epoch != s.epoch:
		return nil, kerr.InvalidShareSessionEpoch.Code
	}
	s.add(add, c.cfg.PartitionExists)
	c.known[groupID] = now
	if len(forget) > 0 {
		drop := make(map[TopicPartition]struct{}, len(forget))
		for _, tp := range forget {
			drop[tp] = struct{}{}
			delete(s.set, tp)
		}
		s.parts = slices.DeleteFunc(s.parts, func(tp TopicPartition) bool { _, ok := drop[tp]; return ok })
	}
	s.epoch++
	if s.epoch < 1 { // wraps as Kafka's ShareRequestMetadata.nextEpoch
		s.epoch = 1
	}
	s.lastUsed = now
	return slices.Clone(s.parts), 0
}

// add adds the partitions that exist: the session then names at most the
// cluster's partitions, however many a client makes up (those are answered
// with their error by the request that names them, and not kept).
func (s *Session) add(add []TopicPartition, exists func(TopicPartition) bool) {
	for _, tp := range add {
		if _, ok := s.set[tp]; !ok && exists(tp) {
			s.set[tp] = struct{}{}
			s.parts = append(s.parts, tp)
		}
	}
}

// CloseSession ends member's session and releases the records it holds on
// this broker.
func (c *Coordinator) CloseSession(groupID, memberID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.sessions, sessionKey{groupID, memberID})
	c.releaseMemberLocked(groupID, memberID)
}

// evictIdleLocked drops sessions unused for a session timeout (their
// member is gone), releasing their records. c.mu held.
func (c *Coordinator) evictIdleLocked(now time.Time) {
	for k, s := range c.sessions {
		if now.Sub(s.lastUsed) > c.cfg.SessionTimeout {
			delete(c.sessions, k)
			c.releaseMemberLocked(k.group, k.member)
		}
	}
}
