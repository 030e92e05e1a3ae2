package storage

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/strait/strait/recordbatch"
	"github.com/strait/strait/storage/compress"
)

// The cleaner's record-level work: parsing a batch's records with their
// keys, and writing a batch back with only the records it keeps, as
// Kafka's MemoryRecords.filterTo and MemoryRecordsBuilder do.

// cleanRecord is one record of a batch being cleaned.
type cleanRecord struct {
	offset    int64
	timestamp int64  // the record's timestamp as Kafka's Record.timestamp() reads it
	key       []byte // nil when the key is null
	hasValue  bool   // false for a tombstone
	// rec is the record as parsed: its key, value and headers are written
	// back as they are when the batch is rewritten, since only the
	// timestamp and offset deltas change.
	rec recordbatch.Record
}

// deleteHorizon returns the batch's delete horizon (KIP-534): when
// attributes bit 6 is set, baseTimestamp holds the time from which its
// tombstones may be removed.
func (h *batchHeader) deleteHorizon() (int64, bool) {
	if h.Attributes&recordbatch.AttrDeleteHorizon != 0 {
		return h.BaseTimestamp, true
	}
	return recordbatch.NoTimestamp, false
}

// decompressedRecords returns the records section of a batch, decompressed
// into buf (reused between calls) when the batch is compressed.
func decompressedRecords(batch []byte, h *batchHeader, buf *bytes.Buffer) ([]byte, error) {
	payload := batch[recordbatch.HeaderSize:]
	if h.codec() == compress.None {
		return payload, nil
	}
	r, err := compress.NewReader(h.codec(), payload)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	buf.Reset()
	if _, err := buf.ReadFrom(io.LimitReader(r, math.MaxInt32)); err != nil {
		return nil, fmt.Errorf("%s: %w", h.codec(), err)
	}
	return buf.Bytes(), nil
}

// errNegativeOffsetDelta refuses a record before its batch's base offset.
var errNegativeOffsetDelta = errors.New("negative record offset delta")

// parseCleanRecords parses the records of a batch from its uncompressed
// records section, appending them to out. The records alias records.
func parseCleanRecords(records []byte, h *batchHeader, out []cleanRecord) ([]cleanRecord, error) {
	logAppend := h.timestampType() == LogAppendTime
	it := recordbatch.NewIter(records, h.RecordCount)
	var r recordbatch.Record
	for it.Next(&r) {
		if r.OffsetDelta < 0 {
			return out, fmt.Errorf("record %d of the batch at offset %d: %w", it.Index()-1, h.BaseOffset, errNegativeOffsetDelta)
		}
		rec := cleanRecord{
			offset:    h.BaseOffset + int64(r.OffsetDelta),
			timestamp: h.BaseTimestamp + r.TimestampDelta,
			key:       r.Key,
			hasValue:  r.Value != nil,
			rec:       r,
		}
		if logAppend {
			rec.timestamp = h.MaxTimestamp
		}
		out = append(out, rec)
	}
	if err := it.Err(); err != nil {
		return out, fmt.Errorf("record %d of the batch at offset %d: %w", it.Index(), h.BaseOffset, err)
	}
	return out, nil
}

// appendRebuiltBatch appends to dst a v2 batch holding recs, the records
// a cleaning keeps of the batch h, as Kafka's buildRetainedRecordsInto: the
// base offset, last offset delta (so the producer's last sequence
// survives), producer fields, leader epoch, timestamp type and codec are
// h's; records keep their offsets; baseTimestamp is the delete horizon when
// deleteHorizonMs >= 0 (attributes bit 6 set), else the first record's
// timestamp; maxTimestamp is the largest record timestamp, or h's for
// LogAppendTime. scratch holds the uncompressed records between calls.
func appendRebuiltBatch(dst []byte, h *batchHeader, recs []cleanRecord, deleteHorizonMs int64, scratch *[]byte) ([]byte, error) {
	baseTs := deleteHorizonMs
	if baseTs < 0 && len(recs) > 0 {
		baseTs = recs[0].timestamp
	}
	maxTs := int64(recordbatch.NoTimestamp)
	raw := (*scratch)[:0]
	for i := range recs {
		r := &recs[i]
		out := r.rec
		out.Attributes = 0 // unused, written as 0 as Kafka's DefaultRecord does
		out.TimestampDelta = r.timestamp - baseTs
		out.OffsetDelta = int32(r.offset - h.BaseOffset)
		raw = recordbatch.AppendRecord(raw, &out)
		maxTs = max(maxTs, r.timestamp)
	}
	*scratch = raw
	if h.timestampType() == LogAppendTime {
		maxTs = h.MaxTimestamp
	}
	attrs := h.Attributes &^ recordbatch.AttrDeleteHorizon
	if deleteHorizonMs >= 0 {
		attrs |= recordbatch.AttrDeleteHorizon
	}
	out := *h
	out.Attributes, out.BaseTimestamp, out.MaxTimestamp = attrs, baseTs, maxTs
	out.RecordCount = int32(len(recs))

	start := len(dst)
	dst = append(dst, make([]byte, recordbatch.HeaderSize)...)
	dst, err := compress.Compress(h.codec(), dst, raw)
	if err != nil {
		return dst[:start], err
	}
	out.BatchLength = int32(len(dst) - start - recordbatch.LogOverhead)
	out.Put(dst[start:])
	return dst, nil
}

// appendEmptyBatch appends the header-only batch Kafka keeps when every
// record of h is removed but the batch must stay (DefaultRecordBatch.
// writeEmptyHeader): h's offsets, producer fields, leader epoch, timestamp
// type, transactional and control bits and maxTimestamp; no codec, no
// delete horizon, baseTimestamp -1, zero records.
func appendEmptyBatch(dst []byte, h *batchHeader) []byte {
	out := *h
	out.Attributes = h.Attributes & (recordbatch.AttrTimestampType | recordbatch.AttrTransactional | recordbatch.AttrControl)
	out.BaseTimestamp = recordbatch.NoTimestamp
	out.RecordCount = 0
	out.BatchLength = recordbatch.HeaderSize - recordbatch.LogOverhead
	start := len(dst)
	dst = append(dst, make([]byte, recordbatch.HeaderSize)...)
	out.Put(dst[start:])
	return dst
}
