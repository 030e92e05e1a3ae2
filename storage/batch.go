package storage

import (
	"encoding/binary"
	"hash/crc32"

	"github.com/strait/strait/storage/compress"
)

// Layout of a magic v2 record batch header (all big-endian). The CRC32C
// covers attributes through the end of the batch, so the broker-owned
// baseOffset and partitionLeaderEpoch can be set without recomputing it.
const (
	offBaseOffset      = 0  // int64
	offBatchLength     = 8  // int32: bytes after this field
	offLeaderEpoch     = 12 // int32
	offMagic           = 16 // int8
	offCRC             = 17 // uint32
	offAttributes      = 21 // int16
	offLastOffsetDelta = 23 // int32
	offBaseTimestamp   = 27 // int64
	offMaxTimestamp    = 35 // int64
	offProducerID      = 43 // int64
	offProducerEpoch   = 51 // int16
	offBaseSequence    = 53 // int32
	offRecordCount     = 57 // int32

	// batchHeaderSize is the fixed part before the records (Kafka's
	// RECORD_BATCH_OVERHEAD).
	batchHeaderSize = 61
	// logOverhead is baseOffset + batchLength, the part of a batch outside
	// batchLength.
	logOverhead = 12
	// minBatchLength is the smallest valid batchLength of a v2 batch.
	minBatchLength = batchHeaderSize - logOverhead
	// legacyMinRecordSize is Kafka's LegacyRecord.RECORD_OVERHEAD_V0: a
	// batchLength below it is corrupt whatever the magic.
	legacyMinRecordSize = 14

	magicV2 = 2
)

// Attribute bits.
const (
	attrCompressionMask = 0x07
	attrTimestampType   = 0x08
	attrTransactional   = 0x10
	attrControl         = 0x20
	attrDeleteHorizon   = 0x40
)

// noTimestamp is RecordBatch.NO_TIMESTAMP.
const noTimestamp = -1

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// batchHeader is the decoded fixed part of a v2 record batch.
type batchHeader struct {
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

// parseBatchHeader decodes b[:batchHeaderSize]; len(b) must be at least that.
func parseBatchHeader(b []byte) batchHeader {
	be := binary.BigEndian
	return batchHeader{
		BaseOffset:      int64(be.Uint64(b[offBaseOffset:])),
		BatchLength:     int32(be.Uint32(b[offBatchLength:])),
		LeaderEpoch:     int32(be.Uint32(b[offLeaderEpoch:])),
		Magic:           int8(b[offMagic]),
		CRC:             be.Uint32(b[offCRC:]),
		Attributes:      int16(be.Uint16(b[offAttributes:])),
		LastOffsetDelta: int32(be.Uint32(b[offLastOffsetDelta:])),
		BaseTimestamp:   int64(be.Uint64(b[offBaseTimestamp:])),
		MaxTimestamp:    int64(be.Uint64(b[offMaxTimestamp:])),
		ProducerID:      int64(be.Uint64(b[offProducerID:])),
		ProducerEpoch:   int16(be.Uint16(b[offProducerEpoch:])),
		BaseSequence:    int32(be.Uint32(b[offBaseSequence:])),
		RecordCount:     int32(be.Uint32(b[offRecordCount:])),
	}
}

// size is the whole batch's size in bytes, header included.
func (h *batchHeader) size() int64 { return int64(h.BatchLength) + logOverhead }

// lastOffset is the offset of the batch's last record.
func (h *batchHeader) lastOffset() int64 { return h.BaseOffset + int64(h.LastOffsetDelta) }

// nextOffset is the offset after the batch's last record.
func (h *batchHeader) nextOffset() int64 { return h.lastOffset() + 1 }

func (h *batchHeader) codec() compress.Codec {
	return compress.Codec(h.Attributes & attrCompressionMask)
}

func (h *batchHeader) timestampType() TimestampType {
	if h.Attributes&attrTimestampType != 0 {
		return LogAppendTime
	}
	return CreateTime
}

func (h *batchHeader) isControl() bool       { return h.Attributes&attrControl != 0 }
func (h *batchHeader) isTransactional() bool { return h.Attributes&attrTransactional != 0 }
func (h *batchHeader) hasProducerID() bool   { return h.ProducerID >= 0 }

// batchCRC computes the CRC32C a v2 batch must carry: over attributes
// through the end.
func batchCRC(batch []byte) uint32 {
	return crc32.Checksum(batch[offAttributes:], castagnoli)
}

// setBaseOffset, setLeaderEpoch write broker-owned fields outside the CRC.
func setBaseOffset(batch []byte, off int64) {
	binary.BigEndian.PutUint64(batch[offBaseOffset:], uint64(off))
}

func setLeaderEpoch(batch []byte, epoch int32) {
	binary.BigEndian.PutUint32(batch[offLeaderEpoch:], uint32(epoch))
}

// setMaxTimestamp writes the timestamp type bit and max timestamp and
// recomputes the CRC when either changed, as Kafka's
// DefaultRecordBatch.setMaxTimestamp does.
func setMaxTimestamp(batch []byte, tsType TimestampType, maxTs int64) {
	be := binary.BigEndian
	attrs := be.Uint16(batch[offAttributes:])
	newAttrs := attrs &^ attrTimestampType
	if tsType == LogAppendTime {
		newAttrs |= attrTimestampType
	}
	if newAttrs == attrs && int64(be.Uint64(batch[offMaxTimestamp:])) == maxTs {
		return
	}
	be.PutUint16(batch[offAttributes:], newAttrs)
	be.PutUint64(batch[offMaxTimestamp:], uint64(maxTs))
	be.PutUint32(batch[offCRC:], batchCRC(batch))
}

// FirstBatchCompression returns the codec of the first batch in a produce
// partition's records, ok false if they do not start with a v2 batch
// header. The broker needs it for a version rule storage does not know:
// Produce v3-v6 may not use zstd (UNSUPPORTED_COMPRESSION_TYPE).
func FirstBatchCompression(records []byte) (codec compress.Codec, ok bool) {
	if len(records) < offAttributes+2 || records[offMagic] != magicV2 {
		return compress.None, false
	}
	return compress.Codec(binary.BigEndian.Uint16(records[offAttributes:]) & attrCompressionMask), true
}
