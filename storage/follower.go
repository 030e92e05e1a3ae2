package storage

import (
	"fmt"
	"math"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/strait/strait/recordbatch"
)

// UnexpectedAppendOffsetError is AppendAsFollower's refusal of records
// that do not start at the log end offset (Kafka's
// UnexpectedAppendOffsetException): FirstOffset below LogEndOffset would
// overlap the log, above it leave a gap (allowed on compacted logs only).
// It unwraps to OFFSET_OUT_OF_RANGE.
type UnexpectedAppendOffsetError struct {
	FirstOffset  int64 // base offset of the first batch
	LastOffset   int64 // last offset of the last batch
	LogEndOffset int64
}

func (e *UnexpectedAppendOffsetError) Error() string {
	what := "is below"
	if e.FirstOffset > e.LogEndOffset {
		what = "leaves a gap after"
	}
	return fmt.Sprintf("%s: unexpected offset in follower append: first offset %d (last %d) %s the log end offset %d",
		kerr.OffsetOutOfRange.Message, e.FirstOffset, e.LastOffset, what, e.LogEndOffset)
}

func (e *UnexpectedAppendOffsetError) Unwrap() error { return kerr.OffsetOutOfRange }

// followerBatch is one batch of a follower append.
type followerBatch struct {
	bytes  []byte
	header batchHeader
}

// splitReplicatedBatches checks the batches a follower fetched, as Kafka's
// analyzeAndValidateRecords does for AppendOrigin.REPLICATION: each a
// whole magic v2 batch with a valid CRC32C (else CORRUPT_MESSAGE), offsets
// increasing from batch to batch (else INVALID_RECORD) and, unless gaps
// are allowed (compacted logs: the leader's cleaner removes offsets),
// contiguous. An incomplete trailing batch ends the records, as in Kafka's
// batch iterator (a fetch response may end with part of a batch). Records
// are not decompressed: the leader validated them.
func splitReplicatedBatches(records []byte, allowGaps bool) ([]followerBatch, error) {
	var out []followerBatch
	for len(records) > 0 {
		b, n, err := nextBatchBounds(records)
		if err != nil {
			return nil, err
		}
		if b == nil {
			break
		}
		records = records[n:]
		if magic := int8(b[recordbatch.PosMagic]); magic != recordbatch.MagicV2 {
			return nil, corruptMessagef("replicated record batch has magic %d; only magic 2 is supported", magic)
		}
		if len(b) < recordbatch.HeaderSize {
			return nil, corruptMessagef("replicated record batch of %d bytes is shorter than the %d-byte header", len(b), recordbatch.HeaderSize)
		}
		h := parseBatchHeader(b)
		if got := recordbatch.Batch(b).ComputeCRC(); got != h.CRC {
			return nil, corruptMessagef("replicated record batch at offset %d is corrupt (stored crc = %d, computed crc = %d)", h.BaseOffset, h.CRC, got)
		}
		if h.BaseOffset < 0 || h.LastOffsetDelta < 0 || h.RecordCount < 0 || h.BaseOffset > math.MaxInt64-1-int64(h.LastOffsetDelta) {
			return nil, corruptMessagef("replicated record batch has an invalid offset range [%d, +%d] or record count %d",
				h.BaseOffset, h.LastOffsetDelta, h.RecordCount)
		}
		if k := len(out); k > 0 {
			prev := &out[k-1].header
			switch {
			case h.BaseOffset < prev.NextOffset():
				return nil, invalidRecordf("replicated record batches out of order: batch at offset %d follows one ending at %d",
					h.BaseOffset, prev.LastOffset())
			case h.BaseOffset > prev.NextOffset() && !allowGaps:
				return nil, invalidRecordf("replicated record batches not contiguous: batch at offset %d follows one ending at %d",
					h.BaseOffset, prev.LastOffset())
			}
		}
		out = append(out, followerBatch{bytes: b, header: h})
	}
	return out, nil
}

// AppendAsFollower appends batches fetched from the leader (Kafka's
// UnifiedLog.appendAsFollower): one or more whole v2 batches whose offsets
// and partition leader epochs the leader assigned. After the checks of
// splitReplicatedBatches, the first batch must start at the log end offset:
// below it, *UnexpectedAppendOffsetError (OFFSET_OUT_OF_RANGE), except on a
// log without records (log start == log end) whose log end falls inside
// that batch, which then starts afresh at the batch's base offset keeping
// its log start offset (the leader's log start offset is inside a batch
// after DeleteRecords; Kafka's Partition does the same); above it, the same
// error unless the log is compacted (cleanup.policy compact), where gaps
// are the leader's cleaner's doing and are kept as they are. Nothing is
// appended if a check fails.
//
// Each batch is written byte for byte to the active segment, rolling as
// the leader does, with its index entries; the producer state is updated
// without sequence or epoch checks (AppendOrigin.REPLICATION), transaction
// markers close transactions (aborted ones go to the transaction index) as
// AppendMarker does; a batch whose leader epoch is new starts that epoch in
// the leader epoch cache. The log end offset moves batch by batch, and
// flush.messages applies as on the leader. Empty records are a no-op. The
// result describes what was appended; with an error it describes the
// batches appended before it.
func (l *Log) AppendAsFollower(records []byte) (AppendInfo, error) {
	cfg := l.config()
	batches, err := splitReplicatedBatches(records, cfg.Compact)
	if err != nil {
		return AppendInfo{}, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	info := AppendInfo{FirstOffset: -1, LastOffset: -1, LogAppendTime: -1, LogStartOffset: l.logStartOffset.Load()}
	if l.closed.Load() {
		return info, errLogClosed
	}
	if len(batches) == 0 {
		return info, nil
	}
	first, last := &batches[0].header, &batches[len(batches)-1].header
	leo := l.logEndOffset.Load()
	restartedFrom := int64(-1)
	switch {
	case first.BaseOffset < leo && leo == l.logStartOffset.Load() && first.LastOffset() >= leo:
		l.logger.Info("follower log without records starts at the base offset of the batch holding its log end",
			"dir", l.dir, "log_end_offset", leo, "batch_base_offset", first.BaseOffset)
		restartedFrom = leo
		if err := l.truncateFullyAndStartAtLocked(first.BaseOffset); err != nil {
			return info, err
		}
	case first.BaseOffset < leo, first.BaseOffset > leo && !cfg.Compact:
		return info, &UnexpectedAppendOffsetError{FirstOffset: first.BaseOffset, LastOffset: last.LastOffset(), LogEndOffset: leo}
	}

	now := l.now()
	info.FirstOffset = first.BaseOffset
	var appendErr error
	for i := range batches {
		b := &batches[i]
		h := &b.header
		if appendErr = l.maybeAssignEpochLocked(h.LeaderEpoch, h.BaseOffset); appendErr != nil {
			break
		}
		seg, err := l.maybeRollLocked(h, now)
		if err != nil {
			appendErr = storageErr("roll segment", err)
			break
		}
		if err := seg.append(b.bytes, h, cfg.IndexIntervalBytes); err != nil {
			l.errorLimited("follower append failed", "dir", l.dir, "offset", h.BaseOffset, "err", err)
			appendErr = storageErr("append", err)
			break
		}
		l.logEndOffset.Store(h.NextOffset())
		l.changed()
		info.LastOffset = h.LastOffset()
		info.RecordCount += int64(h.RecordCount)
		l.unflushedMessages += int64(h.RecordCount)
		if err := l.applyReplicatedBatchLocked(seg, b.bytes, h); err != nil {
			// The batch is in the log; recovery rebuilds the index from it.
			l.errorLimited("transaction index append failed", "dir", l.dir, "offset", h.BaseOffset, "err", err)
			appendErr = storageErr("transaction index", err)
			break
		}
	}
	l.updateFirstUnstableLocked()
	if restartedFrom >= 0 && l.logEndOffset.Load() >= restartedFrom {
		// The records below the old log start stay deleted.
		if err := l.setLogStartOffsetLocked(restartedFrom, false); err != nil && appendErr == nil {
			appendErr = err
		}
	}
	info.LogStartOffset = l.logStartOffset.Load()
	if info.LastOffset < 0 {
		info.FirstOffset = -1
	}
	if appendErr != nil {
		return info, appendErr
	}
	if l.unflushedMessages >= cfg.FlushMessages {
		if err := l.flushLocked(now); err != nil {
			return info, storageErr("flush", err)
		}
	}
	return info, nil
}

// applyReplicatedBatchLocked applies an appended replicated batch to the
// producer state (AppendOrigin.REPLICATION: nothing is rejected), closing
// the producer's transaction for a marker and indexing it in seg if
// aborted.
func (l *Log) applyReplicatedBatchLocked(seg *segment, batch []byte, h *batchHeader) error {
	m := l.producers
	defer func() { m.lastMapOffset = h.NextOffset() }()
	if !h.HasProducerID() {
		return nil
	}
	pa := m.prepareUpdate(h.ProducerID, originReplication)
	if !h.IsControl() {
		// originReplication rejects nothing.
		if err := pa.appendDataBatch(h.ProducerEpoch, h.BaseSequence, h.lastSequence(), h.MaxTimestamp, h.BaseOffset, h.LastOffset(), h.IsTransactional()); err != nil {
			return err
		}
		m.update(pa)
		if pa.startedTxn >= 0 {
			delete(m.verifying, h.ProducerID)
		}
		return nil
	}
	mk, ok := recordbatch.ParseMarker(batch)
	if !ok {
		return nil
	}
	ct, err := pa.appendEndTxnMarker(h.ProducerEpoch, mk.CoordinatorEpoch, mk.Commit, 0, h.BaseOffset, h.MaxTimestamp)
	if err != nil {
		return err
	}
	m.update(pa)
	m.clearVerificationForMarker(h.ProducerID, h.ProducerEpoch)
	if ct != nil {
		return l.completeTxnLocked(seg, ct)
	}
	return nil
}
