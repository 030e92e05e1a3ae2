package group

import (
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Streams-group records in __consumer_offsets (Kafka's StreamsGroup*Key and
// Value schemas, CoordinatorRecordType 17-23; 18, the partition metadata of
// early 4.x, is gone). Keys: an int16 record type, then int16-length
// strings; values: flexible version 0 (compact strings and arrays, tag
// buffers). Kafka's tagged fields (the metadata hash's companions, the
// target assignment's timestamp, per-task assignment epochs) are skipped on
// read and not written.
const (
	keyStreamsGroupMetadata       = 17 // StreamsGroupMetadataKey{group} -> epoch
	keyStreamsGroupMember         = 19 // StreamsGroupMemberMetadataKey{group, member} -> process, endpoint, ...
	keyStreamsGroupTargetMetadata = 20 // StreamsGroupTargetAssignmentMetadataKey{group} -> assignment epoch
	keyStreamsGroupTargetMember   = 21 // StreamsGroupTargetAssignmentMemberKey{group, member} -> target tasks
	keyStreamsGroupCurrentMember  = 22 // StreamsGroupCurrentMemberAssignmentKey{group, member} -> current tasks
	keyStreamsGroupTopology       = 23 // StreamsGroupTopologyKey{group} -> topology
)

func isStreamsKey(version int16) bool {
	switch version {
	case keyStreamsGroupMetadata, keyStreamsGroupMember, keyStreamsGroupTargetMetadata,
		keyStreamsGroupTargetMember, keyStreamsGroupCurrentMember, keyStreamsGroupTopology:
		return true
	}
	return false
}

// sgMetadataValue is StreamsGroupMetadataValue v0: the epoch, a metadata
// hash, which Strait does not compute (0: topics are checked again on
// load), and the topology description epochs of KIP-1331 (tags 2 and 3,
// written when not -1, their default).
type sgMetadataValue struct {
	epoch      int32
	storedDesc int32 // StoredDescriptionTopologyEpoch
	failedDesc int32 // FailedDescriptionTopologyEpoch
}

func encodeStreamsGroupValue(v sgMetadataValue) []byte {
	b := kbin.AppendInt16(nil, 0)
	b = kbin.AppendInt32(b, v.epoch)
	b = kbin.AppendInt64(b, 0)
	var tags [][2]int32
	if v.storedDesc != -1 {
		tags = append(tags, [2]int32{2, v.storedDesc})
	}
	if v.failedDesc != -1 {
		tags = append(tags, [2]int32{3, v.failedDesc})
	}
	b = kbin.AppendUvarint(b, uint32(len(tags)))
	for _, t := range tags {
		b = kbin.AppendUvarint(b, uint32(t[0]))
		b = kbin.AppendUvarint(b, 4)
		b = kbin.AppendInt32(b, t[1])
	}
	return b
}

func decodeStreamsGroupValue(v []byte) (sgMetadataValue, error) {
	out := sgMetadataValue{storedDesc: -1, failedDesc: -1}
	r := kbin.Reader{Src: v}
	r.Int16()
	out.epoch = r.Int32()
	r.Int64()
	n := r.Uvarint()
	for i := uint32(0); i < n && r.Ok(); i++ {
		tag, size := r.Uvarint(), r.Uvarint()
		if int(size) > len(r.Src) {
			return out, errBadRecord
		}
		field := kbin.Reader{Src: r.Span(int(size))}
		switch tag {
		case 2:
			out.storedDesc = field.Int32()
		case 3:
			out.failedDesc = field.Int32()
		}
		if !field.Ok() {
			return out, errBadRecord
		}
	}
	if !r.Ok() {
		return out, errBadRecord
	}
	return out, nil
}

// sgMemberValue is StreamsGroupMemberMetadataValue v0.
type sgMemberValue struct {
	instanceID, rackID   *string
	clientID, clientHost string
	rebalanceTimeout     int32
	topologyEpoch        int32
	processID            string
	endpoint             *kmsg.StreamsGroupHeartbeatRequestUserEndpoint
	clientTags           []kmsg.StreamsGroupHeartbeatRequestClientTag
}

func (m *streamsMember) metadataValue() []byte {
	b := kbin.AppendInt16(nil, 0)
	b = kbin.AppendCompactNullableString(b, m.instanceID)
	b = kbin.AppendCompactNullableString(b, m.rackID)
	b = kbin.AppendCompactString(b, m.clientID)
	b = kbin.AppendCompactString(b, m.clientHost)
	b = kbin.AppendInt32(b, m.rebalanceTimeout)
	b = kbin.AppendInt32(b, m.topologyEpoch)
	b = kbin.AppendCompactString(b, m.processID)
	if m.endpoint == nil {
		b = kbin.AppendInt8(b, -1)
	} else {
		b = kbin.AppendInt8(b, 1)
		b = kbin.AppendCompactString(b, m.endpoint.Host)
		b = kbin.AppendUint16(b, m.endpoint.Port)
		b = kbin.AppendUvarint(b, 0)
	}
	b = kbin.AppendCompactArrayLen(b, len(m.clientTags))
	for _, t := range m.clientTags {
		b = kbin.AppendCompactString(b, t.Key)
		b = kbin.AppendCompactString(b, t.Value)
		b = kbin.AppendUvarint(b, 0)
	}
	return kbin.AppendUvarint(b, 0)
}

func decodeStreamsMemberValue(v []byte) (sgMemberValue, error) {
	var m sgMemberValue
	r := kbin.Reader{Src: v}
	r.Int16()
	m.instanceID = r.CompactNullableString()
	m.rackID = r.CompactNullableString()
	m.clientID = r.CompactString()
	m.clientHost = r.CompactString()
	m.rebalanceTimeout = r.Int32()
	m.topologyEpoch = r.Int32()
	m.processID = r.CompactString()
	if r.Int8() >= 0 {
		e := kmsg.NewStreamsGroupHeartbeatRequestUserEndpoint()
		e.Host = r.CompactString()
		e.Port = r.Uint16()
		skipTags(&r)
		m.endpoint = &e
	}
	n := r.CompactArrayLen()
	if n < 0 || int(n) > len(r.Src) {
		return m, errBadRecord
	}
	for i := int32(0); i < n && r.Ok(); i++ {
		t := kmsg.NewStreamsGroupHeartbeatRequestClientTag()
		t.Key, t.Value = r.CompactString(), r.CompactString()
		skipTags(&r)
		m.clientTags = append(m.clientTags, t)
	}
	return m, finish(&r)
}

// encodeStreamsTargetValue is StreamsGroupTargetAssignmentMemberValue v0.
func encodeStreamsTargetValue(t tasksTuple) []byte {
	b := kbin.AppendInt16(nil, 0)
	b = appendTaskIDs(b, t.active)
	b = appendTaskIDs(b, t.standby)
	b = appendTaskIDs(b, t.warmup)
	return kbin.AppendUvarint(b, 0)
}

func decodeStreamsTargetValue(v []byte) (tasksTuple, error) {
	r := kbin.Reader{Src: v}
	r.Int16()
	var t tasksTuple
	var err error
	for _, s := range []*taskSet{&t.active, &t.standby, &t.warmup} {
		if *s, err = readTaskIDs(&r); err != nil {
			return t, err
		}
	}
	return t, finish(&r)
}

// sgCurrentValue is StreamsGroupCurrentMemberAssignmentValue v0.
type sgCurrentValue struct {
	epoch, prevEpoch int32
	state            int8
	assigned         tasksTuple
	pending          tasksTuple // only active tasks pend revocation in Strait
}

func (m *streamsMember) currentValue() []byte {
	b := kbin.AppendInt16(nil, 0)
	b = kbin.AppendInt32(b, m.epoch)
	b = kbin.AppendInt32(b, m.prevEpoch)
	state := int8(kafkaStateStable)
	switch m.state {
	case memberUnrevoked:
		state = kafkaStateUnrevoked
	case memberUnreleased:
		state = kafkaStateUnreleased
	}
	b = kbin.AppendInt8(b, state)
	b = appendTaskIDs(b, m.assigned.active)
	b = appendTaskIDs(b, m.assigned.standby)
	b = appendTaskIDs(b, m.assigned.warmup)
	b = appendTaskIDs(b, m.pendingActive)
	b = appendTaskIDs(b, nil)
	b = appendTaskIDs(b, nil)
	return kbin.AppendUvarint(b, 0)
}

func decodeStreamsCurrentValue(v []byte) (sgCurrentValue, error) {
	var c sgCurrentValue
	r := kbin.Reader{Src: v}
	r.Int16()
	c.epoch = r.Int32()
	c.prevEpoch = r.Int32()
	c.state = r.Int8()
	var err error
	for _, s := range []*taskSet{&c.assigned.active, &c.assigned.standby, &c.assigned.warmup,
		&c.pending.active, &c.pending.standby, &c.pending.warmup} {
		if *s, err = readTaskIDs(&r); err != nil {
			return c, err
		}
	}
	return c, finish(&r)
}

// appendTaskIDs writes a compact array of {SubtopologyId, Partitions,
// tags}, sorted so equal sets encode to equal bytes.
func appendTaskIDs(b []byte, s taskSet) []byte {
	ids := s.wire()
	b = kbin.AppendCompactArrayLen(b, len(ids))
	for _, e := range ids {
		b = kbin.AppendCompactString(b, e.SubtopologyID)
		b = kbin.AppendCompactArrayLen(b, len(e.Partitions))
		for _, p := range e.Partitions {
			b = kbin.AppendInt32(b, p)
		}
		b = kbin.AppendUvarint(b, 0)
	}
	return b
}

func readTaskIDs(r *kbin.Reader) (taskSet, error) {
	s := taskSet{}
	n := r.CompactArrayLen()
	// Each element takes at least 3 bytes, so the count is bounded by the
	// record's size before anything is allocated.
	if n < 0 || int(n) > len(r.Src) {
		return nil, errBadRecord
	}
	for i := int32(0); i < n; i++ {
		sub := r.CompactString()
		np := r.CompactArrayLen()
		if np < 0 || int(np)*4 > len(r.Src) {
			return nil, errBadRecord
		}
		for j := int32(0); j < np; j++ {
			s.add(taskID{sub, r.Int32()})
		}
		skipTags(r)
		if !r.Ok() {
			return nil, errBadRecord
		}
	}
	return s, nil
}

// encodeTopologyValue is StreamsGroupTopologyValue v0.
func encodeTopologyValue(t *kmsg.StreamsGroupHeartbeatRequestTopology) []byte {
	strs := func(b []byte, ss []string) []byte {
		b = kbin.AppendCompactArrayLen(b, len(ss))
		for _, s := range ss {
			b = kbin.AppendCompactString(b, s)
		}
		return b
	}
	infos := func(b []byte, ts []kmsg.TopicInfo) []byte {
		b = kbin.AppendCompactArrayLen(b, len(ts))
		for _, ti := range ts {
			b = kbin.AppendCompactString(b, ti.Topic)
			b = kbin.AppendInt32(b, ti.NumPartitions)
			b = kbin.AppendInt16(b, ti.ReplicationFactor)
			b = kbin.AppendCompactArrayLen(b, len(ti.Configs))
			for _, c := range ti.Configs {
				b = kbin.AppendCompactString(b, c.Key)
				b = kbin.AppendCompactString(b, c.Value)
				b = kbin.AppendUvarint(b, 0)
			}
			b = kbin.AppendUvarint(b, 0)
		}
		return b
	}
	idx := func(b []byte, is []int16) []byte {
		b = kbin.AppendCompactArrayLen(b, len(is))
		for _, i := range is {
			b = kbin.AppendInt16(b, i)
		}
		return b
	}
	b := kbin.AppendInt16(nil, 0)
	b = kbin.AppendInt32(b, t.Epoch)
	b = kbin.AppendCompactArrayLen(b, len(t.Subtopologies))
	for _, st := range t.Subtopologies {
		b = kbin.AppendCompactString(b, st.SubtopologyID)
		b = strs(b, st.SourceTopics)
		b = strs(b, st.SourceTopicRegex)
		b = infos(b, st.StateChangelogTopics)
		b = strs(b, st.RepartitionSinkTopics)
		b = infos(b, st.RepartitionSourceTopics)
		b = kbin.AppendCompactArrayLen(b, len(st.CopartitionGroups))
		for _, cg := range st.CopartitionGroups {
			b = idx(b, cg.SourceTopics)
			b = idx(b, cg.SourceTopicRegex)
			b = idx(b, cg.RepartitionSourceTopics)
			b = kbin.AppendUvarint(b, 0)
		}
		b = kbin.AppendUvarint(b, 0)
	}
	return kbin.AppendUvarint(b, 0)
}

func decodeTopologyValue(v []byte) (*kmsg.StreamsGroupHeartbeatRequestTopology, error) {
	r := kbin.Reader{Src: v}
	bad := false
	count := func(minSize int) int {
		n := r.CompactArrayLen()
		if n < 0 || int(n)*minSize > len(r.Src) {
			bad = true
			r.Src = nil
			r.Span(1)
			return 0
		}
		return int(n)
	}
	strs := func() []string {
		n := count(1)
		out := make([]string, 0, n)
		for range n {
			out = append(out, r.CompactString())
		}
		return out
	}
	infos := func() []kmsg.TopicInfo {
		n := count(8)
		out := make([]kmsg.TopicInfo, 0, n)
		for range n {
			ti := kmsg.NewTopicInfo()
			ti.Topic = r.CompactString()
			ti.NumPartitions = r.Int32()
			ti.ReplicationFactor = r.Int16()
			nc := count(3)
			for range nc {
				ti.Configs = append(ti.Configs, kmsg.TopicInfoConfig{Key: r.CompactString(), Value: r.CompactString()})
				skipTags(&r)
			}
			skipTags(&r)
			out = append(out, ti)
		}
		return out
	}
	idx := func() []int16 {
		n := count(2)
		out := make([]int16, 0, n)
		for range n {
			out = append(out, r.Int16())
		}
		return out
	}
	r.Int16()
	t := kmsg.NewStreamsGroupHeartbeatRequestTopology()
	t.Epoch = r.Int32()
	ns := count(7)
	for range ns {
		st := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopology()
		st.SubtopologyID = r.CompactString()
		st.SourceTopics = strs()
		st.SourceTopicRegex = strs()
		st.StateChangelogTopics = infos()
		st.RepartitionSinkTopics = strs()
		st.RepartitionSourceTopics = infos()
		ng := count(4)
		for range ng {
			cg := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopologyCopartitionGroup()
			cg.SourceTopics, cg.SourceTopicRegex, cg.RepartitionSourceTopics = idx(), idx(), idx()
			skipTags(&r)
			st.CopartitionGroups = append(st.CopartitionGroups, cg)
		}
		skipTags(&r)
		t.Subtopologies = append(t.Subtopologies, st)
	}
	if bad {
		return nil, errBadRecord
	}
	return &t, finish(&r)
}
