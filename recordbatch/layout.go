package recordbatch

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
)

// Byte positions of the header fields of a v2 batch.
const (
	PosBaseOffset      = 0  // int64
	PosBatchLength     = 8  // int32: bytes after this field
	PosLeaderEpoch     = 12 // int32
	PosMagic           = 16 // int8
	PosCRC             = 17 // uint32
	PosAttributes      = 21 // int16
	PosLastOffsetDelta = 23 // int32
	PosBaseTimestamp   = 27 // int64
	PosMaxTimestamp    = 35 // int64
	PosProducerID      = 43 // int64
	PosProducerEpoch   = 51 // int16
	PosBaseSequence    = 53 // int32
	PosRecordCount     = 57 // int32
)

const (
	// HeaderSize is the fixed part before the records (Kafka's
	// RECORD_BATCH_OVERHEAD).
	HeaderSize = 61
	// LogOverhead is baseOffset + batchLength, the part of a batch outside
	// batchLength.
	LogOverhead = 12
	// MinBatchLength is the smallest valid batchLength of a v2 batch.
	MinBatchLength = HeaderSize - LogOverhead
	// LegacyMinRecordSize is Kafka's LegacyRecord.RECORD_OVERHEAD_V0: a
	// batchLength below it is corrupt whatever the magic.
	LegacyMinRecordSize = 14

	// MagicV2 is the only magic Strait reads and writes.
	MagicV2 = 2
)

// Attribute bits.
const (
	AttrCompressionMask = 0x07
	AttrTimestampType   = 0x08 // set: LogAppendTime
	AttrTransactional   = 0x10
	AttrControl         = 0x20
	AttrDeleteHorizon   = 0x40 // KIP-534: baseTimestamp is the delete horizon
)

// Sentinels of the header fields.
const (
	NoTimestamp     = -1 // RecordBatch.NO_TIMESTAMP
	NoProducerID    = -1
	NoProducerEpoch = -1
	NoSequence      = -1
	NoLeaderEpoch   = -1
)

// CRCTable is the CRC-32C (Castagnoli) table of the batch CRC, for a CRC
// computed piecewise with crc32.Update.
var CRCTable = crc32.MakeTable(crc32.Castagnoli)

// Errors of batch framing.
var (
	ErrShortBatch = errors.New("record batch shorter than its header")
	ErrMagic      = errors.New("not a magic v2 record batch")
	ErrLength     = errors.New("record batch length does not match its bytes")
)

// Batch is one encoded v2 batch. Its accessors read and write the header in
// place; they need len(b) >= HeaderSize (see Check).
type Batch []byte

// Check verifies that b is one whole v2 batch: a full header, magic 2 and a
// batchLength that covers exactly b.
func Check(b []byte) error {
	if len(b) < HeaderSize {
		return ErrShortBatch
	}
	if b[PosMagic] != MagicV2 {
		return ErrMagic
	}
	if l := int64(int32(binary.BigEndian.Uint32(b[PosBatchLength:]))); l < MinBatchLength || l+LogOverhead != int64(len(b)) {
		return ErrLength
	}
	return nil
}

func (b Batch) BaseOffset() int64 { return int64(binary.BigEndian.Uint64(b[PosBaseOffset:])) }
func (b Batch) BatchLength() int32 {
	return int32(binary.BigEndian.Uint32(b[PosBatchLength:]))
}
func (b Batch) LeaderEpoch() int32 { return int32(binary.BigEndian.Uint32(b[PosLeaderEpoch:])) }
func (b Batch) Magic() int8        { return int8(b[PosMagic]) }
func (b Batch) CRC() uint32        { return binary.BigEndian.Uint32(b[PosCRC:]) }
func (b Batch) Attributes() int16  { return int16(binary.BigEndian.Uint16(b[PosAttributes:])) }
func (b Batch) LastOffsetDelta() int32 {
	return int32(binary.BigEndian.Uint32(b[PosLastOffsetDelta:]))
}
func (b Batch) BaseTimestamp() int64 { return int64(binary.BigEndian.Uint64(b[PosBaseTimestamp:])) }
func (b Batch) MaxTimestamp() int64  { return int64(binary.BigEndian.Uint64(b[PosMaxTimestamp:])) }
func (b Batch) ProducerID() int64    { return int64(binary.BigEndian.Uint64(b[PosProducerID:])) }
func (b Batch) ProducerEpoch() int16 { return int16(binary.BigEndian.Uint16(b[PosProducerEpoch:])) }
func (b Batch) BaseSequence() int32  { return int32(binary.BigEndian.Uint32(b[PosBaseSequence:])) }
func (b Batch) RecordCount() int32   { return int32(binary.BigEndian.Uint32(b[PosRecordCount:])) }

// LastOffset is the offset of the batch's last record.
func (b Batch) LastOffset() int64 { return b.BaseOffset() + int64(b.LastOffsetDelta()) }

// Compression is the codec id of the attributes (0 none, 1 gzip, 2 snappy,
// 3 lz4, 4 zstd).
func (b Batch) Compression() int8     { return int8(b.Attributes() & AttrCompressionMask) }
func (b Batch) IsTransactional() bool { return b.Attributes()&AttrTransactional != 0 }
func (b Batch) IsControl() bool       { return b.Attributes()&AttrControl != 0 }

// Records is the (possibly compressed) records section.
func (b Batch) Records() []byte { return b[HeaderSize:] }

// Header decodes the whole fixed part.
func (b Batch) Header() Header { return ParseHeader(b) }

// SetBaseOffset and SetLeaderEpoch write the broker-owned fields outside
// the CRC.
func (b Batch) SetBaseOffset(off int64) {
	binary.BigEndian.PutUint64(b[PosBaseOffset:], uint64(off))
}

func (b Batch) SetLeaderEpoch(epoch int32) {
	binary.BigEndian.PutUint32(b[PosLeaderEpoch:], uint32(epoch))
}

// ComputeCRC is the CRC-32C the batch must carry: over attributes through
// the end of b.
func (b Batch) ComputeCRC() uint32 { return crc32.Checksum(b[PosAttributes:], CRCTable) }

// SetCRC stores ComputeCRC.
func (b Batch) SetCRC() { binary.BigEndian.PutUint32(b[PosCRC:], b.ComputeCRC()) }

// CRCValid reports whether the stored CRC matches the bytes.
func (b Batch) CRCValid() bool { return b.CRC() == b.ComputeCRC() }

// SetMaxTimestamp writes the timestamp type bit and max timestamp and
// recomputes the CRC when either changed, as Kafka's
// DefaultRecordBatch.setMaxTimestamp does.
func (b Batch) SetMaxTimestamp(logAppendTime bool, maxTs int64) {
	be := binary.BigEndian
	attrs := be.Uint16(b[PosAttributes:])
	newAttrs := attrs &^ AttrTimestampType
	if logAppendTime {
		newAttrs |= AttrTimestampType
	}
	if newAttrs == attrs && int64(be.Uint64(b[PosMaxTimestamp:])) == maxTs {
		return
	}
	be.PutUint16(b[PosAttributes:], newAttrs)
	be.PutUint64(b[PosMaxTimestamp:], uint64(maxTs))
	b.SetCRC()
}

// Header is the decoded fixed part of a v2 batch.
type Header struct {
	BaseOffset      int64
	BatchLength     int32
	LeaderEpoch     int32
	Magic           int8
	CRC             uint32
	Attributes      int16
	LastOffsetDelta int32
	BaseTimestamp   int64
	MaxTimestamp    int64
	ProducerID      int64
	ProducerEpoch   int16
	BaseSequence    int32
	RecordCount     int32
}

// ParseHeader decodes b[:HeaderSize]; len(b) must be at least that.
func ParseHeader(b []byte) Header {
	be := binary.BigEndian
	_ = b[HeaderSize-1]
	return Header{
		BaseOffset:      int64(be.Uint64(b[PosBaseOffset:])),
		BatchLength:     int32(be.Uint32(b[PosBatchLength:])),
		LeaderEpoch:     int32(be.Uint32(b[PosLeaderEpoch:])),
		Magic:           int8(b[PosMagic]),
		CRC:             be.Uint32(b[PosCRC:]),
		Attributes:      int16(be.Uint16(b[PosAttributes:])),
		LastOffsetDelta: int32(be.Uint32(b[PosLastOffsetDelta:])),
		BaseTimestamp:   int64(be.Uint64(b[PosBaseTimestamp:])),
		MaxTimestamp:    int64(be.Uint64(b[PosMaxTimestamp:])),
		ProducerID:      int64(be.Uint64(b[PosProducerID:])),
		ProducerEpoch:   int16(be.Uint16(b[PosProducerEpoch:])),
		BaseSequence:    int32(be.Uint32(b[PosBaseSequence:])),
		RecordCount:     int32(be.Uint32(b[PosRecordCount:])),
	}
}

// ReadHeader is ParseHeader after Check.
func ReadHeader(b []byte) (Header, error) {
	if err := Check(b); err != nil {
		return Header{}, err
	}
	return ParseHeader(b), nil
}

// Size is the whole batch's size in bytes, header included.
func (h *Header) Size() int64 { return int64(h.BatchLength) + LogOverhead }

// LastOffset is the offset of the batch's last record.
func (h *Header) LastOffset() int64 { return h.BaseOffset + int64(h.LastOffsetDelta) }

// NextOffset is the offset after the batch's last record.
func (h *Header) NextOffset() int64 { return h.LastOffset() + 1 }

// Compression is the codec id of the attributes.
func (h *Header) Compression() int8 { return int8(h.Attributes & AttrCompressionMask) }

func (h *Header) LogAppendTime() bool   { return h.Attributes&AttrTimestampType != 0 }
func (h *Header) IsControl() bool       { return h.Attributes&AttrControl != 0 }
func (h *Header) IsTransactional() bool { return h.Attributes&AttrTransactional != 0 }
func (h *Header) HasProducerID() bool   { return h.ProducerID >= 0 }

// DeleteHorizon is the batch's delete horizon (KIP-534): when attributes
// bit 6 is set, baseTimestamp holds the time from which its tombstones may
// be removed.
func (h *Header) DeleteHorizon() (int64, bool) {
	if h.Attributes&AttrDeleteHorizon != 0 {
		return h.BaseTimestamp, true
	}
	return NoTimestamp, false
}

// Put writes h into b[:HeaderSize] with magic 2 and sets the CRC over
// b[:h.Size()] (the records already in place).
func (h *Header) Put(b []byte) {
	be := binary.BigEndian
	be.PutUint64(b[PosBaseOffset:], uint64(h.BaseOffset))
	be.PutUint32(b[PosBatchLength:], uint32(h.BatchLength))
	be.PutUint32(b[PosLeaderEpoch:], uint32(h.LeaderEpoch))
	b[PosMagic] = MagicV2
	be.PutUint16(b[PosAttributes:], uint16(h.Attributes))
	be.PutUint32(b[PosLastOffsetDelta:], uint32(h.LastOffsetDelta))
	be.PutUint64(b[PosBaseTimestamp:], uint64(h.BaseTimestamp))
	be.PutUint64(b[PosMaxTimestamp:], uint64(h.MaxTimestamp))
	be.PutUint64(b[PosProducerID:], uint64(h.ProducerID))
	be.PutUint16(b[PosProducerEpoch:], uint16(h.ProducerEpoch))
	be.PutUint32(b[PosBaseSequence:], uint32(h.BaseSequence))
	be.PutUint32(b[PosRecordCount:], uint32(h.RecordCount))
	Batch(b[:h.Size()]).SetCRC()
}

// Split returns the first batch of a record set and the rest, by its
// batchLength alone. ok is false when b does not hold a whole batch: fewer
// than LogOverhead bytes, a negative batchLength, or a batch running past
// the end of b (a fetch response may end in a partial batch, KIP-74). The
// batch itself is not checked (see Check).
func Split(b []byte) (batch, rest []byte, ok bool) {
	if len(b) < LogOverhead {
		return nil, b, false
	}
	l := int64(int32(binary.BigEndian.Uint32(b[PosBatchLength:])))
	if l < 0 || l > int64(len(b)-LogOverhead) {
		return nil, b, false
	}
	n := int(l) + LogOverhead
	return b[:n:n], b[n:], true
}

// WholeBatches cuts a record set after its last complete batch.
func WholeBatches(b []byte) []byte {
	n := 0
	for {
		batch, _, ok := Split(b[n:])
		if !ok {
			return b[:n]
		}
		n += len(batch)
	}
}

// FirstBatchCompression returns the codec of the first batch of a record
// set, ok false if it does not start with a v2 batch header.
func FirstBatchCompression(records []byte) (codec int8, ok bool) {
	if len(records) < PosAttributes+2 || records[PosMagic] != MagicV2 {
		return 0, false
	}
	return Batch(records).Compression(), true
}
