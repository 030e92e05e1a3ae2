package group

import (
	"bytes"
	"slices"
)

// partitionSet is a set of partitions by topic id.
type partitionSet map[[16]byte]map[int32]struct{}

func (s partitionSet) add(t [16]byte, p int32) {
	ps := s[t]
	if ps == nil {
		ps = map[int32]struct{}{}
		s[t] = ps
	}
	ps[p] = struct{}{}
}

func (s partitionSet) has(t [16]byte, p int32) bool {
	_, ok := s[t][p]
	return ok
}

func (s partitionSet) size() int {
	n := 0
	for _, ps := range s {
		n += len(ps)
	}
	return n
}

func (s partitionSet) equal(o partitionSet) bool {
	if s.size() != o.size() {
		return false
	}
	for t, ps := range s {
		for p := range ps {
			if !o.has(t, p) {
				return false
			}
		}
	}
	return true
}

// sortedTopics returns the topic ids in byte order.
func (s partitionSet) sortedTopics() [][16]byte {
	ids := make([][16]byte, 0, len(s))
	for t := range s {
		ids = append(ids, t)
	}
	slices.SortFunc(ids, func(a, b [16]byte) int { return bytes.Compare(a[:], b[:]) })
	return ids
}

func sortedPartitions(ps map[int32]struct{}) []int32 {
	out := make([]int32, 0, len(ps))
	for p := range ps {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// topicPartition is one partition of a topic.
type topicPartition struct {
	topic     [16]byte
	partition int32
}

// assignSpec is an assignor's input: members (sorted by id) with the topic
// ids they subscribe to, each topic's partition count, and the previous
// target assignment (for stickiness).
type assignSpec struct {
	members []assignMember
	topics  map[[16]byte]int32
	prev    map[string]partitionSet
}

type assignMember struct {
	id     string
	topics map[[16]byte]bool
}

// assignor computes a target assignment for every member.
type assignor func(spec assignSpec) map[string]partitionSet

func assignorByName(name string) assignor {
	switch name {
	case "uniform":
		return assignUniform
	case "range":
		return assignRange
	}
	return nil
}

// assignRange is Kafka's range assignor: each topic's partitions are cut
// into contiguous ranges over the members subscribed to it, in member id
// order, the first members taking one more when they do not divide evenly.
func assignRange(spec assignSpec) map[string]partitionSet {
	out := make(map[string]partitionSet, len(spec.members))
	for _, m := range spec.members {
		out[m.id] = partitionSet{}
	}
	for t, n := range spec.topics {
		var subs []string
		for _, m := range spec.members {
			if m.topics[t] {
				subs = append(subs, m.id)
			}
		}
		if len(subs) == 0 {
			continue
		}
		per, extra := int(n)/len(subs), int(n)%len(subs)
		start := 0
		for i, id := range subs {
			size := per
			if i < extra {
				size++
			}
			for p := start; p < start+size; p++ {
				out[id].add(t, int32(p))
			}
			start += size
		}
	}
	return out
}

// assignUniform is a sticky, balanced assignor in the spirit of Kafka's
// UniformAssignor: members keep the partitions they had as far as balance
// allows, and partition counts differ by at most one between members
// subscribed to the same topics.
func assignUniform(spec assignSpec) map[string]partitionSet {
	if homogeneous(spec) {
		return assignUniformHomogeneous(spec)
	}
	return assignUniformGeneral(spec)
}

func homogeneous(spec assignSpec) bool {
	for _, m := range spec.members[min(1, len(spec.members)):] {
		if len(m.topics) != len(spec.members[0].topics) {
			return false
		}
		for t := range m.topics {
			if !spec.members[0].topics[t] {
				return false
			}
		}
	}
	return true
}

// allPartitions lists the partitions of the given (existing) topics, topic
// by topic in id order.
func allPartitions(spec assignSpec, topics map[[16]byte]bool) []topicPartition {
	ids := make([][16]byte, 0, len(topics))
	for t := range topics {
		if _, ok := spec.topics[t]; ok {
			ids = append(ids, t)
		}
	}
	slices.SortFunc(ids, func(a, b [16]byte) int { return bytes.Compare(a[:], b[:]) })
	var out []topicPartition
	for _, t := range ids {
		for p := int32(0); p < spec.topics[t]; p++ {
			out = append(out, topicPartition{t, p})
		}
	}
	return out
}

// stillValid lists the member's previous partitions that it may keep.
func stillValid(spec assignSpec, m assignMember) []topicPartition {
	var out []topicPartition
	prev := spec.prev[m.id]
	for _, t := range prev.sortedTopics() {
		n, ok := spec.topics[t]
		if !ok || !m.topics[t] {
			continue
		}
		for _, p := range sortedPartitions(prev[t]) {
			if p < n {
				out = append(out, topicPartition{t, p})
			}
		}
	}
	return out
}

func assignUniformHomogeneous(spec assignSpec) map[string]partitionSet {
	out := make(map[string]partitionSet, len(spec.members))
	for _, m := range spec.members {
		out[m.id] = partitionSet{}
	}
	if len(spec.members) == 0 {
		return out
	}
	all := allPartitions(spec, spec.members[0].topics)
	minQuota, extra := len(all)/len(spec.members), len(all)%len(spec.members)
	taken := partitionSet{}
	count := map[string]int{}

	// Keep previous partitions, members with the most first, up to the
	// quota (one more while members above the quota are still allowed).
	order := slices.Clone(spec.members)
	valid := map[string][]topicPartition{}
	for _, m := range order {
		valid[m.id] = stillValid(spec, m)
	}
	slices.SortStableFunc(order, func(a, b assignMember) int { return len(valid[b.id]) - len(valid[a.id]) })
	for _, m := range order {
		allowed := minQuota
		if extra > 0 && len(valid[m.id]) > minQuota {
			allowed++
			extra--
		}
		for _, tp := range valid[m.id] {
			if count[m.id] >= allowed {
				break
			}
			if taken.has(tp.topic, tp.partition) {
				continue
			}
			taken.add(tp.topic, tp.partition)
			out[m.id].add(tp.topic, tp.partition)
			count[m.id]++
		}
	}
	// Fill every member up to the quota, then hand out the remainder one
	// each.
	var free []topicPartition
	for _, tp := range all {
		if !taken.has(tp.topic, tp.partition) {
			free = append(free, tp)
		}
	}
	for _, m := range spec.members {
		for count[m.id] < minQuota && len(free) > 0 {
			out[m.id].add(free[0].topic, free[0].partition)
			count[m.id]++
			free = free[1:]
		}
	}
	for _, m := range spec.members {
		if len(free) == 0 {
			break
		}
		if count[m.id] == minQuota {
			out[m.id].add(free[0].topic, free[0].partition)
			count[m.id]++
			free = free[1:]
		}
	}
	return out
}

// assignUniformGeneral handles members subscribed to different topics:
// sticky first, then each free partition to the least loaded member
// subscribed to it, then moves from the most to the least loaded eligible
// member until no move narrows a gap of two or more.
func assignUniformGeneral(spec assignSpec) map[string]partitionSet {
	out := make(map[string]partitionSet, len(spec.members))
	count := map[string]int{}
	owner := map[topicPartition]string{}
	subscribers := map[[16]byte][]string{}
	union := map[[16]byte]bool{}
	for _, m := range spec.members {
		out[m.id] = partitionSet{}
		for t := range m.topics {
			if _, ok := spec.topics[t]; ok {
				subscribers[t] = append(subscribers[t], m.id)
				union[t] = true
			}
		}
	}
	for _, m := range spec.members {
		for _, tp := range stillValid(spec, m) {
			if _, ok := owner[tp]; ok {
				continue
			}
			owner[tp] = m.id
			out[m.id].add(tp.topic, tp.partition)
			count[m.id]++
		}
	}
	leastLoaded := func(t [16]byte) string {
		best := ""
		for _, id := range subscribers[t] {
			if best == "" || count[id] < count[best] {
				best = id
			}
		}
		return best
	}
	all := allPartitions(spec, union)
	for _, tp := range all {
		if _, ok := owner[tp]; ok {
			continue
		}
		id := leastLoaded(tp.topic)
		owner[tp] = id
		out[id].add(tp.topic, tp.partition)
		count[id]++
	}
	// Balance; each move strictly narrows a gap, so this terminates.
	for moved := true; moved; {
		moved = false
		for _, tp := range all {
			from := owner[tp]
			to := leastLoaded(tp.topic)
			if count[from]-count[to] > 1 {
				delete(out[from][tp.topic], tp.partition)
				if len(out[from][tp.topic]) == 0 {
					delete(out[from], tp.topic)
				}
				out[to].add(tp.topic, tp.partition)
				owner[tp] = to
				count[from]--
				count[to]++
				moved = true
			}
		}
	}
	return out
}
