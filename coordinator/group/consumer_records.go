package group

import (
	"errors"
	"slices"

	"github.com/twmb/franz-go/pkg/kbin"
)

// KIP-848 consumer-group records in __consumer_offsets (Kafka's
// ConsumerGroup*Key/Value schemas). kmsg has no types for them, so they are
// encoded here. Keys are not flexible: an int16 version naming the record
// type, then int16-length strings. Values are flexible version 0: an int16
// version, compact strings and arrays, and a tag buffer.
const (
	keyConsumerGroupMetadata          = 3 // ConsumerGroupMetadataKey{group} -> epoch
	keyConsumerGroupPartitionMetadata = 4 // deprecated since Kafka 4.1; read and ignored
	keyConsumerGroupMember            = 5 // ConsumerGroupMemberMetadataKey{group, member} -> subscription
	keyConsumerGroupTargetMetadata    = 6 // ConsumerGroupTargetAssignmentMetadataKey{group} -> assignment epoch
	keyConsumerGroupTargetMember      = 7 // ConsumerGroupTargetAssignmentMemberKey{group, member} -> target
	keyConsumerGroupCurrentMember     = 8 // ConsumerGroupCurrentMemberAssignmentKey{group, member} -> current
)

// cgKey is one of the ConsumerGroup* or StreamsGroup* keys (the same
// layout: the record type, the group, and for the per-member ones the
// member); member is empty for the group level ones.
type cgKey struct {
	version       int16
	group, member string
}

func (k cgKey) encode() []byte {
	b := kbin.AppendInt16(nil, k.version)
	b = kbin.AppendString(b, k.group)
	if hasMemberKey(k.version) {
		b = kbin.AppendString(b, k.member)
	}
	return b
}

func hasMemberKey(version int16) bool {
	switch version {
	case keyConsumerGroupMember, keyConsumerGroupTargetMember, keyConsumerGroupCurrentMember,
		keyStreamsGroupMember, keyStreamsGroupTargetMember, keyStreamsGroupCurrentMember:
		return true
	}
	return false
}

var errBadRecord = errors.New("malformed consumer group record")

func decodeCGKey(key []byte) (cgKey, error) {
	r := kbin.Reader{Src: key}
	k := cgKey{version: r.Int16()}
	k.group = r.String()
	if hasMemberKey(k.version) {
		k.member = r.String()
	}
	if !r.Ok() || len(r.Src) != 0 {
		return k, errBadRecord
	}
	return k, nil
}

// cgEpochValue is ConsumerGroupMetadataValue's Epoch and
// ConsumerGroupTargetAssignmentMetadataValue's AssignmentEpoch: both are
// one int32 (Kafka 4.1's MetadataHash tag is skipped on read, not written).
func encodeEpochValue(epoch int32) []byte {
	b := kbin.AppendInt16(nil, 0)
	b = kbin.AppendInt32(b, epoch)
	return kbin.AppendUvarint(b, 0)
}

func decodeEpochValue(v []byte) (int32, error) {
	r := kbin.Reader{Src: v}
	r.Int16()
	e := r.Int32()
	return e, finish(&r)
}

// cgMemberValue is ConsumerGroupMemberMetadataValue v0.
type cgMemberValue struct {
	instanceID, rackID   *string
	clientID, clientHost string
	names                []string
	regex                *string
	rebalanceTimeout     int32
	serverAssignor       *string
	// classic is the tagged ClassicMemberMetadata (tag 0): set for a member
	// that speaks the classic protocol in a consumer group.
	classic *classicMeta
}

func (m *cgMemberValue) encode() []byte {
	b := kbin.AppendInt16(nil, 0)
	b = kbin.AppendCompactNullableString(b, m.instanceID)
	b = kbin.AppendCompactNullableString(b, m.rackID)
	b = kbin.AppendCompactString(b, m.clientID)
	b = kbin.AppendCompactString(b, m.clientHost)
	b = kbin.AppendCompactArrayLen(b, len(m.names))
	for _, n := range m.names {
		b = kbin.AppendCompactString(b, n)
	}
	b = kbin.AppendCompactNullableString(b, m.regex)
	b = kbin.AppendInt32(b, m.rebalanceTimeout)
	b = kbin.AppendCompactNullableString(b, m.serverAssignor)
	if m.classic == nil {
		return kbin.AppendUvarint(b, 0)
	}
	// A nullable struct in a tagged field: its size counts the presence
	// byte (1) that precedes it, as Kafka's generated code writes it.
	st := kbin.AppendInt32(nil, m.classic.sessionTimeout)
	st = kbin.AppendCompactArrayLen(st, len(m.classic.protocols))
	for _, p := range m.classic.protocols {
		st = kbin.AppendCompactString(st, p.name)
		st = kbin.AppendCompactBytes(st, p.metadata)
		st = kbin.AppendUvarint(st, 0)
	}
	st = kbin.AppendUvarint(st, 0)
	b = kbin.AppendUvarint(b, 1) // one tagged field
	b = kbin.AppendUvarint(b, 0) // tag 0
	b = kbin.AppendUvarint(b, uint32(len(st)+1))
	b = kbin.AppendUvarint(b, 1)
	return append(b, st...)
}

// readClassicMeta reads the ClassicMemberMetadata tagged field's bytes.
func readClassicMeta(src []byte) (*classicMeta, error) {
	r := kbin.Reader{Src: src}
	if r.Uvarint() != 1 { // the presence byte; 0 (null) is not written by Kafka
		return nil, nil
	}
	cm := &classicMeta{sessionTimeout: r.Int32()}
	n := r.CompactArrayLen()
	if n < 0 || int(n) > len(r.Src) {
		return nil, errBadRecord
	}
	for i := int32(0); i < n && r.Ok(); i++ {
		name := r.CompactString()
		meta := slices.Clone(r.CompactBytes())
		skipTags(&r)
		cm.protocols = append(cm.protocols, protocolMeta{name: name, metadata: meta})
	}
	skipTags(&r)
	if !r.Ok() {
		return nil, errBadRecord
	}
	return cm, nil
}

func decodeMemberValue(v []byte) (cgMemberValue, error) {
	var m cgMemberValue
	r := kbin.Reader{Src: v}
	r.Int16()
	m.instanceID = r.CompactNullableString()
	m.rackID = r.CompactNullableString()
	m.clientID = r.CompactString()
	m.clientHost = r.CompactString()
	n := r.CompactArrayLen()
	if n < 0 || int(n) > len(r.Src) {
		return m, errBadRecord
	}
	for i := int32(0); i < n && r.Ok(); i++ {
		m.names = append(m.names, r.CompactString())
	}
	m.regex = r.CompactNullableString()
	m.rebalanceTimeout = r.Int32()
	m.serverAssignor = r.CompactNullableString()
	tags := r.Uvarint()
	for i := uint32(0); i < tags && r.Ok(); i++ {
		tag := r.Uvarint()
		size := r.Uvarint()
		if int(size) > len(r.Src) {
			return m, errBadRecord
		}
		field := r.Span(int(size))
		if tag == 0 {
			cm, err := readClassicMeta(field)
			if err != nil {
				return m, err
			}
			m.classic = cm
		}
	}
	if !r.Ok() {
		return m, errBadRecord
	}
	return m, nil
}

// encodeTargetValue is ConsumerGroupTargetAssignmentMemberValue v0.
func encodeTargetValue(s partitionSet) []byte {
	b := kbin.AppendInt16(nil, 0)
	b = appendTopicPartitions(b, s)
	return kbin.AppendUvarint(b, 0)
}

func decodeTargetValue(v []byte) (partitionSet, error) {
	r := kbin.Reader{Src: v}
	r.Int16()
	s, err := readTopicPartitions(&r)
	if err != nil {
		return nil, err
	}
	return s, finish(&r)
}

// cgCurrentValue is ConsumerGroupCurrentMemberAssignmentValue v0.
type cgCurrentValue struct {
	epoch, prevEpoch  int32
	state             int8 // Kafka's MemberState: 0 stable, 1 unrevoked, 2 unreleased
	assigned, pending partitionSet
}

// Kafka's MemberState values.
const (
	kafkaStateStable     = 0
	kafkaStateUnrevoked  = 1
	kafkaStateUnreleased = 2
)

func (c *cgCurrentValue) encode() []byte {
	b := kbin.AppendInt16(nil, 0)
	b = kbin.AppendInt32(b, c.epoch)
	b = kbin.AppendInt32(b, c.prevEpoch)
	b = kbin.AppendInt8(b, c.state)
	b = appendTopicPartitions(b, c.assigned)
	b = appendTopicPartitions(b, c.pending)
	return kbin.AppendUvarint(b, 0)
}

func decodeCurrentValue(v []byte) (cgCurrentValue, error) {
	var c cgCurrentValue
	r := kbin.Reader{Src: v}
	r.Int16()
	c.epoch = r.Int32()
	c.prevEpoch = r.Int32()
	c.state = r.Int8()
	var err error
	if c.assigned, err = readTopicPartitions(&r); err != nil {
		return c, err
	}
	if c.pending, err = readTopicPartitions(&r); err != nil {
		return c, err
	}
	return c, finish(&r)
}

// appendTopicPartitions writes a compact array of {TopicId uuid,
// Partitions []int32, tags}, topics and partitions sorted so equal sets
// encode to equal bytes.
func appendTopicPartitions(b []byte, s partitionSet) []byte {
	topics := s.sortedTopics()
	n := 0
	for _, t := range topics {
		if len(s[t]) > 0 {
			n++
		}
	}
	b = kbin.AppendCompactArrayLen(b, n)
	for _, t := range topics {
		if len(s[t]) == 0 {
			continue
		}
		b = kbin.AppendUuid(b, t)
		ps := sortedPartitions(s[t])
		b = kbin.AppendCompactArrayLen(b, len(ps))
		for _, p := range ps {
			b = kbin.AppendInt32(b, p)
		}
		b = kbin.AppendUvarint(b, 0)
	}
	return b
}

func readTopicPartitions(r *kbin.Reader) (partitionSet, error) {
	s := partitionSet{}
	n := r.CompactArrayLen()
	// Each element takes at least 18 bytes, so the count is bounded by the
	// record's size before anything is allocated.
	if n < 0 || int(n) > len(r.Src) {
		return nil, errBadRecord
	}
	for i := int32(0); i < n; i++ {
		t := r.Uuid()
		np := r.CompactArrayLen()
		if np < 0 || int(np)*4 > len(r.Src) {
			return nil, errBadRecord
		}
		for j := int32(0); j < np; j++ {
			s.add(t, r.Int32())
		}
		skipTags(r)
		if !r.Ok() {
			return nil, errBadRecord
		}
	}
	return s, nil
}

// skipTags reads past a tag buffer: fields a newer Kafka added.
func skipTags(r *kbin.Reader) {
	n := r.Uvarint()
	for i := uint32(0); i < n && r.Ok(); i++ {
		r.Uvarint() // tag
		size := r.Uvarint()
		if int(size) > len(r.Src) {
			r.Src = nil
			r.Span(1) // marks the reader bad
			return
		}
		r.Span(int(size))
	}
}

// finish reads the value's tag buffer and reports whether it was well
// formed; trailing bytes are tolerated as Kafka does for newer versions.
func finish(r *kbin.Reader) error {
	skipTags(r)
	if !r.Ok() {
		return errBadRecord
	}
	return nil
}

// Record constructors.

func cgEpochRecord(group string, epoch int32) record {
	return record{key: cgKey{version: keyConsumerGroupMetadata, group: group}.encode(), value: encodeEpochValue(epoch)}
}

func cgTargetEpochRecord(group string, epoch int32) record {
	return record{key: cgKey{version: keyConsumerGroupTargetMetadata, group: group}.encode(), value: encodeEpochValue(epoch)}
}

func cgMemberKey(version int16, group, member string) []byte {
	return cgKey{version: version, group: group, member: member}.encode()
}

func cgGroupTombstone(version int16, group string) record {
	return record{key: cgKey{version: version, group: group}.encode()}
}
