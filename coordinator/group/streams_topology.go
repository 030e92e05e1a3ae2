package group

import (
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// A streams group's topology, as the first member of its epoch sent it, and
// what the cluster's topics make of it (Kafka's ConfiguredTopology and
// InternalTopicManager): the number of tasks of each subtopology, the
// partition counts of the repartition topics, and the internal topics to
// create. A topology is configured (its tasks can be assigned) once every
// source topic exists, the internal topics exist with the partitions it
// needs, and copartitioned topics have equal partition counts.

// Heartbeat status codes (StreamsGroupHeartbeatResponse.Status).
const (
	statusStaleTopology          int8 = 0
	statusMissingSourceTopics    int8 = 1
	statusIncorrectlyPartitioned int8 = 2
	statusMissingInternalTopics  int8 = 3
	statusShutdownApplication    int8 = 4
)

// StreamsInternalTopic is a repartition or changelog topic a streams group
// needs and the cluster lacks; the broker creates it (Kafka's
// AutoTopicCreationManager.createStreamsInternalTopics).
type StreamsInternalTopic struct {
	Name              string
	Partitions        int32
	ReplicationFactor int16 // 0: the broker's default
	Configs           map[string]string
}

// configuredTopology is the outcome of configuring a topology.
type configuredTopology struct {
	tasks   map[string]int32    // subtopology -> number of tasks; nil unless ready
	sources map[string][]string // subtopology -> source and repartition source topics (for endpoints)
	status  []kmsg.StreamsGroupHeartbeatResponseStatus
	missing []StreamsInternalTopic
}

func (t *configuredTopology) ready() bool { return t != nil && t.tasks != nil }

func (t *configuredTopology) equal(o *configuredTopology) bool {
	if t.ready() != o.ready() || len(t.status) != len(o.status) {
		return false
	}
	for i := range t.status {
		if t.status[i].StatusCode != o.status[i].StatusCode || t.status[i].StatusDetail != o.status[i].StatusDetail {
			return false
		}
	}
	if !t.ready() {
		return true
	}
	if len(t.tasks) != len(o.tasks) {
		return false
	}
	for s, n := range t.tasks {
		if o.tasks[s] != n {
			return false
		}
	}
	return true
}

func streamsStatus(code int8, detail string) kmsg.StreamsGroupHeartbeatResponseStatus {
	s := kmsg.NewStreamsGroupHeartbeatResponseStatus()
	s.StatusCode, s.StatusDetail = code, detail
	return s
}

// configureTopology resolves topo against the cluster's topics (meta).
func configureTopology(topo *kmsg.StreamsGroupHeartbeatRequestTopology, meta Metadata) *configuredTopology {
	out := &configuredTopology{sources: map[string][]string{}}
	partitions := map[string]int32{} // topic -> partitions, as known or derived
	var all []TopicMeta
	regexSources := map[string][]string{}
	var missingSources []string
	for _, st := range topo.Subtopologies {
		for _, name := range st.SourceTopics {
			if t, ok := meta.Topic(name); ok {
				partitions[name] = t.Partitions
			} else {
				missingSources = append(missingSources, name)
			}
		}
		for _, re := range st.SourceTopicRegex {
			if all == nil {
				all = meta.Topics()
			}
			rx, err := compileRegex(re)
			if err != nil {
				continue
			}
			for _, t := range all {
				if rx.MatchString(t.Name) && !strings.HasPrefix(t.Name, "__") {
					regexSources[st.SubtopologyID] = append(regexSources[st.SubtopologyID], t.Name)
					partitions[t.Name] = t.Partitions
				}
			}
		}
	}
	if len(missingSources) > 0 {
		slices.Sort(missingSources)
		missingSources = slices.Compact(missingSources)
		out.status = append(out.status, streamsStatus(statusMissingSourceTopics,
			"Source topics "+strings.Join(missingSources, ", ")+" are missing."))
		return out
	}

	// Repartition topics: a fixed count, else copartitioned source topics'
	// count, else the most partitions of the sources of the subtopologies
	// writing to them (RepartitionTopics), until nothing changes.
	repartition := map[string]int32{}
	for _, st := range topo.Subtopologies {
		for _, rt := range st.RepartitionSourceTopics {
			repartition[rt.Topic] = rt.NumPartitions
		}
	}
	var incorrect []string
	for _, st := range topo.Subtopologies {
		for _, cg := range st.CopartitionGroups {
			n := int32(0)
			var names []string
			for _, i := range cg.SourceTopics {
				if int(i) < len(st.SourceTopics) {
					names = append(names, st.SourceTopics[i])
				}
			}
			for _, name := range names {
				if p := partitions[name]; n == 0 {
					n = p
				} else if p != n {
					incorrect = append(incorrect, names...)
				}
			}
			if n == 0 {
				continue
			}
			for _, i := range cg.RepartitionSourceTopics {
				if int(i) < len(st.RepartitionSourceTopics) {
					rt := st.RepartitionSourceTopics[i]
					if repartition[rt.Topic] == 0 {
						repartition[rt.Topic] = n
					}
				}
			}
		}
	}
	if len(incorrect) > 0 {
		slices.Sort(incorrect)
		incorrect = slices.Compact(incorrect)
		out.status = append(out.status, streamsStatus(statusIncorrectlyPartitioned,
			"Following topics do not have the same number of partitions: ["+strings.Join(incorrect, ", ")+"]"))
		return out
	}
	for name, n := range repartition {
		if n > 0 {
			partitions[name] = n
		}
	}
	// Each round settles at least one more subtopology of an acyclic
	// topology, so there are at most as many rounds as subtopologies.
	for range len(topo.Subtopologies) + 1 {
		changed := false
		for _, st := range topo.Subtopologies {
			n := int32(0)
			known := true
			for _, s := range st.SourceTopics {
				n = max(n, partitions[s])
			}
			for _, s := range regexSources[st.SubtopologyID] {
				n = max(n, partitions[s])
			}
			for _, rt := range st.RepartitionSourceTopics {
				p, ok := partitions[rt.Topic]
				if !ok {
					known = false
				}
				n = max(n, p)
			}
			if !known || n == 0 {
				continue
			}
			for _, sink := range st.RepartitionSinkTopics {
				if _, ok := repartition[sink]; !ok {
					continue
				}
				if partitions[sink] < n && repartition[sink] == 0 {
					partitions[sink] = n
					changed = true
				}
			}
		}
		if !changed {
			break
		}
	}

	// Tasks per subtopology, and the internal topics that must exist.
	tasks := map[string]int32{}
	var missing []StreamsInternalTopic
	var undetermined []string
	for _, st := range topo.Subtopologies {
		n := int32(0)
		srcs := slices.Clone(st.SourceTopics)
		srcs = append(srcs, regexSources[st.SubtopologyID]...)
		for _, s := range srcs {
			n = max(n, partitions[s])
		}
		for _, rt := range st.RepartitionSourceTopics {
			p, ok := partitions[rt.Topic]
			if !ok {
				undetermined = append(undetermined, rt.Topic)
				continue
			}
			n = max(n, p)
			srcs = append(srcs, rt.Topic)
			if t, exists := meta.Topic(rt.Topic); !exists {
				missing = append(missing, internalTopic(rt, p))
			} else if t.Partitions != p {
				incorrect = append(incorrect, rt.Topic)
			}
		}
		tasks[st.SubtopologyID] = n
		out.sources[st.SubtopologyID] = srcs
		for _, cl := range st.StateChangelogTopics {
			if _, exists := meta.Topic(cl.Topic); !exists {
				missing = append(missing, internalTopic(cl, n))
			}
		}
	}
	if len(undetermined) > 0 {
		out.status = append(out.status, streamsStatus(statusIncorrectlyPartitioned,
			"The number of partitions of repartition topics "+strings.Join(undetermined, ", ")+" cannot be determined."))
		return out
	}
	if len(incorrect) > 0 {
		slices.Sort(incorrect)
		out.status = append(out.status, streamsStatus(statusIncorrectlyPartitioned,
			"Following topics do not have the expected number of partitions: ["+strings.Join(incorrect, ", ")+"]"))
		return out
	}
	if len(missing) > 0 {
		sort.Slice(missing, func(i, j int) bool { return missing[i].Name < missing[j].Name })
		names := make([]string, len(missing))
		for i, m := range missing {
			names[i] = m.Name + " (" + strconv.Itoa(int(m.Partitions)) + " partitions)"
		}
		out.status = append(out.status, streamsStatus(statusMissingInternalTopics,
			"Internal topics are missing: ["+strings.Join(names, ", ")+"]"))
		out.missing = missing
		return out
	}
	out.tasks = tasks
	return out
}

func internalTopic(ti kmsg.TopicInfo, partitions int32) StreamsInternalTopic {
	t := StreamsInternalTopic{Name: ti.Topic, Partitions: partitions, ReplicationFactor: ti.ReplicationFactor,
		Configs: map[string]string{}}
	for _, c := range ti.Configs {
		t.Configs[c.Key] = c.Value
	}
	return t
}
