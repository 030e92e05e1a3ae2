package share

import (
	"bytes"
	"errors"
	"hash/fnv"
	"maps"
	"slices"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Share groups' membership in __consumer_offsets, as Kafka 4.4 keeps it:
// a heartbeat that changes the group appends the records of what changed
// (member metadata, group epoch, target assignments and their epoch,
// current assignments; tombstones for members gone) before it is answered,
// and a coordinator taking over the partition loads them (Load), so members
// keep their epochs and assignments across a coordinator move.

// groupLog is what a group's records in the log say, as the encoded values
// last appended (or loaded), so that a change writes only the records that
// differ. A failed append leaves it as it was: the next change writes the
// difference again.
type groupLog struct {
	written                 bool  // the ShareGroupMetadata record exists
	epoch                   int32 // its epoch
	assignEpoch             int32 // -1: no target assignment metadata record
	member, target, current map[string][]byte
	spm                     []byte // the ShareGroupStatePartitionMetadata value; nil: none
}

func newGroupLog() *groupLog {
	return &groupLog{assignEpoch: -1, member: map[string][]byte{}, target: map[string][]byte{}, current: map[string][]byte{}}
}

func (l *groupLog) ids() []string {
	seen := map[string]bool{}
	for _, m := range []map[string][]byte{l.member, l.target, l.current} {
		for id := range m {
			seen[id] = true
		}
	}
	return slices.Sorted(maps.Keys(seen))
}

// writeLocks serializes the writes of one group (a stripe of groups), so
// that its records reach the log in the order they were computed, without
// holding the coordinator's lock during the append.
type writeLocks [64]sync.Mutex

func (w *writeLocks) of(groupID string) *sync.Mutex {
	h := fnv.New32a()
	h.Write([]byte(groupID))
	return &w[h.Sum32()%uint32(len(w))]
}

// byID turns an assignment by topic name into one by topic id; topics
// that no longer exist are left out.
func (c *Coordinator) byID(a map[string][]int32) topicParts {
	out := topicParts{}
	for t, ps := range a {
		if id, _, ok := c.cfg.Topic(t); ok && len(ps) > 0 {
			out[id] = append(out[id], ps...)
		}
	}
	return out
}

// byName is byID's inverse, for loading.
func (c *Coordinator) byName(a topicParts) map[string][]int32 {
	out := map[string][]int32{}
	if c.cfg.TopicName == nil {
		return out
	}
	for id, ps := range a {
		if t, ok := c.cfg.TopicName(id); ok {
			out[t] = slices.Sorted(slices.Values(ps))
		}
	}
	return out
}

// recordsLocked returns the records that bring the log to g's state, in
// the order Kafka writes them: removed members' current assignment, target
// and metadata tombstones; member metadata and the group epoch; target
// assignments and their epoch; current assignments. commit makes g.log
// reflect them once appended. c.mu held.
func (c *Coordinator) recordsLocked(g *group) (recs []Record, commit func()) {
	l := g.log
	if l == nil {
		l = newGroupLog()
		g.log = l
	}
	var updates []func()
	set := func(typ int16, logged map[string][]byte, id string, v []byte) {
		old, ok := logged[id]
		switch {
		case v == nil && !ok, v != nil && ok && bytes.Equal(old, v):
			return
		}
		recs = append(recs, Record{Key: recordKey{typ: typ, group: g.id, member: id}.encode(), Value: v})
		if v == nil {
			updates = append(updates, func() { delete(logged, id) })
		} else {
			updates = append(updates, func() { logged[id] = v })
		}
	}
	for _, id := range l.ids() {
		if g.members[id] == nil {
			set(KeyCurrentMember, l.current, id, nil)
			set(KeyTargetMember, l.target, id, nil)
			set(KeyMemberMetadata, l.member, id, nil)
		}
	}
	ids := slices.Sorted(maps.Keys(g.members))
	for _, id := range ids {
		m := g.members[id]
		mv := memberValue{rack: m.rack, clientID: m.clientID, clientHost: m.host, topics: m.topics}
		if mv.topics == nil {
			mv.topics = []string{}
		}
		set(KeyMemberMetadata, l.member, id, mv.encode())
	}
	if !l.written || l.epoch != g.epoch {
		recs = append(recs, Record{Key: recordKey{typ: KeyGroupMetadata, group: g.id}.encode(), Value: encodeEpoch(g.epoch)})
	}
	for _, id := range ids {
		if t := g.members[id].target; t != nil {
			set(KeyTargetMember, l.target, id, encodeTarget(c.byID(t)))
		}
	}
	if l.assignEpoch != g.assignEpoch {
		recs = append(recs, Record{Key: recordKey{typ: KeyTargetMetadata, group: g.id}.encode(), Value: encodeEpoch(g.assignEpoch)})
	}
	for _, id := range ids {
		m := g.members[id]
		cv := currentValue{epoch: m.epoch, prevEpoch: m.prevEpoch, assigned: c.byID(m.assigned)}
		set(KeyCurrentMember, l.current, id, cv.encode())
	}
	// The share-partitions initialized last, as Kafka appends the record
	// of the partitions a heartbeat starts initializing after its others.
	spm := l.spm
	if g.spm != nil {
		if v := g.spm.encode(c.topicName); !bytes.Equal(v, l.spm) {
			recs = append(recs, Record{Key: recordKey{typ: KeyStatePartitionMetadata, group: g.id}.encode(), Value: v})
			spm = v
		}
	}
	epoch, assignEpoch := g.epoch, g.assignEpoch
	return recs, func() {
		for _, u := range updates {
			u()
		}
		l.written, l.epoch, l.assignEpoch, l.spm = true, epoch, assignEpoch, spm
	}
}

// topicName is a topic id's name for the records, Kafka's "<UNKNOWN>" for
// a topic that no longer exists.
func (c *Coordinator) topicName(id [16]byte) string {
	if c.cfg.TopicName != nil {
		if t, ok := c.cfg.TopicName(id); ok {
			return t
		}
	}
	return unknownTopicName
}

// tombstonesLocked deletes every record of g, as Kafka's
// ShareGroup.createGroupTombstoneRecords: current assignments, targets,
// target metadata, members, the state partition metadata and the group.
func (g *group) tombstonesLocked() []Record {
	l := g.log
	if l == nil || !l.written {
		return nil
	}
	ids := l.ids()
	var recs []Record
	for _, typ := range []int16{KeyCurrentMember, KeyTargetMember} {
		for _, id := range ids {
			recs = append(recs, Record{Key: recordKey{typ: typ, group: g.id, member: id}.encode()})
		}
	}
	recs = append(recs, Record{Key: recordKey{typ: KeyTargetMetadata, group: g.id}.encode()})
	for _, id := range ids {
		recs = append(recs, Record{Key: recordKey{typ: KeyMemberMetadata, group: g.id, member: id}.encode()})
	}
	recs = append(recs, Record{Key: recordKey{typ: KeyStatePartitionMetadata, group: g.id}.encode()})
	return append(recs, Record{Key: recordKey{typ: KeyGroupMetadata, group: g.id}.encode()})
}

// changesLocked returns the write of g's changed records, nil when there
// is nothing to write or no log. It is called with c.mu held; the write
// runs without it, under the group's write lock.
func (c *Coordinator) changesLocked(g *group) func() error {
	if c.cfg.Append == nil || g == nil {
		return nil
	}
	recs, commit := c.recordsLocked(g)
	if len(recs) == 0 {
		commit()
		return nil
	}
	return func() error {
		if err := c.cfg.Append(g.id, recs); err != nil {
			c.cfg.Logger.Warn("writing share group state failed", "group", g.id, "records", len(recs), "err", err)
			return err
		}
		c.mu.Lock()
		commit()
		c.mu.Unlock()
		return nil
	}
}

// Flush writes what a group's records lack (members expired since its last
// write); it returns the write's error.
func (c *Coordinator) Flush(groupID string) error {
	if c.cfg.Append == nil {
		return nil
	}
	wl := c.wlocks.of(groupID)
	wl.Lock()
	defer wl.Unlock()
	c.mu.Lock()
	var write func() error
	if g := c.groups[groupID]; g != nil && g.log != nil && g.log.written {
		write = c.changesLocked(g)
	}
	c.mu.Unlock()
	if write == nil {
		return nil
	}
	return write()
}

// appendErrorCode is the code a request answers when its records could
// not be written: the append's own Kafka code, else NOT_COORDINATOR (the
// client finds the coordinator again).
func appendErrorCode(err error) int16 {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	return kerr.NotCoordinator.Code
}

// replayed gathers a share group's records during Load.
type replayed struct {
	exists             bool
	epoch, assignEpoch int32
	member             map[string]memberValue
	target             map[string]topicParts
	current            map[string]currentValue
	spm                *spMeta
	raw                *groupLog
}

func (r *replayed) apply(k recordKey, v []byte) error {
	if v == nil {
		switch k.typ {
		case KeyGroupMetadata:
			*r = *newReplayed()
		case KeyTargetMetadata:
			r.assignEpoch = -1
		case KeyMemberMetadata:
			delete(r.member, k.member)
			delete(r.raw.member, k.member)
		case KeyTargetMember:
			delete(r.target, k.member)
			delete(r.raw.target, k.member)
		case KeyCurrentMember:
			delete(r.current, k.member)
			delete(r.raw.current, k.member)
		case KeyStatePartitionMetadata:
			r.spm, r.raw.spm = nil, nil
		}
		return nil
	}
	switch k.typ {
	case KeyGroupMetadata:
		e, err := decodeEpoch(v)
		if err != nil {
			return err
		}
		r.exists, r.epoch = true, e
	case KeyTargetMetadata:
		e, err := decodeEpoch(v)
		if err != nil {
			return err
		}
		r.assignEpoch = e
	case KeyMemberMetadata:
		mv, err := decodeMemberValue(v)
		if err != nil {
			return err
		}
		r.member[k.member], r.raw.member[k.member] = mv, slices.Clone(v)
	case KeyTargetMember:
		t, err := decodeTarget(v)
		if err != nil {
			return err
		}
		r.target[k.member], r.raw.target[k.member] = t, slices.Clone(v)
	case KeyCurrentMember:
		cv, err := decodeCurrent(v)
		if err != nil {
			return err
		}
		r.current[k.member], r.raw.current[k.member] = cv, slices.Clone(v)
	case KeyStatePartitionMetadata:
		m, err := decodeSPMeta(v)
		if err != nil {
			return err
		}
		r.spm, r.raw.spm = m, slices.Clone(v)
	}
	// ShareGroupPartitionMetadata (deprecated since Kafka 4.1) is ignored.
	return nil
}

func newReplayed() *replayed {
	return &replayed{assignEpoch: -1, member: map[string]memberValue{}, target: map[string]topicParts{},
		current: map[string]currentValue{}, raw: newGroupLog()}
}

// Load makes the share groups of one __consumer_offsets partition those
// its records describe (in log order, the latest of a key winning), as a
// coordinator taking the partition over does: members keep their epochs,
// subscriptions and assignments, and are expired if they do not heartbeat
// within the session timeout from now. Groups of that partition held from
// an earlier time here are replaced. It returns the groups loaded.
func (c *Coordinator) Load(partition int32, recs []Record) int {
	byGroup := map[string]*replayed{}
	for _, rec := range recs {
		k, err := decodeGroupKey(rec.Key)
		if err != nil {
			c.cfg.Logger.Warn("skipping unreadable share group key", "partition", partition, "err", err)
			continue
		}
		r := byGroup[k.group]
		if r == nil {
			if rec.Value == nil {
				continue
			}
			r = newReplayed()
			byGroup[k.group] = r
		}
		if err := r.apply(k, rec.Value); err != nil {
			c.cfg.Logger.Warn("skipping unreadable share group value", "partition", partition, "group", k.group,
				"key_type", k.typ, "err", err)
		}
	}
	now := c.cfg.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cfg.PartitionOf != nil {
		for id := range c.groups {
			if c.cfg.PartitionOf(id) == partition {
				delete(c.groups, id)
			}
		}
	}
	n := 0
	for id, r := range byGroup {
		if !r.exists {
			continue
		}
		g := &group{id: id, epoch: r.epoch, assignEpoch: max(r.assignEpoch, 0), members: map[string]*member{}, spm: r.spm}
		for mid, mv := range r.member {
			m := &member{id: mid, clientID: mv.clientID, host: mv.clientHost, rack: mv.rack,
				topics: mv.topics, lastSeen: now, assigned: map[string][]int32{}}
			if cv, ok := r.current[mid]; ok {
				m.epoch, m.prevEpoch, m.assigned = cv.epoch, cv.prevEpoch, c.byName(cv.assigned)
			}
			if t, ok := r.target[mid]; ok {
				m.target = c.byName(t)
			}
			g.members[mid] = m
		}
		// The subscribed topics as they are now, so the members keep their
		// epoch unless a partition count changes at their next heartbeat.
		g.metaHash = c.metaHashLocked(g)
		raw := r.raw
		raw.written, raw.epoch, raw.assignEpoch = true, r.epoch, r.assignEpoch
		g.log = raw
		c.groups[id] = g
		c.known[id] = now
		n++
	}
	if n > 0 {
		c.cfg.Logger.Info("loaded share groups", "partition", partition, "groups", n)
	}
	return n
}
