package storage

import (
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/strait/strait/recordbatch"
)

// Truncation, Kafka's UnifiedLog.truncateTo and truncateFullyAndStartAt: a
// follower whose log diverged from its new leader's (found with the leader
// epoch cache, KIP-101) cuts its log back to where they agree, and one that
// fell below the leader's log start offset starts over there.
//
// The order of the steps keeps a crash at any point recoverable: the
// recovery point goes down first, so that Open re-validates everything from
// the truncated segment on; later segments are renamed *.deleted newest
// first, so that what survives a crash is always a prefix of the log; the
// truncated segment's indexes are cut before its log file.
//
// A cleaning in progress is aborted and the cleaner kept off the log for
// the duration (Kafka's abortAndPauseCleaning), since the cleaner reads
// sealed segments without the partition lock and the truncated segment may
// be one of them. Fetches already holding FileSlices of removed bytes send
// fewer bytes (a truncated file) or the old ones (a deleted segment's files
// stay open for file.delete.delay.ms).

// cleaningAborted reports whether a cleaning of this log must stop: the log
// is closing, or a truncation is waiting for the cleaner to let go.
func (l *Log) cleaningAborted() bool {
	return l.cleanAbort.Load() || l.cleanPaused.Load() > 0
}

// pauseCleaning aborts a cleaning in progress and keeps the cleaner off
// the log until resumeCleaning; it must not be called with mu held.
func (l *Log) pauseCleaning() {
	l.cleanPaused.Add(1)
	l.cleanMu.Lock()
}

func (l *Log) resumeCleaning() {
	l.cleanMu.Unlock()
	l.cleanPaused.Add(-1)
}

// TruncateTo removes every record at offset >= offset (Kafka's
// UnifiedLog.truncateTo): segments whose base offset is above offset are
// deleted, the segment holding offset is cut at the batch boundary (at the
// start of the batch holding offset, should it fall inside one) with its
// offset, time and transaction indexes, and becomes the active segment;
// should offset be below the first segment, the log starts afresh there
// (TruncateFullyAndStartAt). Then the log end offset is offset (the start
// of the batch holding it), the high watermark, log start offset and
// recovery point are at most that, the leader epoch cache loses its entries
// from there on, the producer state is rebuilt as of there (the newest
// snapshot at or below it plus a replay of the batches after it; later
// snapshots are deleted) and the last stable offset recomputed.
//
// With offset at or past the log end nothing is removed, but the leader
// epoch cache still loses any entry starting at or past the log end, as in
// Kafka (a leader that recorded its epoch and lost leadership before
// appending leaves such an entry). Errors unwrap to a *kerr.Error
// (KAFKA_STORAGE_ERROR for disk failures).
func (l *Log) TruncateTo(offset int64) error {
	if offset < 0 {
		return fmt.Errorf("%w: cannot truncate to negative offset %d", kerr.OffsetOutOfRange, offset)
	}
	l.mu.Lock()
	if l.closed.Load() {
		l.mu.Unlock()
		return errLogClosed
	}
	if leo := l.logEndOffset.Load(); offset >= leo {
		defer l.mu.Unlock()
		l.epochs.truncateFromEnd(leo)
		return nil
	}
	l.mu.Unlock()

	l.pauseCleaning()
	defer l.resumeCleaning()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed.Load() {
		return errLogClosed
	}
	if leo := l.logEndOffset.Load(); offset >= leo {
		l.epochs.truncateFromEnd(leo)
		return nil
	}
	var err error
	if offset < l.segments[0].baseOffset {
		err = l.truncateFullyAndStartAtLocked(offset)
	} else {
		err = l.truncateToLocked(offset)
	}
	if err == nil {
		l.truncateCleanerCheckpointLocked()
	}
	return err
}

// truncateToLocked is TruncateTo for segments[0].baseOffset <= offset <
// log end offset.
func (l *Log) truncateToLocked(offset int64) error {
	now := l.now()
	cfg := l.config()
	oldLEO := l.logEndOffset.Load()
	i := l.segmentFor(offset)
	seg := l.segments[i]
	pos, h, found, err := seg.findBatch(offset)
	if err != nil {
		return storageErr("truncate", err)
	}
	newLEO := offset
	if found && h.BaseOffset < offset {
		newLEO = h.BaseOffset // offset is inside a batch: the whole batch goes
	}
	l.logger.Info("truncating log", "dir", l.dir, "offset", offset, "log_end_offset", oldLEO,
		"new_log_end_offset", newLEO, "segments_deleted", len(l.segments)-i-1)

	// Recovery from here on should the process die half way. A flush of
	// rolled segments under way must not move the recovery point over
	// what is appended after the truncation.
	l.flushGen++
	if l.recoveryPoint.Load() > newLEO {
		l.recoveryPoint.Store(newLEO)
		l.cpTouch()
		if err := l.writeRecoveryPoint(); err != nil {
			return storageErr("truncate: recovery point checkpoint", err)
		}
	}

	if later := l.segments[i+1:]; len(later) > 0 {
		deleted := slices.Clone(later)
		slices.Reverse(deleted)
		l.segments = l.segments[:i+1]
		l.deleteSegmentsLocked(deleted)
	}
	if found {
		if err := seg.truncateAt(pos, h.BaseOffset); err != nil {
			l.logger.Error("truncation of a segment failed", "dir", l.dir, "base_offset", seg.baseOffset, "err", err)
			return storageErr("truncate segment", err)
		}
	}
	if err := seg.activate(); err != nil {
		return storageErr("truncate: reactivate segment", err)
	}
	if err := seg.retrack(now); err != nil {
		return storageErr("truncate: reload segment", err)
	}
	l.logEndOffset.Store(newLEO)
	l.changed()
	if err := l.truncateTxnIndexesLocked(newLEO); err != nil {
		return storageErr("truncate", err)
	}
	if lso := l.logStartOffset.Load(); lso > newLEO {
		l.logStartOffset.Store(newLEO)
		if err := l.checkpointLogStartLocked(newLEO, false); err != nil {
			return storageErr("truncate: log start offset checkpoint", err)
		}
	}
	if l.highWatermark.Load() > newLEO {
		l.highWatermark.Store(newLEO)
	}
	// In memory only, as Kafka's truncateFromEndAsyncFlush defers its
	// write: the recovery point is at or below newLEO now, so a crash
	// rescans from there and drops what the file still holds past it
	// (leaderEpochCache).
	l.epochs.truncateFromEnd(newLEO)
	if err := l.rebuildProducersLocked(newLEO, cfg); err != nil {
		return storageErr("truncate: producer state", err)
	}
	l.updateFirstUnstableLocked()
	return nil
}

// rebuildProducersLocked rebuilds the producer state as of end after a
// truncation (Kafka's UnifiedLog.rebuildProducerState): snapshots past end
// are deleted, the newest remaining one loaded and the batches after it
// replayed, the transaction indexes being rebuilt on the way.
func (l *Log) rebuildProducersLocked(end int64, cfg *LogConfig) error {
	m := l.producers
	emptyBefore := len(m.producers) == 0 && m.lastMapOffset >= end
	bases := make([]int64, len(l.segments))
	for i, s := range l.segments {
		bases[i] = s.baseOffset
	}
	toSnapshot := []int64{bases[len(bases)-1], end}
	if len(bases) > 1 {
		toSnapshot = append([]int64{bases[len(bases)-2]}, toSnapshot...)
	}
	if err := m.truncateAndReload(l.logStartOffset.Load(), end, l.now().UnixMilli(), cfg.producerIDExpirationMs()); err != nil {
		return err
	}
	if end > m.lastMapOffset && !emptyBefore {
		if err := l.replayProducers(end, toSnapshot); err != nil {
			return err
		}
	}
	m.lastMapOffset = end
	return m.takeSnapshot()
}

// truncateCleanerCheckpointLocked keeps the first dirty offset within the
// log after a truncation (Kafka's maybeTruncateCheckpoint, to the active
// segment's base offset). The cleaner must be paused: it writes the
// checkpoint too.
func (l *Log) truncateCleanerCheckpointLocked() {
	if base := l.active().baseOffset; l.cleanerCheckpoint.Load() > base {
		l.setCleanerCheckpoint(base)
	}
}

// TruncateFullyAndStartAt removes every segment and starts an empty log at
// offset, which becomes the log start, log end and high watermark (Kafka's
// truncateFullyAndStartAt): a follower whose log end is below its leader's
// log start offset. The leader epoch cache and the producer state (with
// its snapshots) are cleared. Errors unwrap to a *kerr.Error.
func (l *Log) TruncateFullyAndStartAt(offset int64) error {
	if offset < 0 {
		return fmt.Errorf("%w: cannot start the log at negative offset %d", kerr.OffsetOutOfRange, offset)
	}
	l.pauseCleaning()
	defer l.resumeCleaning()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed.Load() {
		return errLogClosed
	}
	if err := l.truncateFullyAndStartAtLocked(offset); err != nil {
		return err
	}
	l.truncateCleanerCheckpointLocked()
	return nil
}

// truncateFullyAndStartAtLocked replaces the segments with an empty one at
// offset. Segments are only renamed and later removed, never cut in place,
// so a cleaning reading them meanwhile fails cleanly (and AppendAsFollower
// may call this without pausing the cleaner). Should the new segment not be
// created, the log is closed (Kafka takes the log directory offline).
func (l *Log) truncateFullyAndStartAtLocked(offset int64) error {
	now := l.now()
	cfg := l.config()
	l.logger.Info("truncating the whole log and starting at a new offset", "dir", l.dir,
		"log_start_offset", l.logStartOffset.Load(), "log_end_offset", l.logEndOffset.Load(), "new_offset", offset)
	// The log start offset checkpoint first: after a crash at any later
	// point, Open finds no readable record below offset.
	l.logStartOffset.Store(offset)
	l.changed()
	if err := l.checkpointLogStartLocked(offset, true); err != nil {
		return storageErr("truncate: log start offset checkpoint", err)
	}
	old := slices.Clone(l.segments)
	slices.Reverse(old)
	l.deleteSegmentsLocked(old)
	seg, err := l.createActiveSegment(offset, cfg, now)
	if err != nil {
		l.closed.Store(true)
		l.changed()
		l.logger.Error("cannot create a segment after truncating the whole log; closing it", "dir", l.dir, "offset", offset, "err", err)
		return storageErr("truncate: new segment", err)
	}
	l.segments = []*segment{seg}
	if err := l.fs.SyncDir(l.dir); err != nil {
		l.logger.Warn("fsync of partition directory failed", "dir", l.dir, "err", err)
	}
	l.logEndOffset.Store(offset)
	l.highWatermark.Store(offset)
	l.unflushedMessages = 0
	l.flushGen++ // as in truncateToLocked
	l.recoveryPoint.Store(offset)
	l.cpTouch()
	if err := l.writeRecoveryPoint(); err != nil {
		l.logger.Warn("cannot write recovery point checkpoint", "dir", l.dir, "err", err)
	}

	// Producer state (ProducerStateManager.truncateFullyAndStartAt).
	m := l.producers
	clear(m.producers)
	m.ongoing, m.unreplicated = nil, nil
	for _, off := range slices.Clone(m.snapshots) {
		m.deleteSnapshot(off)
	}
	m.lastSnapOffset, m.lastMapOffset = 0, offset
	if err := m.takeSnapshot(); err != nil {
		l.logger.Warn("cannot write producer state snapshot", "dir", l.dir, "offset", offset, "err", err)
	}
	l.updateFirstUnstableLocked()
	if err := l.epochs.clear(); err != nil {
		return storageErr("leader epoch checkpoint", err)
	}
	return nil
}

// truncateAt cuts the segment at pos, the start of the batch whose base
// offset is cut: the log file, and the offset- and time-index entries of
// the batches from there on (the transaction index is the Log's to cut).
func (s *segment) truncateAt(pos, cut int64) error {
	keep, err := s.offsetIndex.search(func(e []byte) bool { _, p := s.offsetIndex.decode(e); return p < pos })
	if err != nil {
		return err
	}
	if err := s.offsetIndex.truncateEntries(keep + 1); err != nil {
		return err
	}
	keep, err = s.timeIndex.search(func(e []byte) bool { _, o := s.timeIndex.decode(e); return o < cut })
	if err != nil {
		return err
	}
	if err := s.timeIndex.truncateEntries(keep + 1); err != nil {
		return err
	}
	if err := s.log.Truncate(pos); err != nil {
		return err
	}
	s.size = pos
	s.forgetReadEnds() // batches appended from pos on will be others
	return nil
}

// activate makes a sealed segment take appends again: its indexes are
// preallocated and mapped (a no-op for the active segment).
func (s *segment) activate() error {
	s.log.reactivate()
	for _, ix := range []*indexFile{s.offsetIndex.indexFile, s.timeIndex.indexFile} {
		if err := ix.activate(); err != nil {
			return err
		}
	}
	return nil
}

// retrack recomputes the in-memory trackers of a segment after truncation,
// as Kafka's LogSegment.truncateTo and loadLargestTimestamp: the largest
// timestamp from the last time-index entry and the batches after it, the
// next offset and the bytes since the last offset-index entry from the
// batches after that entry (at most one index interval of headers when
// timestamps increase).
func (s *segment) retrack(now time.Time) error {
	ts, tsOffset, hasTs, err := s.timeIndex.loadLast()
	if err != nil {
		return err
	}
	s.maxTimestamp, s.offsetOfMaxTimestamp = recordbatch.NoTimestamp, -1
	if hasTs {
		s.maxTimestamp, s.offsetOfMaxTimestamp = ts, tsOffset
	}
	_, lastIndexed, hasEntry, err := s.offsetIndex.last()
	if err != nil {
		return err
	}
	if !hasEntry {
		lastIndexed = 0
	}
	from := lastIndexed
	if hasTs {
		_, p, err := s.offsetIndex.lookup(tsOffset)
		if err != nil {
			return err
		}
		from = min(from, p)
	}
	s.nextOffset = s.baseOffset
	s.bytesSinceLastIndexEntry = 0
	var buf [recordbatch.HeaderSize]byte
	for pos := from; pos < s.size; {
		h, err := s.readHeader(pos, &buf)
		if err != nil {
			return err
		}
		if h.MaxTimestamp > s.maxTimestamp {
			s.maxTimestamp, s.offsetOfMaxTimestamp = h.MaxTimestamp, h.LastOffset()
		}
		if pos >= lastIndexed {
			s.bytesSinceLastIndexEntry += h.Size()
		}
		s.nextOffset = h.NextOffset()
		pos += h.Size()
	}
	if s.size == 0 {
		s.firstBatchTimestamp = recordbatch.NoTimestamp
		s.created = now
	}
	return nil
}
