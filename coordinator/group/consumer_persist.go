package group

import (
	"time"
)

// consumerLog is what a consumer group's records in the log say, as the
// encoded values last appended (or replayed), so that a state change writes
// only the records that differ, as Kafka writes only the records of what a
// heartbeat changed. A failed append leaves it as it was, so the next change
// writes the difference again.
type consumerLog struct {
	written         bool // the ConsumerGroupMetadata record exists
	epoch           int32
	assignmentEpoch int32 // -1: no target assignment metadata record
	memberLogs
}

func newConsumerLog() *consumerLog {
	return &consumerLog{assignmentEpoch: -1, memberLogs: newMemberLogs()}
}

func (m *consumerMember) metadataValue() []byte {
	v := cgMemberValue{
		instanceID: m.instanceID, rackID: m.rackID, clientID: m.clientID, clientHost: m.clientHost,
		names: m.names, rebalanceTimeout: m.rebalanceTimeout, classic: m.classic,
	}
	if v.names == nil {
		v.names = []string{}
	}
	if m.regex != "" {
		re := m.regex
		v.regex = &re
	}
	if m.serverAssignor != "" {
		a := m.serverAssignor
		v.serverAssignor = &a
	}
	return v.encode()
}

func (m *consumerMember) currentValue() []byte {
	v := cgCurrentValue{epoch: m.epoch, prevEpoch: m.prevEpoch, assigned: m.assigned, pending: m.pendingRevocation}
	switch m.state {
	case memberUnrevoked:
		v.state = kafkaStateUnrevoked
	case memberUnreleased:
		v.state = kafkaStateUnreleased
	default:
		v.state = kafkaStateStable
	}
	return v.encode()
}

// consumerRecordsLocked returns the records that bring the log to the
// group's state, in the order Kafka writes them: removed members' current
// assignment, target and subscription tombstones; subscriptions and the
// group epoch; target assignments and their epoch; current assignments.
// With only set and no group-level change, only that member is compared
// (a heartbeat changes its own member alone). commit makes log reflect the
// records once they are appended.
func (g *group) consumerRecordsLocked(only *consumerMember) (recs []record, commit func()) {
	cg := g.consumer
	l := cg.log
	if l == nil {
		l = newConsumerLog()
		cg.log = l
	}
	full := only == nil || cg.dirty || !l.written || l.epoch != cg.epoch || l.assignmentEpoch != cg.assignmentEpoch ||
		len(l.member) != len(cg.members)
	var members []*consumerMember
	if full {
		for _, id := range sortedKeys(cg.members) {
			members = append(members, cg.members[id])
		}
	} else {
		members = []*consumerMember{only}
	}
	d := &recordDiff{key: func(version int16, id string) []byte { return cgMemberKey(version, g.id, id) }}
	if full {
		gone := l.ids(func(id string) bool { return cg.members[id] == nil })
		d.tombstones(&l.memberLogs, gone, keyConsumerGroupCurrentMember, keyConsumerGroupTargetMember, keyConsumerGroupMember)
	}
	for _, m := range members {
		d.set(keyConsumerGroupMember, l.member, m.id, m.metadataValue())
	}
	if !l.written || l.epoch != cg.epoch {
		d.recs = append(d.recs, cgEpochRecord(g.id, cg.epoch))
	}
	if full {
		for _, id := range sortedKeys(cg.target) {
			d.set(keyConsumerGroupTargetMember, l.target, id, encodeTargetValue(cg.target[id]))
		}
		for id := range l.target {
			if _, ok := cg.target[id]; !ok && cg.members[id] != nil {
				d.set(keyConsumerGroupTargetMember, l.target, id, nil)
			}
		}
	}
	if l.assignmentEpoch != cg.assignmentEpoch {
		d.recs = append(d.recs, cgTargetEpochRecord(g.id, cg.assignmentEpoch))
	}
	for _, m := range members {
		d.set(keyConsumerGroupCurrentMember, l.current, m.id, m.currentValue())
	}
	epoch, assignmentEpoch := cg.epoch, cg.assignmentEpoch
	return d.recs, func() {
		d.commit()
		l.written, l.epoch, l.assignmentEpoch = true, epoch, assignmentEpoch
		if full {
			cg.dirty = false
		}
	}
}

// persistConsumerLocked appends the records of the group's changes (see
// consumerRecordsLocked) before the change is answered, as Kafka answers a
// heartbeat once its records are committed.
func (g *group) persistConsumerLocked(only *consumerMember) error {
	recs, commit := g.consumerRecordsLocked(only)
	return g.appendChangesLocked("consumer", recs, commit)
}

// consumerTombstonesLocked deletes an empty consumer group's records, as
// Kafka's ConsumerGroup.createGroupTombstoneRecords does.
func (g *group) consumerTombstonesLocked() []record {
	cg := g.consumer
	if cg == nil || cg.log == nil || !cg.log.written {
		return nil
	}
	ids := cg.log.ids(nil)
	key := func(version int16, id string) []byte { return cgMemberKey(version, g.id, id) }
	recs := memberTombstones(ids, key, keyConsumerGroupCurrentMember)
	recs = append(recs, memberTombstones(ids, key, keyConsumerGroupTargetMember)...)
	recs = append(recs, cgGroupTombstone(keyConsumerGroupTargetMetadata, g.id))
	recs = append(recs, memberTombstones(ids, key, keyConsumerGroupMember)...)
	return append(recs, cgGroupTombstone(keyConsumerGroupMetadata, g.id))
}

// groupTombstonesLocked are the records deleting the group itself (not its
// offsets): a classic group's GroupMetadata tombstone, or a consumer group's
// records.
func (g *group) groupTombstonesLocked() []record {
	switch g.kind {
	case kindConsumer:
		return g.consumerTombstonesLocked()
	case kindStreams:
		return g.streamsTombstonesLocked()
	}
	return []record{groupTombstone(g.id)}
}

// replayedConsumer gathers a consumer group's records during load.
type replayedConsumer struct {
	exists          bool // ConsumerGroupMetadata seen and not deleted
	epoch           int32
	assignmentEpoch int32
	member          map[string]cgMemberValue
	target          map[string]partitionSet
	current         map[string]cgCurrentValue
	raw             *consumerLog
}

func newReplayedConsumer() *replayedConsumer {
	return &replayedConsumer{assignmentEpoch: -1, member: map[string]cgMemberValue{}, target: map[string]partitionSet{},
		current: map[string]cgCurrentValue{}, raw: newConsumerLog()}
}

// replayConsumerRecord applies one ConsumerGroup* record; the latest record
// of a key wins and a tombstone deletes.
func (rc *replayedConsumer) replay(k cgKey, value []byte) error {
	tomb := value == nil
	switch k.version {
	case keyConsumerGroupMetadata:
		if tomb {
			*rc = *newReplayedConsumer()
			return nil
		}
		e, err := decodeEpochValue(value)
		if err != nil {
			return err
		}
		rc.exists, rc.epoch = true, e
	case keyConsumerGroupPartitionMetadata:
		// Subscription metadata is recomputed from the cluster's topics.
	case keyConsumerGroupTargetMetadata:
		if tomb {
			rc.assignmentEpoch = -1
			return nil
		}
		e, err := decodeEpochValue(value)
		if err != nil {
			return err
		}
		rc.assignmentEpoch = e
	case keyConsumerGroupMember:
		return replayMemberRecord(k.member, value, rc.member, rc.raw.member, decodeMemberValue)
	case keyConsumerGroupTargetMember:
		return replayMemberRecord(k.member, value, rc.target, rc.raw.target, decodeTargetValue)
	case keyConsumerGroupCurrentMember:
		return replayMemberRecord(k.member, value, rc.current, rc.raw.current, decodeCurrentValue)
	}
	return nil
}

// restoreConsumer makes g the consumer group the records describe: members
// keep their epochs, subscriptions, targets and current assignments.
func (g *group) restoreConsumer(rc *replayedConsumer) {
	cg := newConsumerGroup()
	cg.epoch = rc.epoch
	cg.assignmentEpoch = max(rc.assignmentEpoch, 0)
	for id, mv := range rc.member {
		m := &consumerMember{
			id: id, instanceID: mv.instanceID, rackID: mv.rackID, clientID: mv.clientID, clientHost: mv.clientHost,
			rebalanceTimeout: mv.rebalanceTimeout, names: mv.names, classic: mv.classic,
			assigned: partitionSet{}, pendingRevocation: partitionSet{},
		}
		if mv.regex != nil {
			m.regex = *mv.regex
		}
		if mv.serverAssignor != nil {
			m.serverAssignor = *mv.serverAssignor
		}
		if cur, ok := rc.current[id]; ok {
			m.epoch, m.prevEpoch = cur.epoch, cur.prevEpoch
			m.assigned, m.pendingRevocation = cur.assigned, cur.pending
			switch cur.state {
			case kafkaStateUnrevoked:
				m.state = memberUnrevoked
			case kafkaStateUnreleased:
				m.state = memberUnreleased
			}
		}
		cg.members[id] = m
		if m.instanceID != nil {
			cg.static[*m.instanceID] = id
		}
		if t, ok := rc.target[id]; ok {
			cg.target[id] = t
		}
	}
	g.consumer = cg // ownLocked reads it
	for _, m := range cg.members {
		g.ownLocked(m)
	}
	raw := rc.raw
	raw.written, raw.epoch, raw.assignmentEpoch = true, rc.epoch, rc.assignmentEpoch
	cg.log = raw
	// Records of members without subscription (a partial write) are dropped
	// on the first change, as their member is unknown.
	cg.dirty = len(raw.target) != len(cg.target) || len(raw.current) != len(cg.members)
	g.kind = kindConsumer
	g.consumer = cg
}

// onLoadedConsumerLocked starts a loaded consumer group's timers as Kafka's
// onLoaded does: every member's session, and the rebalance timeout of those
// that still have partitions to revoke. The subscription is resolved
// against today's topics without bumping the epoch, so the members keep it.
// Kafka stores each regex's resolution, Strait does not: a regex keeps the
// matching topics the loaded target assignment holds (those its last
// resolution allowed), and the next heartbeat resolves it again with its
// principal's authorization (metaValid false) before any new target
// assignment is computed.
func (g *group) onLoadedConsumerLocked() {
	cg := g.consumer
	inTarget := map[[16]byte]bool{}
	for _, ps := range cg.target {
		for id := range ps {
			inTarget[id] = true
		}
	}
	g.refreshSubscriptionLocked(g.c.metaVersion.Load(), func(topic string) bool {
		t, ok := g.c.meta.Topic(topic)
		return ok && inTarget[t.ID]
	})
	cg.metaValid = false
	cg.assignor = g.preferredAssignorLocked()
	for _, m := range cg.members {
		g.scheduleConsumerSessionLocked(m)
		if m.state == memberUnrevoked {
			g.scheduleConsumerRebalanceLocked(m)
		}
	}
}

// scheduleConsumerSessionLocked (re)starts a member's session timeout.
func (g *group) scheduleConsumerSessionLocked(m *consumerMember) {
	sessionTimeout, _ := g.c.consumerTimeouts(g.id)
	if m.classic != nil {
		sessionTimeout = time.Duration(m.classic.sessionTimeout) * time.Millisecond
	}
	g.scheduleLocked(&m.sessionTimer, sessionTimeout, func() { g.expireConsumerMemberLocked(m, "session timeout") })
}

// scheduleConsumerRebalanceLocked starts the timeout within which a member
// must revoke the partitions pending revocation at its current epoch.
func (g *group) scheduleConsumerRebalanceLocked(m *consumerMember) {
	epoch := m.epoch
	g.scheduleLocked(&m.rebalanceTimer, time.Duration(m.rebalanceTimeout)*time.Millisecond, func() {
		if m.epoch == epoch && m.state == memberUnrevoked {
			g.expireConsumerMemberLocked(m, "rebalance timeout")
		}
	})
}
