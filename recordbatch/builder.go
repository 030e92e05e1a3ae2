package recordbatch

import "encoding/binary"

// Builder encodes one uncompressed v2 batch. Set the header fields, add
// records, then Build. The zero value is not ready: use NewBuilder.
type Builder struct {
	BaseOffset    int64
	LeaderEpoch   int32
	ProducerID    int64
	ProducerEpoch int16
	BaseSequence  int32
	Transactional bool
	Control       bool
	LogAppendTime bool
	// BaseTimestamp is the first record's timestamp; records carry theirs
	// as deltas from it.
	BaseTimestamp int64

	records         []byte
	count           int32
	lastOffsetDelta int32
	maxTimestamp    int64
}

// NewBuilder is a builder for a batch at baseTimestamp with no producer id
// (ProducerID, ProducerEpoch, BaseSequence -1) and leader epoch -1 (the
// broker sets the base offset and leader epoch on append).
func NewBuilder(baseTimestamp int64) *Builder {
	return &Builder{
		LeaderEpoch:   NoLeaderEpoch,
		ProducerID:    NoProducerID,
		ProducerEpoch: NoProducerEpoch,
		BaseSequence:  NoSequence,
		BaseTimestamp: baseTimestamp,
		maxTimestamp:  NoTimestamp,
	}
}

// Add appends a record at the next offset delta with the batch's base
// timestamp; a nil value is a tombstone, a nil key a null key.
func (b *Builder) Add(key, value []byte) {
	b.AddRecord(&Record{OffsetDelta: b.count, Key: key, Value: value})
}

// AddRecord appends r as it is (its offset and timestamp deltas included).
func (b *Builder) AddRecord(r *Record) {
	b.records = AppendRecord(b.records, r)
	b.count++
	b.lastOffsetDelta = max(b.lastOffsetDelta, r.OffsetDelta)
	b.maxTimestamp = max(b.maxTimestamp, b.BaseTimestamp+r.TimestampDelta)
}

// Len is the number of records added.
func (b *Builder) Len() int32 { return b.count }

// Build returns the encoded batch with its CRC set. The builder may be
// used again (its records stay).
func (b *Builder) Build() []byte {
	attrs := int16(0)
	if b.Transactional {
		attrs |= AttrTransactional
	}
	if b.Control {
		attrs |= AttrControl
	}
	if b.LogAppendTime {
		attrs |= AttrTimestampType
	}
	maxTs := b.maxTimestamp
	if b.count == 0 {
		maxTs = b.BaseTimestamp
	}
	h := Header{
		BaseOffset:      b.BaseOffset,
		BatchLength:     int32(HeaderSize - LogOverhead + len(b.records)),
		LeaderEpoch:     b.LeaderEpoch,
		Attributes:      attrs,
		LastOffsetDelta: b.lastOffsetDelta,
		BaseTimestamp:   b.BaseTimestamp,
		MaxTimestamp:    maxTs,
		ProducerID:      b.ProducerID,
		ProducerEpoch:   b.ProducerEpoch,
		BaseSequence:    b.BaseSequence,
		RecordCount:     b.count,
	}
	out := make([]byte, HeaderSize, HeaderSize+len(b.records))
	out = append(out, b.records...)
	h.Put(out)
	return out
}

// Control record types (ControlRecordType): the key's second int16.
const (
	ControlAbort  = 0
	ControlCommit = 1
)

// EndTxnMarker is the record of a control batch ending a transaction.
type EndTxnMarker struct {
	ProducerID       int64
	ProducerEpoch    int16
	CoordinatorEpoch int32
	Commit           bool
}

// MarkerBatch encodes m as a transactional control batch of one record at
// timestamp nowMs (leader epoch -1, no sequence; the broker sets the base
// offset and leader epoch on append).
func MarkerBatch(m EndTxnMarker, nowMs int64) []byte {
	typ := uint16(ControlAbort)
	if m.Commit {
		typ = ControlCommit
	}
	be := binary.BigEndian
	key := be.AppendUint16(be.AppendUint16(make([]byte, 0, 4), 0), typ)                          // version, type
	value := be.AppendUint32(be.AppendUint16(make([]byte, 0, 6), 0), uint32(m.CoordinatorEpoch)) // version, epoch
	b := NewBuilder(nowMs)
	b.ProducerID, b.ProducerEpoch = m.ProducerID, m.ProducerEpoch
	b.Transactional, b.Control = true, true
	b.Add(key, value)
	return b.Build()
}

// ParseMarker reads the end transaction marker of a control batch: ok is
// false for an empty control batch (its transaction compacted away), a
// compressed one, or one whose record is not a commit or abort marker.
func ParseMarker(batch []byte) (m EndTxnMarker, ok bool) {
	if len(batch) <= HeaderSize {
		return m, false
	}
	h := ParseHeader(batch)
	if h.RecordCount < 1 || h.Compression() != 0 {
		return m, false
	}
	it := NewIter(batch[HeaderSize:], 1)
	var r Record
	if !it.Next(&r) || len(r.Key) < 4 || len(r.Value) < 6 {
		return m, false
	}
	be := binary.BigEndian
	switch int16(be.Uint16(r.Key[2:])) {
	case ControlAbort:
	case ControlCommit:
		m.Commit = true
	default:
		return m, false
	}
	m.ProducerID, m.ProducerEpoch = h.ProducerID, h.ProducerEpoch
	m.CoordinatorEpoch = int32(be.Uint32(r.Value[2:]))
	return m, true
}
