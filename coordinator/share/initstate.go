package share

import (
	"maps"
	"slices"
)

// The share-partitions a group's coordinator initialized, as Kafka 4.4's
// GroupMetadataManager keeps them in the ShareGroupStatePartitionMetadata
// record: a heartbeat finding partitions of the subscribed topics not yet
// initialized records them as initializing with its other records; once
// those are written, InitializeShareGroupState (Config.InitializeState,
// state epoch the group epoch, start offset -1 for a new topic, which the
// share-partition's leader takes from share.auto.offset.reset, 0 for a
// known topic's new partitions) sets their state at the share
// coordinators, and a second record moves those that succeeded to
// initialized and drops the others, which the next heartbeat tries again.
// Kafka answers the heartbeat before the initialization and assigns only
// initialized partitions; Strait, which assigns at once, answers after it,
// so that a member's first fetch finds the state. DeleteGroups and
// DeleteShareGroupOffsets delete the state of the partitions recorded here
// only, marking their topics deleting meanwhile.

// hasAll reports whether ps (sorted, distinct) holds every partition
// below n.
func hasAll(ps []int32, n int32) bool {
	return int32(len(ps)) >= n && (n == 0 || ps[n-1] == n-1)
}

// addParts adds ps to a[id], keeping it sorted and distinct.
func (a topicParts) addParts(id [16]byte, ps []int32) {
	out := append(slices.Clone(a[id]), ps...)
	slices.Sort(out)
	a[id] = slices.Compact(out)
}

// removeParts removes ps from a[id], and the topic when none is left.
func (a topicParts) removeParts(id [16]byte, ps []int32) {
	cur := slices.DeleteFunc(slices.Clone(a[id]), func(p int32) bool { return slices.Contains(ps, p) })
	if len(cur) == 0 {
		delete(a, id)
		return
	}
	a[id] = cur
}

func (a topicParts) clone() topicParts {
	out := topicParts{}
	for id, ps := range a {
		out[id] = slices.Clone(ps)
	}
	return out
}

// markNewLocked records as initializing every partition of the topics
// g's members subscribe to that is not initialized yet (nor being
// deleted: a topic initialized again leaves the deleting set, as Kafka's
// addInitializingTopicsRecords). A partition still initializing from an
// earlier heartbeat, whose initialization a failure or a coordinator move
// cut short, is tried again: initializations of a group run under its
// write lock, so none is under way. c.mu held.
func (c *Coordinator) markNewLocked(g *group) {
	topics := map[string]bool{}
	for _, m := range g.members {
		for _, t := range m.topics {
			topics[t] = true
		}
	}
	for _, t := range slices.Sorted(maps.Keys(topics)) {
		id, n, ok := c.cfg.Topic(t)
		if !ok || n <= 0 {
			continue
		}
		var done []int32
		if g.spm != nil {
			done = g.spm.initialized[id]
			if hasAll(done, n) {
				continue
			}
		}
		var need []int32
		for p := int32(0); p < n; p++ {
			if _, found := slices.BinarySearch(done, p); !found {
				need = append(need, p)
			}
		}
		if len(need) == 0 {
			continue
		}
		if g.spm == nil {
			g.spm = newSPMeta()
		}
		g.spm.initializing.addParts(id, need)
		delete(g.spm.deleting, id)
	}
}

// InitTopic is one topic's share-partitions to initialize and their start
// offset: -1 (the share-partition's leader starts it from
// share.auto.offset.reset) for a topic new to the group, 0 for partitions
// added to a topic the group has initialized before, as Kafka's
// buildInitializeShareGroupStateRequest (so that no record of a new
// partition is skipped).
type InitTopic struct {
	ID         [16]byte
	Partitions []int32
	Start      int64
}

// initializeNew initializes the share-partitions groupID's last heartbeat
// recorded as initializing and records the outcome (a failed write of that
// record is logged: the next heartbeat writes it). Called under the
// group's write lock, without c.mu.
func (c *Coordinator) initializeNew(groupID string) {
	c.mu.Lock()
	g := c.groups[groupID]
	if g == nil || g.spm == nil || len(g.spm.initializing) == 0 {
		c.mu.Unlock()
		return
	}
	parts, epoch := g.spm.initializing.clone(), g.epoch
	var topics []InitTopic
	for _, id := range sortedIDs(parts) {
		start := int64(-1)
		if len(g.spm.initialized[id]) > 0 {
			start = 0
		}
		topics = append(topics, InitTopic{ID: id, Partitions: parts[id], Start: start})
	}
	c.mu.Unlock()
	ok := parts
	if c.cfg.InitializeState != nil {
		ok = c.cfg.InitializeState(groupID, epoch, topics)
	}
	c.mu.Lock()
	if c.groups[groupID] != g {
		c.mu.Unlock()
		return
	}
	for id, ps := range parts {
		g.spm.initializing.removeParts(id, ps)
	}
	for id, ps := range ok {
		g.spm.initialized.addParts(id, ps)
	}
	write := c.changesLocked(g)
	c.mu.Unlock()
	if write != nil {
		_ = write()
	}
}

// InitializedPartitions returns the share-partitions groupID has
// initialized (DescribeShareGroupOffsets of all its topics, as Kafka's
// initializedShareGroupPartitions).
func (c *Coordinator) InitializedPartitions(groupID string) map[[16]byte][]int32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.groups[groupID]
	if g == nil || g.spm == nil {
		return map[[16]byte][]int32{}
	}
	return g.spm.initialized.clone()
}

// MarkInitialized records share-partitions whose state an
// AlterShareGroupOffsets initialized, as Kafka's group coordinator does
// once the persister answers, and writes the record.
func (c *Coordinator) MarkInitialized(groupID string, id [16]byte, parts []int32) error {
	return c.updateSPM(groupID, func(m *spMeta) {
		m.initializing.removeParts(id, parts)
		m.initialized.addParts(id, parts)
		delete(m.deleting, id)
	})
}

// BeginDelete is the first step of deleting the stored state of groupID's
// share-partitions (DeleteGroups: topics nil, every topic; or
// DeleteShareGroupOffsets: those topics), as Kafka's
// sharePartitionsEligibleForDeletion: the topics' initialized and
// initializing partitions leave those sets, the topics are recorded as
// deleting, and the partitions to delete are returned: those, plus every
// partition of a topic an earlier deletion left deleting (the record
// names no partition of those). A failed write answers its error code:
// nothing is to be deleted then.
func (c *Coordinator) BeginDelete(groupID string, topics [][16]byte) (map[[16]byte][]int32, int16) {
	out := topicParts{}
	err := c.updateSPM(groupID, func(m *spMeta) {
		ids := topics
		if ids == nil {
			seen := map[[16]byte]bool{}
			for _, a := range []topicParts{m.initialized, m.initializing} {
				for id := range a {
					seen[id] = true
				}
			}
			for id := range m.deleting {
				seen[id] = true
			}
			ids = slices.Collect(maps.Keys(seen))
		}
		for _, id := range ids {
			if name := c.topicName(id); m.deleting[id] && name != unknownTopicName {
				if _, n, ok := c.cfg.Topic(name); ok {
					for p := int32(0); p < n; p++ {
						out[id] = append(out[id], p)
					}
				}
			}
			had := false
			for _, a := range []topicParts{m.initialized, m.initializing} {
				if ps, ok := a[id]; ok {
					out.addParts(id, ps)
					delete(a, id)
					had = true
				}
			}
			if had {
				m.deleting[id] = true
			}
		}
	})
	if err != nil {
		return nil, appendErrorCode(err)
	}
	for id, ps := range out {
		slices.Sort(ps)
		out[id] = slices.Compact(ps)
	}
	return out, 0
}

// EndDelete records that the stored state of topics (nil: every topic)
// of groupID is deleted: they leave the deleting set.
func (c *Coordinator) EndDelete(groupID string, topics [][16]byte) error {
	return c.updateSPM(groupID, func(m *spMeta) {
		if topics == nil {
			clear(m.deleting)
		}
		for _, id := range topics {
			delete(m.deleting, id)
		}
	})
}

// updateSPM applies fn to groupID's record of initialized partitions and
// writes it, under the group's write lock. A group that is not here is
// left alone.
func (c *Coordinator) updateSPM(groupID string, fn func(*spMeta)) error {
	if c.cfg.Append != nil {
		wl := c.wlocks.of(groupID)
		wl.Lock()
		defer wl.Unlock()
	}
	c.mu.Lock()
	g := c.groups[groupID]
	if g == nil {
		c.mu.Unlock()
		return nil
	}
	if g.spm == nil {
		g.spm = newSPMeta()
	}
	fn(g.spm)
	write := c.changesLocked(g)
	c.mu.Unlock()
	if write != nil {
		return write()
	}
	return nil
}
