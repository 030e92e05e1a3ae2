package broker

// Collapsing the duplicates a client can put in a request (issue 17): a
// request naming one resource many times must cost what naming it once
// does. Kafka collapses them in Metadata, Fetch, DeleteRecords and
// DescribeTopicPartitions (its handlers key their work by topic or
// partition), refuses them in CreateTopics,
// DeleteTopics, CreatePartitions, ListOffsets and the AlterConfigs pair
// (INVALID_REQUEST), and answers every copy in DescribeConfigs, OffsetFetch
// and DescribeProducers, where one copy of a few bytes can bring back
// kilobytes (a topic's ~70 configs, a committed offset's 4 KiB metadata, a
// partition's producers). Strait answers those once per distinct resource:
// the clients key the answers by resource, so nothing they see changes
// (DIFFERENCES.md).

import (
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// uniqueInt32s is ps without repeats, in first-seen order; ps itself when
// it has none (the common case allocates only the set).
func uniqueInt32s(ps []int32) []int32 {
	if len(ps) < 2 {
		return ps
	}
	seen := make(map[int32]struct{}, min(len(ps), 4096))
	var out []int32 // nil until the first repeat
	for i, p := range ps {
		if _, ok := seen[p]; ok {
			if out == nil {
				out = append(make([]int32, 0, i), ps[:i]...)
			}
			continue
		}
		seen[p] = struct{}{}
		if out != nil {
			out = append(out, p)
		}
	}
	if out == nil {
		return ps
	}
	return out
}

// describeConfigsKey identifies a DescribeConfigs resource with the config
// names it asks for (nil, all, differs from an empty list only on the wire:
// both ask for all).
func describeConfigsKey(r *kmsg.DescribeConfigsRequestResource) string {
	var b strings.Builder
	b.WriteByte(byte(r.ResourceType))
	b.WriteString(r.ResourceName)
	for _, n := range r.ConfigNames {
		b.WriteByte(0)
		b.WriteString(n)
	}
	return b.String()
}

// collapseOffsetFetch merges the repeated groups, topics and partitions of
// an OffsetFetch request: a group or topic named twice is asked once, for
// the union of what its copies ask (all of a group's topics when any copy
// asks for all). It keeps memory to the distinct entries: a copy adds
// nothing.
func collapseOffsetFetch(req *kmsg.OffsetFetchRequest) {
	if req.Version < 8 {
		if req.Topics == nil {
			return // all topics
		}
		var m partitionMerger
		for _, t := range req.Topics {
			m.add(t.Topic, [16]byte{}, t.Partitions)
		}
		req.Topics = req.Topics[:0:0]
		for _, t := range m.out {
			req.Topics = append(req.Topics, kmsg.OffsetFetchRequestTopic{Topic: t.name, Partitions: t.parts})
		}
		return
	}
	type group struct {
		g   kmsg.OffsetFetchRequestGroup
		all bool // a copy asked for every topic
		m   partitionMerger
	}
	index := make(map[string]*group, min(len(req.Groups), 1024))
	var groups []*group
	for _, g := range req.Groups {
		acc := index[g.Group]
		if acc == nil {
			acc = &group{g: g}
			index[g.Group] = acc
			groups = append(groups, acc)
		}
		if g.Topics == nil {
			acc.all = true
		}
		if acc.all {
			continue
		}
		for _, t := range g.Topics {
			acc.m.add(t.Topic, t.TopicID, t.Partitions)
		}
	}
	req.Groups = req.Groups[:0:0]
	for _, acc := range groups {
		g := acc.g
		g.Topics = nil
		if !acc.all {
			g.Topics = make([]kmsg.OffsetFetchRequestGroupTopic, 0, len(acc.m.out))
			for _, t := range acc.m.out {
				g.Topics = append(g.Topics, kmsg.OffsetFetchRequestGroupTopic{Topic: t.name, TopicID: t.id, Partitions: t.parts})
			}
		}
		req.Groups = append(req.Groups, g)
	}
}

// partitionMerger collects topics (by name and id) and their partitions,
// each once, in first-seen order.
type partitionMerger struct {
	index map[partitionMergerKey]int
	out   []mergedTopic
}

type partitionMergerKey struct {
	name string
	id   [16]byte
}

type mergedTopic struct {
	name  string
	id    [16]byte
	parts []int32
	seen  map[int32]struct{}
}

func (m *partitionMerger) add(name string, id [16]byte, parts []int32) {
	if m.index == nil {
		m.index = make(map[partitionMergerKey]int)
	}
	k := partitionMergerKey{name, id}
	i, ok := m.index[k]
	if !ok {
		i = len(m.out)
		m.index[k] = i
		m.out = append(m.out, mergedTopic{name: name, id: id, parts: []int32{}, seen: make(map[int32]struct{})})
	}
	t := &m.out[i]
	for _, p := range parts {
		if _, dup := t.seen[p]; !dup {
			t.seen[p] = struct{}{}
			t.parts = append(t.parts, p)
		}
	}
}
