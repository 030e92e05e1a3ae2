package share

import (
	"errors"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kbin"
)

// Share-group records in __consumer_offsets (Kafka's ShareGroup*Key/Value
// schemas, CoordinatorRecordType 9 to 15). kmsg has no types for them, so
// they are encoded here. Keys are not flexible: an int16 naming the record
// type, then int16-length strings. Values are flexible version 0: an int16
// version, compact strings and arrays, and a tag buffer (fields a newer
// Kafka adds as tags, such as 4.1's MetadataHash, are skipped on read).
const (
	KeyPartitionMetadata      = 9  // ShareGroupPartitionMetadataKey: deprecated since Kafka 4.1; read and ignored
	KeyMemberMetadata         = 10 // ShareGroupMemberMetadataKey{group, member} -> rack, client, subscription
	KeyGroupMetadata          = 11 // ShareGroupMetadataKey{group} -> group epoch
	KeyTargetMetadata         = 12 // ShareGroupTargetAssignmentMetadataKey{group} -> assignment epoch
	KeyTargetMember           = 13 // ShareGroupTargetAssignmentMemberKey{group, member} -> target partitions
	KeyCurrentMember          = 14 // ShareGroupCurrentMemberAssignmentKey{group, member} -> epoch, partitions
	KeyStatePartitionMetadata = 15 // ShareGroupStatePartitionMetadataKey{group} -> initialized partitions
)

// IsRecordType reports whether a __consumer_offsets key type is a share
// group's record.
func IsRecordType(t int16) bool { return t >= KeyPartitionMetadata && t <= KeyStatePartitionMetadata }

// Record is one key/value of __consumer_offsets; a nil Value is a tombstone.
type Record struct {
	Key, Value []byte
}

var errBadRecord = errors.New("malformed share group record")

// recordKey is a share-group record key: its type, the group and, for the
// per-member ones, the member.
type recordKey struct {
	typ           int16
	group, member string
}

func hasMember(t int16) bool {
	return t == KeyMemberMetadata || t == KeyTargetMember || t == KeyCurrentMember
}

func (k recordKey) encode() []byte {
	b := kbin.AppendInt16(nil, k.typ)
	b = kbin.AppendString(b, k.group)
	if hasMember(k.typ) {
		b = kbin.AppendString(b, k.member)
	}
	return b
}

func decodeGroupKey(key []byte) (recordKey, error) {
	r := kbin.Reader{Src: key}
	k := recordKey{typ: r.Int16()}
	k.group = r.String()
	if hasMember(k.typ) {
		k.member = r.String()
	}
	if !r.Ok() || len(r.Src) != 0 || !IsRecordType(k.typ) {
		return k, errBadRecord
	}
	return k, nil
}

// encodeEpoch is ShareGroupMetadataValue's Epoch and
// ShareGroupTargetAssignmentMetadataValue's AssignmentEpoch: one int32.
func encodeEpoch(epoch int32) []byte {
	b := kbin.AppendInt16(nil, 0)
	b = kbin.AppendInt32(b, epoch)
	return kbin.AppendUvarint(b, 0)
}

func decodeEpoch(v []byte) (int32, error) {
	r := kbin.Reader{Src: v}
	r.Int16()
	e := r.Int32()
	return e, finish(&r)
}

// memberValue is ShareGroupMemberMetadataValue v0.
type memberValue struct {
	rack                 *string
	clientID, clientHost string
	topics               []string
}

func (m *memberValue) encode() []byte {
	b := kbin.AppendInt16(nil, 0)
	b = kbin.AppendCompactNullableString(b, m.rack)
	b = kbin.AppendCompactString(b, m.clientID)
	b = kbin.AppendCompactString(b, m.clientHost)
	b = kbin.AppendCompactArrayLen(b, len(m.topics))
	for _, t := range m.topics {
		b = kbin.AppendCompactString(b, t)
	}
	return kbin.AppendUvarint(b, 0)
}

func decodeMemberValue(v []byte) (memberValue, error) {
	r := kbin.Reader{Src: v}
	r.Int16()
	m := memberValue{rack: r.CompactNullableString(), clientID: r.CompactString(), clientHost: r.CompactString()}
	n := r.CompactArrayLen()
	if n < 0 || int(n) > len(r.Src) {
		return m, errBadRecord
	}
	m.topics = make([]string, 0, n)
	for i := int32(0); i < n; i++ {
		m.topics = append(m.topics, r.CompactString())
	}
	return m, finish(&r)
}

// topicParts is an assignment by topic id, as the records hold it.
type topicParts map[[16]byte][]int32

// appendTopicParts writes a compact array of {TopicId, Partitions, tags},
// sorted so that equal assignments encode to equal bytes.
func appendTopicParts(b []byte, a topicParts) []byte {
	ids := slices.SortedFunc(maps.Keys(a), func(x, y [16]byte) int { return slices.Compare(x[:], y[:]) })
	b = kbin.AppendCompactArrayLen(b, len(ids))
	for _, id := range ids {
		ps := slices.Sorted(slices.Values(a[id]))
		b = kbin.AppendUuid(b, id)
		b = kbin.AppendCompactArrayLen(b, len(ps))
		for _, p := range ps {
			b = kbin.AppendInt32(b, p)
		}
		b = kbin.AppendUvarint(b, 0)
	}
	return b
}

func readTopicParts(r *kbin.Reader) (topicParts, error) {
	n := r.CompactArrayLen()
	// An element takes at least 18 bytes: the count is bounded by the
	// record's size before anything is allocated.
	if n < 0 || int(n) > len(r.Src) {
		return nil, errBadRecord
	}
	a := topicParts{}
	for i := int32(0); i < n; i++ {
		id := r.Uuid()
		np := r.CompactArrayLen()
		if np < 0 || int(np)*4 > len(r.Src) {
			return nil, errBadRecord
		}
		ps := make([]int32, 0, np)
		for j := int32(0); j < np; j++ {
			ps = append(ps, r.Int32())
		}
		a[id] = append(a[id], ps...)
		skipTags(r)
		if !r.Ok() {
			return nil, errBadRecord
		}
	}
	return a, nil
}

// encodeTarget is ShareGroupTargetAssignmentMemberValue v0.
func encodeTarget(a topicParts) []byte {
	b := kbin.AppendInt16(nil, 0)
	b = appendTopicParts(b, a)
	return kbin.AppendUvarint(b, 0)
}

func decodeTarget(v []byte) (topicParts, error) {
	r := kbin.Reader{Src: v}
	r.Int16()
	a, err := readTopicParts(&r)
	if err != nil {
		return nil, err
	}
	return a, finish(&r)
}

// currentValue is ShareGroupCurrentMemberAssignmentValue v0. State is
// Kafka's MemberState: share members are always STABLE (0), as share
// groups revoke nothing.
type currentValue struct {
	epoch, prevEpoch int32
	state            int8
	assigned         topicParts
}

func (c *currentValue) encode() []byte {
	b := kbin.AppendInt16(nil, 0)
	b = kbin.AppendInt32(b, c.epoch)
	b = kbin.AppendInt32(b, c.prevEpoch)
	b = kbin.AppendInt8(b, c.state)
	b = appendTopicParts(b, c.assigned)
	return kbin.AppendUvarint(b, 0)
}

func decodeCurrent(v []byte) (currentValue, error) {
	r := kbin.Reader{Src: v}
	r.Int16()
	c := currentValue{epoch: r.Int32(), prevEpoch: r.Int32(), state: r.Int8()}
	a, err := readTopicParts(&r)
	if err != nil {
		return c, err
	}
	c.assigned = a
	return c, finish(&r)
}

// skipTags reads past a tag buffer.
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

// finish reads the value's tag buffer; trailing bytes (a newer version's
// fields) are tolerated as Kafka does.
func finish(r *kbin.Reader) error {
	skipTags(r)
	if !r.Ok() {
		return errBadRecord
	}
	return nil
}

// spMeta is ShareGroupStatePartitionMetadataValue v0, as Kafka 4.4's group
// coordinator keeps it per share group: the share-partitions whose state it
// is initializing (InitializeShareGroupState sent, not yet answered), those
// it has initialized, and the topics whose state it is deleting (a
// DeleteGroups or DeleteShareGroupOffsets under way). A group's deletion
// names only these partitions.
type spMeta struct {
	initializing, initialized topicParts
	deleting                  map[[16]byte]bool
}

func newSPMeta() *spMeta {
	return &spMeta{initializing: topicParts{}, initialized: topicParts{}, deleting: map[[16]byte]bool{}}
}

// unknownTopicName is the name Kafka writes for a topic id it cannot
// resolve.
const unknownTopicName = "<UNKNOWN>"

// encode writes the value: three compact arrays, InitializingTopics and
// InitializedTopics of {TopicId, TopicName, Partitions, tags} and
// DeletingTopics of {TopicId, TopicName, tags}, sorted by topic id. name
// resolves a topic id.
func (m *spMeta) encode(name func([16]byte) string) []byte {
	b := kbin.AppendInt16(nil, 0)
	for _, a := range []topicParts{m.initializing, m.initialized} {
		ids := sortedIDs(a)
		b = kbin.AppendCompactArrayLen(b, len(ids))
		for _, id := range ids {
			ps := slices.Sorted(slices.Values(a[id]))
			b = kbin.AppendUuid(b, id)
			b = kbin.AppendCompactString(b, name(id))
			b = kbin.AppendCompactArrayLen(b, len(ps))
			for _, p := range ps {
				b = kbin.AppendInt32(b, p)
			}
			b = kbin.AppendUvarint(b, 0)
		}
	}
	ids := slices.SortedFunc(maps.Keys(m.deleting), func(x, y [16]byte) int { return slices.Compare(x[:], y[:]) })
	b = kbin.AppendCompactArrayLen(b, len(ids))
	for _, id := range ids {
		b = kbin.AppendUuid(b, id)
		b = kbin.AppendCompactString(b, name(id))
		b = kbin.AppendUvarint(b, 0)
	}
	return kbin.AppendUvarint(b, 0)
}

func sortedIDs(a topicParts) [][16]byte {
	return slices.SortedFunc(maps.Keys(a), func(x, y [16]byte) int { return slices.Compare(x[:], y[:]) })
}

func decodeSPMeta(v []byte) (*spMeta, error) {
	r := kbin.Reader{Src: v}
	r.Int16()
	m := newSPMeta()
	for _, a := range []topicParts{m.initializing, m.initialized} {
		n := r.CompactArrayLen()
		// An element takes at least 19 bytes: the count is bounded by the
		// record's size before anything is allocated.
		if n < 0 || int(n) > len(r.Src) {
			return nil, errBadRecord
		}
		for i := int32(0); i < n; i++ {
			id := r.Uuid()
			r.CompactString()
			np := r.CompactArrayLen()
			if np < 0 || int(np)*4 > len(r.Src) {
				return nil, errBadRecord
			}
			for j := int32(0); j < np; j++ {
				a[id] = append(a[id], r.Int32())
			}
			skipTags(&r)
			if !r.Ok() {
				return nil, errBadRecord
			}
		}
	}
	n := r.CompactArrayLen()
	if n < 0 || int(n) > len(r.Src) {
		return nil, errBadRecord
	}
	for i := int32(0); i < n; i++ {
		id := r.Uuid()
		r.CompactString()
		skipTags(&r)
		if !r.Ok() {
			return nil, errBadRecord
		}
		m.deleting[id] = true
	}
	if err := finish(&r); err != nil {
		return nil, err
	}
	return m, nil
}
