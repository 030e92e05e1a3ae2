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
	member          map[string][]byte
	target          map[string][]byte
	current         map[string][]byte
}

func newStreamsLog() *streamsLog {
	return &streamsLog{meta: sgMetadataValue{storedDesc: -1, failedDesc: -1}, assignmentEpoch: -1, member: map[string][]byte{}, target: map[string][]byte{}, current: map[string][]byte{}}
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
	type update struct {
		m    map[string][]byte
		id   string
		v    []byte
		tomb bool
	}
	var updates []update
	add := func(version int16, m map[string][]byte, id string, v []byte) {
		if v == nil {
			if _, ok := m[id]; !ok {
				return
			}
			recs = append(recs, record{key: encodeStreamsKey(version, g.id, id)})
			updates = append(updates, update{m: m, id: id, tomb: true})
			return
		}
		if old, ok := m[id]; ok && bytes.Equal(old, v) {
			return
		}
		recs = append(recs, record{key: encodeStreamsKey(version, g.id, id), value: v})
		updates = append(updates, update{m: m, id: id, v: v})
	}
	if full {
		seen := map[string]bool{}
		var gone []string
		for _, lm := range []map[string][]byte{l.member, l.target, l.current} {
			for id := range lm {
				if sg.members[id] == nil && !seen[id] {
					seen[id] = true
					gone = append(gone, id)
				}
			}
		}
		slices.Sort(gone)
		for _, id := range gone {
			add(keyStreamsGroupCurrentMember, l.current, id, nil)
			add(keyStreamsGroupTargetMember, l.target, id, nil)
			add(keyStreamsGroupMember, l.member, id, nil)
		}
	}
	for _, m := range members {
		add(keyStreamsGroupMember, l.member, m.id, m.metadataValue())
	}
	if topology != nil && !bytes.Equal(l.topology, topology) {
		recs = append(recs, record{key: encodeStreamsKey(keyStreamsGroupTopology, g.id, ""), value: topology})
	}
	if !l.written || l.meta != meta {
		recs = append(recs, record{key: encodeStreamsKey(keyStreamsGroupMetadata, g.id, ""), value: encodeStreamsGroupValue(meta)})
	}
	if full {
		for _, id := range sortedKeys(sg.target) {
			add(keyStreamsGroupTargetMember, l.target, id, encodeStreamsTargetValue(sg.target[id]))
		}
		for id := range l.target {
			if _, ok := sg.target[id]; !ok && sg.members[id] != nil {
				add(keyStreamsGroupTargetMember, l.target, id, nil)
			}
		}
	}
	if l.assignmentEpoch != sg.assignmentEpoch {
		recs = append(recs, record{key: encodeStreamsKey(keyStreamsGroupTargetMetadata, g.id, ""), value: encodeEpochValue(sg.assignmentEpoch)})
	}
	for _, m := range members {
		add(keyStreamsGroupCurrentMember, l.current, m.id, m.currentValue())
	}
	assignmentEpoch := sg.assignmentEpoch
	return recs, func() {
		for _, u := range updates {
			if u.tomb {
				delete(u.m, u.id)
			} else {
				u.m[u.id] = u.v
			}
		}
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
	if len(recs) == 0 {
		commit()
		return nil
	}
	if err := g.appendRecords(recs); err != nil {
		g.c.logger.Warn("writing streams group state failed", "group", g.id, "records", len(recs), "err", err)
		return err
	}
	commit()
	return nil
}

// streamsTombstonesLocked deletes an empty streams group's records, as
// Kafka's StreamsGroup.createGroupTombstoneRecords does.
func (g *group) streamsTombstonesLocked() []record {
	sg := g.streams
	if sg == nil || sg.log == nil || !sg.log.written {
		return nil
	}
	l := sg.log
	var ids []string
	seen := map[string]bool{}
	for _, m := range []map[string][]byte{l.member, l.target, l.current} {
		for id := range m {
			if !seen[id] {
				seen[id] = true
				ids = append(ids, id)
			}
		}
	}
	slices.Sort(ids)
	var recs []record
	for _, id := range ids {
		recs = append(recs, record{key: encodeStreamsKey(keyStreamsGroupCurrentMember, g.id, id)})
	}
	for _, id := range ids {
		recs = append(recs, record{key: encodeStreamsKey(keyStreamsGroupTargetMember, g.id, id)})
	}
	recs = append(recs, record{key: encodeStreamsKey(keyStreamsGroupTargetMetadata, g.id, "")})
	for _, id := range ids {
		recs = append(recs, record{key: encodeStreamsKey(keyStreamsGroupMember, g.id, id)})
	}
	recs = append(recs, record{key: encodeStreamsKey(keyStreamsGroupTopology, g.id, "")})
	recs = append(recs, record{key: encodeStreamsKey(keyStreamsGroupMetadata, g.id, "")})
	return recs
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
		if tomb {
			delete(rs.member, k.member)
			delete(rs.raw.member, k.member)
			return nil
		}
		v, err := decodeStreamsMemberValue(value)
		if err != nil {
			return err
		}
		rs.member[k.member] = v
		rs.raw.member[k.member] = slices.Clone(value)
	case keyStreamsGroupTargetMember:
		if tomb {
			delete(rs.target, k.member)
			delete(rs.raw.target, k.member)
			return nil
		}
		v, err := decodeStreamsTargetValue(value)
		if err != nil {
			return err
		}
		rs.target[k.member] = v
		rs.raw.target[k.member] = slices.Clone(value)
	case keyStreamsGroupCurrentMember:
		if tomb {
			delete(rs.current, k.member)
			delete(rs.raw.current, k.member)
			return nil
		}
		v, err := decodeStreamsCurrentValue(value)
		if err != nil {
			return err
		}
		rs.current[k.member] = v
		rs.raw.current[k.member] = slices.Clone(value)
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
