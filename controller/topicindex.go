package controller

// The topics of a metadata snapshot, kept so that a change costs what it
// touches, not what the cluster holds: with 100,000 partitions, a leader or
// ISR change in one of them must not copy every topic (issue 22).
//
//   - topicIndex is a persistent map: its entries are spread over
//     topicShards shards, and a change copies the array of shard pointers
//     and only the shards it touches (Kafka's MetadataImage keeps
//     persistent maps for the same reason).
//   - The names, sorted, are kept in chunks of at most nameChunk names
//     (sortedNames): creating or deleting a topic copies the list of chunks
//     and the one chunk it changes, so creating 100,000 topics one by one
//     does not copy 100,000 names each time; the sorted list of topics is
//     built from them once per snapshot, on the first read that needs every
//     topic.

import (
	"hash/maphash"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
)

const topicShards = 256

var topicSeed = maphash.MakeSeed()

// topicIndex maps names and ids to topics. Immutable once published; with
// copies made by edit.
type topicIndex struct {
	byName [topicShards]map[string]*TopicInfo
	byID   [topicShards]map[[16]byte]*TopicInfo
	// byUnified: the names holding '.' or '_', by the name with every '.'
	// made '_' (Kafka refuses a topic colliding with one so).
	byUnified [topicShards]map[string][]string
	names     sortedNames
	n         int

	listOnce sync.Once
	list     []*TopicInfo // sorted by name; built by sorted
}

var emptyTopicIndex = &topicIndex{}

func nameShard(name string) int { return int(maphash.String(topicSeed, name) % topicShards) }

func idShard(id [16]byte) int { return int(maphash.Bytes(topicSeed, id[:]) % topicShards) }

func (x *topicIndex) get(name string) *TopicInfo { return x.byName[nameShard(name)][name] }

func (x *topicIndex) getByID(id [16]byte) *TopicInfo { return x.byID[idShard(id)][id] }

func (x *topicIndex) len() int { return x.n }

// sorted is every topic by name, built once per index.
func (x *topicIndex) sorted() []*TopicInfo {
	x.listOnce.Do(func() {
		x.list = make([]*TopicInfo, 0, x.n)
		for _, c := range x.names {
			for _, n := range c {
				x.list = append(x.list, x.get(n))
			}
		}
	})
	return x.list
}

// topicEdit builds the next index from prev: the shards it touches are
// copied on first write, everything else is shared.
type topicEdit struct {
	prev, next              *topicIndex
	ownName, ownID, ownUnif [topicShards]bool
	added, removed          []string
}

func (x *topicIndex) edit() *topicEdit {
	next := &topicIndex{byName: x.byName, byID: x.byID, byUnified: x.byUnified, names: x.names, n: x.n}
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

func (e *topicEdit) unifiedMap(u string) map[string][]string {
	s := nameShard(u)
	if !e.ownUnif[s] {
		e.ownUnif[s] = true
		if e.next.byUnified[s] == nil {
			e.next.byUnified[s] = map[string][]string{}
		} else {
			e.next.byUnified[s] = maps.Clone(e.next.byUnified[s])
		}
	}
	return e.next.byUnified[s]
}

// colliding is the names that collide with name ('.' and '_' alike).
func (x *topicIndex) colliding(name string) []string {
	u := unifyCollisionChars(name)
	return x.byUnified[nameShard(u)][u]
}

// put sets t (replacing a topic of the same name, whose id was removed by
// remove if it differs).
func (e *topicEdit) put(t *TopicInfo) {
	m := e.nameMap(t.Name)
	if _, ok := m[t.Name]; !ok {
		e.next.n++
		e.added = append(e.added, t.Name)
		if strings.ContainsAny(t.Name, "._") {
			u := unifyCollisionChars(t.Name)
			um := e.unifiedMap(u)
			um[u] = append(slices.Clip(um[u]), t.Name)
		}
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
		if strings.ContainsAny(t.Name, "._") {
			u := unifyCollisionChars(t.Name)
			um := e.unifiedMap(u)
			if rest := slices.DeleteFunc(slices.Clone(um[u]), func(n string) bool { return n == t.Name }); len(rest) > 0 {
				um[u] = rest
			} else {
				delete(um, u)
			}
		}
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
	for n := range gone {
		names = names.remove(n)
	}
	for _, n := range add {
		names = names.insert(n)
	}
	e.next.names = names
	return e.next
}

// nameChunk bounds a chunk of sortedNames; a full chunk is split in two.
const nameChunk = 512

// sortedNames is a sorted list of names in chunks, none empty, each sorted
// and before the next. Immutable: insert and remove return a new list that
// shares the chunks they did not change.
type sortedNames [][]string

// chunkFor is the index of the chunk where name is or would go.
func (s sortedNames) chunkFor(name string) int {
	i := sort.Search(len(s), func(i int) bool { c := s[i]; return c[len(c)-1] >= name })
	return min(i, len(s)-1)
}

func (s sortedNames) insert(name string) sortedNames {
	if len(s) == 0 {
		return sortedNames{{name}}
	}
	ci := s.chunkFor(name)
	c := s[ci]
	i, found := slices.BinarySearch(c, name)
	if found {
		return s
	}
	nc := make([]string, 0, len(c)+1)
	nc = append(append(append(nc, c[:i]...), name), c[i:]...)
	if len(nc) <= nameChunk {
		out := slices.Clone(s)
		out[ci] = nc
		return out
	}
	half := len(nc) / 2
	out := make(sortedNames, 0, len(s)+1)
	out = append(out, s[:ci]...)
	out = append(out, nc[:half:half], nc[half:])
	return append(out, s[ci+1:]...)
}

func (s sortedNames) remove(name string) sortedNames {
	if len(s) == 0 {
		return s
	}
	ci := s.chunkFor(name)
	c := s[ci]
	i, found := slices.BinarySearch(c, name)
	if !found {
		return s
	}
	if len(c) == 1 {
		return slices.Delete(slices.Clone(s), ci, ci+1)
	}
	out := slices.Clone(s)
	out[ci] = slices.Delete(slices.Clone(c), i, i+1)
	return out
}

// newTopicIndex is an index of ts (distinct names and ids).
func newTopicIndex(ts ...*TopicInfo) *topicIndex {
	ed := emptyTopicIndex.edit()
	for _, t := range ts {
		ed.put(t)
	}
	return ed.done()
}

// from yields the names >= name, in order.
func (s sortedNames) from(name string) func(yield func(string) bool) {
	return func(yield func(string) bool) {
		if len(s) == 0 {
			return
		}
		ci := s.chunkFor(name)
		i, _ := slices.BinarySearch(s[ci], name)
		for ; ci < len(s); ci, i = ci+1, 0 {
			for _, n := range s[ci][i:] {
				if !yield(n) {
					return
				}
			}
		}
	}
}
