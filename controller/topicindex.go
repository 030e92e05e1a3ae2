package controller

// The topics of a metadata snapshot, kept so that a change costs what it
// touches, not what the cluster holds: with 100,000 partitions, a leader or
// ISR change in one of them must not copy every topic (issue 22).
//
//   - topicIndex is a persistent map: its entries are spread over
//     topicShards shards, and a change copies the array of shard pointers
//     and only the shards it touches (Kafka's MetadataImage keeps
//     persistent maps for the same reason).
//   - The names, sorted, are a separate slice shared between snapshots
//     until a topic is created or deleted (an insertion is one copy of the
//     slice); the sorted list of topics is built from it once per snapshot,
//     on the first read that needs every topic.

import (
	"hash/maphash"
	"maps"
	"slices"
	"sort"
	"sync"
)

const topicShards = 256

var topicSeed = maphash.MakeSeed()

// topicIndex maps names and ids to topics. Immutable once published; with
// copies made by edit.
type topicIndex struct {
	byName [topicShards]map[string]*TopicInfo
	byID   [topicShards]map[[16]byte]*TopicInfo
	names  []string // sorted
	n      int

	listOnce sync.Once
	list     []*TopicInfo // sorted by name; built by sorted
}

var emptyTopicIndex = &topicIndex{}

func nameShard(name string) int { return int(maphash.String(topicSeed, name) % topicShards) }

// Topic ids are random (Kafka's UUIDs): their bytes spread evenly.
func idShard(id [16]byte) int { return int(id[0]^id[7]^id[15]) % topicShards }

func (x *topicIndex) get(name string) *TopicInfo { return x.byName[nameShard(name)][name] }

func (x *topicIndex) getByID(id [16]byte) *TopicInfo { return x.byID[idShard(id)][id] }

func (x *topicIndex) len() int { return x.n }

// sorted is every topic by name, built once per index.
func (x *topicIndex) sorted() []*TopicInfo {
	x.listOnce.Do(func() {
		x.list = make([]*TopicInfo, len(x.names))
		for i, n := range x.names {
			x.list[i] = x.get(n)
		}
	})
	return x.list
}

// topicEdit builds the next index from prev: the shards it touches are
// copied on first write, everything else is shared.
type topicEdit struct {
	prev, next     *topicIndex
	ownName, ownID [topicShards]bool
	added, removed []string
}

func (x *topicIndex) edit() *topicEdit {
	next := &topicIndex{byName: x.byName, byID: x.byID, names: x.names, n: x.n}
	return &topicEdit{prev: x, next: next}
}

func (e *topicEdit) nameMap(name string) map[string]*TopicInfo {
	s := nameShard(name)
	if !e.ownName[s] {
		e.ownName[s] = true
		if e.next.byName[s] == nil {
			e.next.byName[s] = map[string]*TopicInfo{}
		} else {
			e.next.byName[s] = maps.Clone(e.next.byName[s])
		}
	}
	return e.next.byName[s]
}

func (e *topicEdit) idMap(id [16]byte) map[[16]byte]*TopicInfo {
	s := idShard(id)
	if !e.ownID[s] {
		e.ownID[s] = true
		if e.next.byID[s] == nil {
			e.next.byID[s] = map[[16]byte]*TopicInfo{}
		} else {
			e.next.byID[s] = maps.Clone(e.next.byID[s])
		}
	}
	return e.next.byID[s]
}

// put sets t (replacing a topic of the same name, whose id was removed by
// remove if it differs).
func (e *topicEdit) put(t *TopicInfo) {
	m := e.nameMap(t.Name)
	if _, ok := m[t.Name]; !ok {
		e.next.n++
		e.added = append(e.added, t.Name)
	}
	m[t.Name] = t
	e.idMap(t.ID)[t.ID] = t
}

// remove deletes the topic t (as the previous index had it).
func (e *topicEdit) remove(t *TopicInfo) {
	m := e.nameMap(t.Name)
	if _, ok := m[t.Name]; ok {
		delete(m, t.Name)
		e.next.n--
		e.removed = append(e.removed, t.Name)
	}
	delete(e.idMap(t.ID), t.ID)
}

// done returns the new index; the previous one is unchanged.
func (e *topicEdit) done() *topicIndex {
	if len(e.added) == 0 && len(e.removed) == 0 {
		return e.next
	}
	// A name removed and put back in the same edit stays where it was.
	gone := make(map[string]bool, len(e.removed))
	for _, n := range e.removed {
		gone[n] = true
	}
	var add []string
	for _, n := range e.added {
		if gone[n] {
			delete(gone, n)
		} else {
			add = append(add, n)
		}
	}
	if len(add) == 0 && len(gone) == 0 {
		return e.next
	}
	names := e.prev.names
	if len(gone) > 0 {
		names = slices.DeleteFunc(slices.Clone(names), func(n string) bool { return gone[n] })
	}
	switch {
	case len(add) == 1:
		// The common case, a topic created: one copy, no sort.
		i := sort.SearchStrings(names, add[0])
		names = slices.Insert(slices.Clip(names), i, add[0])
	case len(add) > 1:
		slices.Sort(add)
		merged := make([]string, 0, len(names)+len(add))
		i, j := 0, 0
		for i < len(names) || j < len(add) {
			if j == len(add) || i < len(names) && names[i] < add[j] {
				merged = append(merged, names[i])
				i++
			} else {
				merged = append(merged, add[j])
				j++
			}
		}
		names = merged
	}
	e.next.names = names
	return e.next
}

// newTopicIndex is an index of ts (distinct names and ids).
func newTopicIndex(ts ...*TopicInfo) *topicIndex {
	ed := emptyTopicIndex.edit()
	for _, t := range ts {
		ed.put(t)
	}
	return ed.done()
}
