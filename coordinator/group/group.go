package group

import (
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// groupKind is the rebalance protocol a group uses (Kafka's Group.GroupType).
type groupKind int8

const (
	kindClassic  groupKind = iota // JoinGroup/SyncGroup, or offsets only
	kindConsumer                  // KIP-848 ConsumerGroupHeartbeat
	kindStreams                   // KIP-1071 StreamsGroupHeartbeat
)

func (k groupKind) String() string {
	switch k {
	case kindConsumer:
		return "consumer"
	case kindStreams:
		return "streams"
	}
	return "classic"
}

// offsetEntry is one committed offset (Kafka's OffsetAndMetadata).
type offsetEntry struct {
	offset      int64
	leaderEpoch int32 // -1: none
	metadata    string
	commitTime  int64 // ms
	expireTime  int64 // ms, -1: none (only OffsetCommit v2-4 retention_time sets it)
	// seq orders commits in log order (memory only): a transactional
	// commit completed later does not overwrite a newer plain commit.
	seq int64
}

// group is one consumer group. Every field below mu is guarded by it.
type group struct {
	c     *Coordinator
	shard *shard
	id    string

	mu       sync.Mutex
	removed  bool // deleted, converted or unloaded: holders must look the group up again
	kind     groupKind
	classic  classicGroup
	consumer *consumerGroup // set when kind == kindConsumer
	streams  *streamsGroup  // set when kind == kindStreams
	offsets  map[string]map[int32]offsetEntry
	// pendingTxn holds offsets committed in open transactions, by producer
	// id, until the transaction's marker commits or aborts them.
	pendingTxn map[int64]map[string]map[int32]offsetEntry
	timerSeq   uint64
}

func newGroup(c *Coordinator, s *shard, id string) *group {
	g := &group{c: c, shard: s, id: id, offsets: map[string]map[int32]offsetEntry{},
		pendingTxn: map[int64]map[string]map[int32]offsetEntry{}}
	g.classic.init(c.now())
	return g
}

// groupTimer is one scheduled action of a group; rescheduling or cancelling
// it makes an already-fired callback that waits for the lock a no-op.
type groupTimer struct {
	t   *time.Timer
	seq uint64
}

// scheduleLocked runs fn with the group locked after d, unless slot is
// cancelled or rescheduled first or the group is removed.
func (g *group) scheduleLocked(slot *groupTimer, d time.Duration, fn func()) {
	g.cancelLocked(slot)
	g.timerSeq++
	seq := g.timerSeq
	slot.seq = seq
	slot.t = time.AfterFunc(d, func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.removed || slot.seq != seq {
			return
		}
		slot.t, slot.seq = nil, 0
		fn()
	})
}

func (g *group) cancelLocked(slot *groupTimer) {
	if slot.t != nil {
		slot.t.Stop()
	}
	slot.t, slot.seq = nil, 0
}

// isEmptyLocked is Kafka's Group.isEmpty: no members (a classic group in
// the Empty state).
func (g *group) isEmptyLocked() bool {
	switch g.kind {
	case kindConsumer:
		return len(g.consumer.members) == 0
	case kindStreams:
		return len(g.streams.members) == 0
	}
	return g.classic.state == stateEmpty
}

// memberEpochLocked is the epoch of a consumer-protocol or streams
// group's member, and whether it is a member.
func (g *group) memberEpochLocked(id string) (int32, bool) {
	switch g.kind {
	case kindConsumer:
		if m := g.consumer.members[id]; m != nil {
			return m.epoch, true
		}
	case kindStreams:
		if m := g.streams.members[id]; m != nil {
			return m.epoch, true
		}
	}
	return 0, false
}

// stateLocked is the state ListGroups and DescribeGroups show.
func (g *group) stateLocked() string {
	switch g.kind {
	case kindConsumer:
		return g.consumer.stateName()
	case kindStreams:
		return g.streams.stateName()
	}
	return g.classic.state.String()
}

// protocolTypeLocked is the protocol type ListGroups shows.
func (g *group) protocolTypeLocked() string {
	switch g.kind {
	case kindConsumer:
		return "consumer"
	case kindStreams:
		return "streams"
	}
	return g.classic.protocolType
}

// unloadLocked answers parked requests NOT_COORDINATOR, stops the timers
// and marks the group removed.
func (g *group) unloadLocked() {
	g.shutdownMembersLocked(kerr.NotCoordinator.Code)
	g.removed = true
}

// shutdownMembersLocked completes every parked JoinGroup and SyncGroup with
// code and stops every timer of the group.
func (g *group) shutdownMembersLocked(code int16) {
	cg := &g.classic
	for _, m := range cg.members {
		if m.joinCB != nil {
			cb := m.joinCB
			m.joinCB = nil
			r := kmsg.NewPtrJoinGroupResponse()
			r.ErrorCode, r.MemberID, r.Generation = code, m.id, -1
			cb(r)
		}
		if m.syncCB != nil {
			cb := m.syncCB
			m.syncCB = nil
			r := kmsg.NewPtrSyncGroupResponse()
			r.ErrorCode = code
			cb(r)
		}
		g.cancelLocked(&m.heartbeat)
	}
	for id, t := range cg.pending {
		g.cancelLocked(t)
		delete(cg.pending, id)
	}
	g.cancelLocked(&cg.joinTimer)
	g.cancelLocked(&cg.syncTimer)
	if g.consumer != nil {
		for _, m := range g.consumer.members {
			g.cancelConsumerTimersLocked(m)
		}
	}
	if g.streams != nil {
		for _, m := range g.streams.members {
			g.cancelLocked(&m.sessionTimer)
			g.cancelLocked(&m.rebalanceTimer)
		}
	}
}

// numOffsetsLocked counts committed offsets.
func (g *group) numOffsetsLocked() int {
	n := 0
	for _, ps := range g.offsets {
		n += len(ps)
	}
	return n
}

func (g *group) setOffsetLocked(topic string, partition int32, o offsetEntry) {
	if o.seq == 0 {
		o.seq = g.c.seq.Add(1)
	}
	ps := g.offsets[topic]
	if ps == nil {
		ps = map[int32]offsetEntry{}
		g.offsets[topic] = ps
	}
	ps[partition] = o
}

func (g *group) deleteOffsetLocked(topic string, partition int32) {
	ps := g.offsets[topic]
	delete(ps, partition)
	if len(ps) == 0 {
		delete(g.offsets, topic)
	}
}

// isSubscribedLocked reports whether the group consumes topic, for
// OffsetDelete (GROUP_SUBSCRIBED_TO_TOPIC) and offset expiration; unknown
// subscriptions count as subscribed, as in Kafka.
func (g *group) isSubscribedLocked(topic string) bool {
	switch g.kind {
	case kindConsumer:
		return g.consumer.subscribedTo(topic)
	case kindStreams:
		return g.streams.readsTopic(topic)
	}
	cg := &g.classic
	if cg.state == stateEmpty || cg.state == stateDead {
		return false
	}
	if cg.subscribedTopics == nil {
		return cg.protocolType == consumerProtocolType
	}
	return cg.subscribedTopics[topic]
}

// convertToConsumerLocked turns an empty classic group into an empty
// consumer-protocol group, keeping its offsets (Kafka deletes the empty
// classic group and creates the consumer group in its place).
func (g *group) convertToConsumerLocked() error {
	// A group just created by this heartbeat has nothing to convert.
	existed := g.classic.hasRecord || g.classic.generation > 0 || len(g.offsets) > 0
	var recs []record
	switch {
	case g.kind == kindStreams:
		recs = g.streamsTombstonesLocked()
	case g.classic.hasRecord:
		recs = append(recs, groupTombstone(g.id))
	}
	if err := g.appendRecords(recs); err != nil {
		return err
	}
	g.shutdownMembersLocked(kerr.RebalanceInProgress.Code)
	g.classic.init(g.c.now())
	g.kind = kindConsumer
	g.streams = nil
	g.consumer = newConsumerGroup()
	if existed {
		g.c.logger.Info("converted empty classic group to a consumer group", "group", g.id)
	}
	return nil
}

// convertToClassicLocked turns an empty consumer-protocol group into an
// empty classic group, keeping its offsets; the consumer group's records
// are deleted first, as Kafka does.
func (g *group) convertToClassicLocked() error {
	if err := g.appendRecords(g.groupTombstonesLocked()); err != nil {
		return err
	}
	g.shutdownMembersLocked(kerr.RebalanceInProgress.Code)
	from := g.kind
	g.kind = kindClassic
	g.consumer, g.streams = nil, nil
	g.classic.init(g.c.now())
	g.c.logger.Info("converted empty "+from.String()+" group to a classic group", "group", g.id)
	return nil
}
