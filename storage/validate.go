package storage

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"

	"github.com/strait/strait/recordbatch"
	"github.com/strait/strait/storage/compress"
	"github.com/twmb/franz-go/pkg/kerr"
)

// validatedBatch is a produce batch that passed validation, with the
// broker-owned fields that do not depend on the log's state already set.
type validatedBatch struct {
	bytes  []byte // exactly one whole batch, aliasing the request's records
	header batchHeader
	// maxTimestamp and offsetDeltaOfMaxTimestamp locate the record with the
	// largest timestamp (for ListOffsets MAX_TIMESTAMP and the time index).
	maxTimestamp              int64
	offsetDeltaOfMaxTimestamp int32
	logAppendTime             int64 // -1 unless LogAppendTime
	// deltasInOrder says the records' offset deltas run 0..n-1;
	// firstTimestamp is the first record's timestamp as Kafka's
	// Record.timestamp() reads it (a rebuilt batch's base timestamp).
	deltasInOrder  bool
	firstTimestamp int64
	// rebuilt says bytes is a batch rebuildBatch wrote, not the request's.
	rebuilt bool
}

// validateProduce checks a produce request's records for one partition as
// Kafka does across ProduceRequest.validateRecords,
// UnifiedLog.analyzeAndValidateRecords and LogValidator (origin CLIENT,
// magic v2), in Kafka's order so that the first failing check decides the
// error code. On success it sets the max timestamp (and for LogAppendTime
// the timestamp-type bit), recomputing the CRC if either changed; the base
// offset and leader epoch are set at append time. records is modified in
// place.
//
// A batch is then written as it came (in place, Kafka's words) unless
// LogValidator would rebuild it: its codec is not the topic's
// compression.type (recompressed), or it is compressed and its records'
// offset deltas do not run 0..count-1 (rewritten with deltas by position,
// as Kafka does for the older clients that got them wrong). An
// uncompressed batch kept uncompressed is written with its deltas as they
// are, as Kafka's assignOffsetsNonCompressed does.
//
// Deviation from Kafka, for input no Kafka client produces: a batch
// whose codec fails to decompress is CORRUPT_MESSAGE (Kafka answers
// UNKNOWN_SERVER_ERROR).
func validateProduce(records []byte, cfg *LogConfig, nowMs int64, logDir string) (validatedBatch, error) {
	batch, err := singleBatch(records)
	if err != nil {
		return validatedBatch{}, err
	}
	h := parseBatchHeader(batch)

	// UnifiedLog.analyzeAndValidateRecords.
	if h.BaseOffset != 0 {
		return validatedBatch{}, invalidRecordf("the baseOffset of the record batch should be 0, but it is %d", h.BaseOffset)
	}
	if h.Size() > int64(cfg.MaxMessageBytes) {
		return validatedBatch{}, appendErrorf(kerr.MessageTooLarge,
			"the record batch size is %d bytes, larger than max.message.bytes %d", h.Size(), cfg.MaxMessageBytes)
	}
	if got := recordbatch.Batch(batch).ComputeCRC(); got != h.CRC {
		return validatedBatch{}, corruptMessagef("record batch is corrupt (stored crc = %d, computed crc = %d)", h.CRC, got)
	}
	if !h.codec().Valid() {
		return validatedBatch{}, appendErrorf(kerr.UnknownServerError, "unknown compression type id %d", h.codec())
	}

	// LogValidator.validateBatch.
	if h.LastOffsetDelta < 0 {
		return validatedBatch{}, invalidRecordf("batch has an invalid offset range: [0, %d]", h.LastOffsetDelta)
	}
	if h.RecordCount <= 0 {
		return validatedBatch{}, invalidRecordf("invalid reported count for record batch: %d", h.RecordCount)
	}
	if int64(h.LastOffsetDelta)+1 != int64(h.RecordCount) {
		return validatedBatch{}, invalidRecordf("inconsistent batch offset range [0, %d] and count of records %d",
			h.LastOffsetDelta, h.RecordCount)
	}
	if h.IsControl() {
		return validatedBatch{}, invalidRecordf("clients are not allowed to write control records")
	}
	if h.HasProducerID() && h.BaseSequence < 0 {
		return validatedBatch{}, invalidRecordf("invalid sequence number %d in record batch with producerId %d",
			h.BaseSequence, h.ProducerID)
	}

	vb, err := validateRecords(batch, &h, cfg, nowMs, logDir)
	if err != nil {
		return validatedBatch{}, err
	}
	source := h.codec()
	target, level := cfg.targetCompression(source)
	if (source != compress.None || target != compress.None) && (source != target || !vb.deltasInOrder) {
		// h is the header as produced: validateRecords set the batch's
		// max timestamp since, which the rebuild takes from vb.
		if vb, err = rebuildBatch(batch, &h, vb, cfg, target, level); err != nil {
			return validatedBatch{}, err
		}
		// UnifiedLog.append checks a rebuilt batch's size again.
		if vb.header.Size() > int64(cfg.MaxMessageBytes) {
			return validatedBatch{}, appendErrorf(kerr.MessageTooLarge,
				"Message batch size is %d bytes in append to partition %s which exceeds the maximum configured size of %d.",
				vb.header.Size(), filepath.Base(logDir), cfg.MaxMessageBytes)
		}
	}
	if vb.header.Size() > cfg.SegmentBytes {
		return validatedBatch{}, appendErrorf(kerr.RecordListTooLarge,
			"message batch size is %d bytes, larger than segment.bytes %d", vb.header.Size(), cfg.SegmentBytes)
	}
	return vb, nil
}

// singleBatch returns the one complete batch of a produce partition's
// records, following Kafka's batch iterator (ByteBufferLogInputStream):
// a size field below 14 or a magic outside 0-2 is CORRUPT_MESSAGE, an
// incomplete batch ends the iteration, so trailing partial bytes are
// ignored (Kafka trims them), and zero or several complete batches are
// INVALID_RECORD, as is a magic other than 2.
func singleBatch(records []byte) ([]byte, error) {
	first, n, err := nextBatchBounds(records)
	if err != nil {
		return nil, err
	}
	if first == nil {
		return nil, invalidRecordf("produce requests must have at least one record batch per partition")
	}
	if magic := int8(first[recordbatch.PosMagic]); magic != recordbatch.MagicV2 {
		return nil, invalidRecordf("produce requests are only allowed to contain record batches with magic version 2, got %d", magic)
	}
	second, _, err := nextBatchBounds(records[n:])
	if err != nil {
		return nil, err
	}
	if second != nil {
		return nil, invalidRecordf("produce requests are only allowed to contain exactly one record batch per partition")
	}
	if len(first) < recordbatch.HeaderSize {
		// Kafka fails this batch's CRC check (isValid needs the full header).
		return nil, corruptMessagef("record batch of %d bytes is shorter than the %d-byte header", len(first), recordbatch.HeaderSize)
	}
	return first, nil
}

// nextBatchBounds returns the first complete batch of b and its size, nil
// if b holds no complete batch.
func nextBatchBounds(b []byte) ([]byte, int, error) {
	if len(b) < recordbatch.LogOverhead {
		return nil, 0, nil
	}
	length := recordbatch.Batch(b).BatchLength()
	if length < recordbatch.LegacyMinRecordSize {
		return nil, 0, corruptMessagef("record size %d is less than the minimum record overhead (%d)", length, recordbatch.LegacyMinRecordSize)
	}
	if len(b) < recordbatch.PosMagic+1 {
		return nil, 0, nil
	}
	if magic := int8(b[recordbatch.PosMagic]); magic < 0 || magic > recordbatch.MagicV2 {
		return nil, 0, corruptMessagef("invalid magic found in record: %d", magic)
	}
	size := int64(length) + recordbatch.LogOverhead
	if size > int64(len(b)) {
		return nil, 0, nil
	}
	return b[:size], int(size), nil
}

// validateRecords walks the records (LogValidator.validateRecord for each)
// and sets the batch's max timestamp as Kafka's in-place assignment does.
// logDir's name ("<topic>-<partition>") goes into Kafka's messages, taken
// only for one (a per-batch filepath.Base showed at 10,000 partitions). The
// records are decompressed here whatever the codec, so the compacted-topic
// key check costs no extra pass.
func validateRecords(batch []byte, h *batchHeader, cfg *LogConfig, nowMs int64, logDir string) (validatedBatch, error) {
	vb := validatedBatch{bytes: batch, header: *h, maxTimestamp: recordbatch.NoTimestamp, offsetDeltaOfMaxTimestamp: -1, logAppendTime: -1,
		deltasInOrder: true, firstTimestamp: recordbatch.NoTimestamp}
	var recordErrs []RecordError
	anyTimestampErr := false
	batchIsLogAppend := h.timestampType() == LogAppendTime
	err := walkBatchRecordsCapped(batch, h, cfg.MaxDecompressedBatchBytes, func(i int32, r recordInfo) error {
		if r.OffsetDelta != i {
			vb.deltasInOrder = false
		}
		ts := h.BaseTimestamp + r.TimestampDelta
		if batchIsLogAppend {
			ts = h.MaxTimestamp // what Kafka's record.timestamp() returns
		}
		if i == 0 {
			vb.firstTimestamp = ts
		}
		if cfg.Compact && !r.HasKey {
			recordErrs = append(recordErrs, RecordError{i, "Compacted topic cannot accept message without key in topic partition " + filepath.Base(logDir)})
			return nil
		}
		if cfg.TimestampType == CreateTime && ts != recordbatch.NoTimestamp {
			if timestampOutOfRange(ts, nowMs, cfg) {
				anyTimestampErr = true
				recordErrs = append(recordErrs, RecordError{i, fmt.Sprintf(
					"timestamp %d of message with offset %d is out of range; the timestamp should be within [%d, %d]",
					ts, i, satSub(nowMs, cfg.TimestampBeforeMaxMs), satAdd(nowMs, cfg.TimestampAfterMaxMs))})
				return nil
			}
		} else if batchIsLogAppend {
			anyTimestampErr = true
			recordErrs = append(recordErrs, RecordError{i, "invalid timestamp type in message; producer should not set timestamp type to LogAppendTime"})
			return nil
		}
		if ts > vb.maxTimestamp {
			vb.maxTimestamp, vb.offsetDeltaOfMaxTimestamp = ts, i
		}
		return nil
	})
	if err != nil {
		var ae *AppendError
		var shape *errRecordShape
		var dec *errDecompress
		switch {
		case errors.As(err, &ae):
			return vb, ae
		case errors.As(err, &shape):
			return vb, invalidRecordf("found invalid record structure: %s", shape.Msg)
		case errors.As(err, &dec):
			return vb, corruptMessagef("%s batch: %v", h.codec(), dec.err)
		default:
			return vb, invalidRecordf("found invalid record structure: %v", err)
		}
	}
	if len(recordErrs) > 0 {
		if anyTimestampErr {
			return vb, &AppendError{Err: kerr.InvalidTimestamp,
				Message: "one or more records have been rejected due to invalid timestamp", RecordErrors: recordErrs}
		}
		return vb, &AppendError{Err: kerr.InvalidRecord,
			Message:      fmt.Sprintf("one or more records have been rejected due to %d record errors in total", len(recordErrs)),
			RecordErrors: recordErrs}
	}

	if cfg.TimestampType == LogAppendTime {
		vb.maxTimestamp, vb.logAppendTime = nowMs, nowMs
		// Kafka: the last offset for uncompressed batches, the first for
		// compressed ones (in-place assignment).
		vb.offsetDeltaOfMaxTimestamp = h.LastOffsetDelta
		if h.codec() != compress.None {
			vb.offsetDeltaOfMaxTimestamp = 0
		}
	}
	recordbatch.Batch(batch).SetMaxTimestamp(cfg.TimestampType == LogAppendTime, vb.maxTimestamp)
	vb.header = parseBatchHeader(batch)
	return vb, nil
}

func timestampOutOfRange(ts, nowMs int64, cfg *LogConfig) bool {
	diff := satSub(nowMs, ts)
	return diff > cfg.TimestampBeforeMaxMs || satSub(0, diff) > cfg.TimestampAfterMaxMs
}

func satAdd(a, b int64) int64 {
	if b > 0 && a > math.MaxInt64-b {
		return math.MaxInt64
	}
	if b < 0 && a < math.MinInt64-b {
		return math.MinInt64
	}
	return a + b
}

func satSub(a, b int64) int64 {
	if b == math.MinInt64 {
		return satAdd(satAdd(a, math.MaxInt64), 1)
	}
	return satAdd(a, -b)
}
