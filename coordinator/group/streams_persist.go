package group

import (
	"bytes"
	"slices"
	"time"
)

// A streams group's state in __consumer_offsets, as consumer_persist.go
// keeps a KIP-848 group's: each change writes the records that differ from
// what the log says, before the change is answered; a coordinator that
// loads the partition rebuilds the group, its members keeping their
// epochs and tasks.

// streamsLog is what a streams group's records in the log say, as the
// encoded values last appended or replayed.
type streamsLog struct {
	written         bool // the StreamsGroupMetadata record exists
	meta            sgMetadataValue
	assignmentEpoch int32  // -1: no target assignment metadata record
	topology        []byte // nil: no topology record
	memberLogs
}

func newStreamsLog() *streamsLog {
	return &streamsLog{meta: sgMetadataValue{storedDesc: -1, failedDesc: -1}, assignmentEpoch: -1, memberLogs: newMemberLogs()}
}

// streamsRecordsLocked returns the records that bring the log to the
// group's state, in Kafka's order: removed members' current assignment,
// target and metadata tombstones; member metadata, the topology and the
// group epoch; targets and their epoch; current assignments. With only set
// and no group-level change, only that member is compared. commit makes
// the log reflect the records once they are appended.
func (g *group) streamsRecordsLocked(only *streamsMember) (recs []record, commit func()) {
	sg := g.streams
	l := sg.log
	if l == nil {
		l = newStreamsLog()
		sg.log = l
	}
	var topology []byte
	if sg.topology != nil {
		topology = encodeTopologyValue(sg.topology)
	}
	meta := sg.metadataValue()
	full := only == nil || sg.dirty || !l.written || l.meta.epoch != sg.epoch || l.assignmentEpoch != sg.assignmentEpoch ||
		len(l.member) != len(sg.members) || !bytes.Equal(l.topology, topology)
	var members []*streamsMember
	if full {
		for _, id := range sortedKeys(sg.members) {
			members = append(members, sg.members[id])
		}
	} else {
		members = []*streamsMember{only}
	}
	d := &recordDiff{key: func(version int16, id string) []byte { return cgMemberKey(version, g.id, id) }}
	if full {
		gone := l.ids(func(id string) bool { return sg.members[id] == nil })
		d.tombstones(&l.memberLogs, gone, keyStreamsGroupCurrentMember, keyStreamsGroupTargetMember, keyStreamsGroupMember)
	}
	for _, m := range members {
		d.set(keyStreamsGroupMember, l.member, m.id, m.metadataValue())
	}
	if topology != nil && !bytes.Equal(l.topology, topology) {
		d.recs = append(d.recs, record{key: cgKey{version: keyStreamsGroupTopology, group: g.id}.encode(), value: topology})
	}
	if !l.written || l.meta != meta {
		d.recs = append(d.recs, record{key: cgKey{version: keyStreamsGroupMetadata, group: g.id}.encode(), value: encodeStreamsGroupValue(meta)})
	}
	if full {
		for _, id := range sortedKeys(sg.target) {
			d.set(keyStreamsGroupTargetMember, l.target, id, encodeStreamsTargetValue(sg.target[id]))
		}
		for id := range l.target {
			if _, ok := sg.target[id]; !ok && sg.members[id] != nil {
				d.set(keyStreamsGroupTargetMember, l.target, id, nil)
			}
		}
	}
	if l.assignmentEpoch != sg.assignmentEpoch {
		d.recs = append(d.recs, record{key: cgKey{version: keyStreamsGroupTargetMetadata, group: g.id}.encode(), value: encodeEpochValue(sg.assignmentEpoch)})
	}
	for _, m := range members {
		d.set(keyStreamsGroupCurrentMember, l.current, m.id, m.currentValue())
	}
	assignmentEpoch := sg.assignmentEpoch
	return d.recs, func() {
		d.commit()
		l.written, l.meta, l.assignmentEpoch, l.topology = true, meta, assignmentEpoch, topology
		if full {
			sg.dirty = false
		}
	}
}

// persistStreamsLocked appends the records of the group's changes before
// the change is answered.
func (g *group) persistStreamsLocked(only *streamsMember) error {
	recs, commit := g.streamsRecordsLocked(only)
	return g.appendChangesLocked("streams", recs, commit)
}

// streamsTombstonesLocked deletes an empty streams group's records, as
// Kafka's StreamsGroup.createGroupTombstoneRecords does.
func (g *group) streamsTombstonesLocked() []record {
	sg := g.streams
	if sg == nil || sg.log == nil || !sg.log.written {
		return nil
	}
	ids := sg.log.ids(nil)
	key := func(version int16, id string) []byte { return cgMemberKey(version, g.id, id) }
	recs := memberTombstones(ids, key, keyStreamsGroupCurrentMember)
	recs = append(recs, memberTombstones(ids, key, keyStreamsGroupTargetMember)...)
	recs = append(recs, cgGroupTombstone(keyStreamsGroupTargetMetadata, g.id))
	recs = append(recs, memberTombstones(ids, key, keyStreamsGroupMember)...)
	recs = append(recs, cgGroupTombstone(keyStreamsGroupTopology, g.id))
	return append(recs, cgGroupTombstone(keyStreamsGroupMetadata, g.id))
}

// replayedStreams gathers a streams group's records during load.
type replayedStreams struct {
	exists          bool
	meta            sgMetadataValue
	assignmentEpoch int32
	member          map[string]sgMemberValue
	target          map[string]tasksTuple
	current         map[string]sgCurrentValue
	raw             *streamsLog
}

func newReplayedStreams() *replayedStreams {
	return &replayedStreams{assignmentEpoch: -1, member: map[string]sgMemberValue{}, target: map[string]tasksTuple{},
		current: map[string]sgCurrentValue{}, raw: newStreamsLog()}
}

// replay applies one StreamsGroup* record; the latest record of a key wins
// and a tombstone deletes.
func (rs *replayedStreams) replay(k cgKey, value []byte) error {
	tomb := value == nil
	switch k.version {
	case keyStreamsGroupMetadata:
		if tomb {
			*rs = *newReplayedStreams()
			return nil
		}
		v, err := decodeStreamsGroupValue(value)
		if err != nil {
			return err
		}
		rs.exists, rs.meta = true, v
	case keyStreamsGroupTopology:
		if tomb {
			rs.raw.topology = nil
			return nil
		}
		if _, err := decodeTopologyValue(value); err != nil {
			return err
		}
		rs.raw.topology = slices.Clone(value)
	case keyStreamsGroupTargetMetadata:
		if tomb {
			rs.assignmentEpoch = -1
			return nil
		}
		e, err := decodeEpochValue(value)
		if err != nil {
			return err
		}
		rs.assignmentEpoch = e
	case keyStreamsGroupMember:
		return replayMemberRecord(k.member, value, rs.member, rs.raw.member, decodeStreamsMemberValue)
	case keyStreamsGroupTargetMember:
		return replayMemberRecord(k.member, value, rs.target, rs.raw.target, decodeStreamsTargetValue)
	case keyStreamsGroupCurrentMember:
		return replayMemberRecord(k.member, value, rs.current, rs.raw.current, decodeStreamsCurrentValue)
	}
	return nil
}

// restoreStreams makes g the streams group the records describe.
func (g *group) restoreStreams(rs *replayedStreams) {
	sg := newStreamsGroup()
	sg.epoch = rs.meta.epoch
	sg.failedDesc = rs.meta.failedDesc
	// The description itself is held in memory by the coordinator that
	// took the push (as Kafka's InMemoryTopologyDescriptionPlugin holds
	// it): a coordinator loading the group has none, so an epoch the
	// records say is stored becomes uncertain (-2), which asks the members
	// to push it again.
	sg.storedDesc = rs.meta.storedDesc
	if sg.storedDesc != -1 {
		sg.storedDesc = descEpochUncertain
	}
	sg.assignmentEpoch = max(rs.assignmentEpoch, 0)
	if rs.raw.topology != nil {
		sg.topology, _ = decodeTopologyValue(rs.raw.topology)
	}
	for id, mv := range rs.member {
		m := &streamsMember{
			id: id, instanceID: mv.instanceID, rackID: mv.rackID, clientID: mv.clientID, clientHost: mv.clientHost,
			rebalanceTimeout: mv.rebalanceTimeout, topologyEpoch: mv.topologyEpoch, processID: mv.processID,
			endpoint: mv.endpoint, clientTags: mv.clientTags,
			assigned: emptyTasks(), pendingActive: taskSet{},
		}
		if cur, ok := rs.current[id]; ok {
			m.epoch, m.prevEpoch = cur.epoch, cur.prevEpoch
			m.assigned, m.pendingActive = cur.assigned, cur.pending.active
			switch cur.state {
			case kafkaStateUnrevoked:
				m.state = memberUnrevoked
			case kafkaStateUnreleased:
				m.state = memberUnreleased
			}
		}
		// Until it says otherwise, a member owns what it was given.
		m.reported = m.assigned.clone()
		for t := range m.pendingActive {
			m.reported.active.add(t)
		}
		sg.members[id] = m
		if m.instanceID != nil {
			sg.static[*m.instanceID] = id
		}
		if t, ok := rs.target[id]; ok {
			sg.target[id] = t
		}
	}
	raw := rs.raw
	raw.written, raw.meta, raw.assignmentEpoch = true, rs.meta, rs.assignmentEpoch
	sg.log = raw
	g.kind = kindStreams
	g.consumer = nil
	g.streams = sg
}

// onLoadedStreamsLocked starts a loaded streams group's timers and
// configures its topology against today's topics without bumping the
// epoch, so the members keep their tasks.
func (g *group) onLoadedStreamsLocked() {
	sg := g.streams
	if sg.topology != nil {
		v := g.c.metaVersion.Load()
		sg.configured, sg.metaVersion, sg.metaValid = configureTopology(sg.topology, g.c.meta), v, true
	}
	settings := g.c.streamsSettings(g.id)
	sg.numStandby = settings.NumStandby
	for _, m := range sg.members {
		g.scheduleLocked(&m.sessionTimer, settings.Session, func() { g.expireStreamsMemberLocked(m, "session timeout") })
		if m.state == memberUnrevoked {
			epoch := m.epoch
			g.scheduleLocked(&m.rebalanceTimer, time.Duration(m.rebalanceTimeout)*time.Millisecond, func() {
				if m.epoch == epoch && m.state == memberUnrevoked {
					g.expireStreamsMemberLocked(m, "rebalance timeout")
				}
			})
		}
	}
}
