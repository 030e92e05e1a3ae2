package storage

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"math"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// AppendInfo describes a successful append.
type AppendInfo struct {
	FirstOffset    int64
	LastOffset     int64
	LogAppendTime  int64 // -1 unless the topic uses LogAppendTime
	LogStartOffset int64
	RecordCount    int64
}

// Log is one partition's log: a directory of segments, the last of which
// (the active segment) takes appends.
//
// Thread-safety: every method is safe for concurrent use. One RWMutex per
// Log guards the segment list and the active segment's state; appends take
// it exclusively only to assign offsets and write (validation, including
// decompression, happens before), reads take it shared while they locate
// file ranges and send nothing under it. The offsets readers poll most
// (log start, log end, high watermark) are atomics read without the lock.
type Log struct {
	dir    string
	fs     FS
	logger *slog.Logger
	now    func() time.Time
	cfg    atomic.Pointer[LogConfig]

	mu                sync.RWMutex
	segments          []*segment // by base offset; the last is active
	recoveryPoint     int64      // offsets below are fsynced
	unflushedMessages int64
	lastFlush         time.Time
	closed            bool

	logStartOffset atomic.Int64
	logEndOffset   atomic.Int64
	highWatermark  atomic.Int64
	// firstUnstable is the first offset of the oldest undecided (or not yet
	// replicated) transaction, -1 if none: the last stable offset's bound
	// (txn.go). txnAwaitingHW says completed transactions wait for the
	// high watermark to pass their markers.
	firstUnstable atomic.Int64
	txnAwaitingHW atomic.Bool

	// producers is the idempotent producers' state (producer_state.go),
	// guarded by mu; set by Open.
	producers *producerStateManager
	// epochs is the leader epoch cache (leader_epoch.go), guarded by mu;
	// set by Open.
	epochs *leaderEpochCache
	// hwMu serializes writes of the high-watermark checkpoint
	// (high_watermark.go); taken before mu, never while holding it.
	hwMu sync.Mutex
	// hwCheckpointed is the offset the checkpoint file holds, -1 when not
	// known; guarded by hwMu.
	hwCheckpointed int64

	// Compaction state (see clean.go). cleanMu is held by the one Cleaner
	// worker cleaning this log, for the whole cleaning; Close and Delete
	// set cleanAbort and then wait for cleanMu, so that no cleaner writes
	// in the directory once they return. The partition lock (mu) is taken
	// by the cleaner only to snapshot the segments and to swap in a
	// cleaned segment.
	cleanMu           sync.Mutex
	cleanAbort        atomic.Bool
	uncleanable       atomic.Bool  // a cleaning failed; the Cleaner skips the log
	cleanPaused       atomic.Int32 // truncations in progress: a cleaning aborts (truncate.go)
	cleanerCheckpoint atomic.Int64 // first dirty offset (cleaner-offset-checkpoint), -1 if none
}

// Dir is the partition directory.
func (l *Log) Dir() string { return l.dir }

// LogStartOffset is the first offset a fetch may ask for.
func (l *Log) LogStartOffset() int64 { return l.logStartOffset.Load() }

// LogEndOffset is the offset the next append gets.
func (l *Log) LogEndOffset() int64 { return l.logEndOffset.Load() }

// HighWatermark is the offset below which records are committed; Open
// starts it at the log end offset.
func (l *Log) HighWatermark() int64 { return l.highWatermark.Load() }

// UpdateHighWatermark sets the high watermark, kept within
// [LogStartOffset, LogEndOffset].
func (l *Log) UpdateHighWatermark(offset int64) {
	offset = min(max(offset, l.logStartOffset.Load()), l.logEndOffset.Load())
	l.highWatermark.Store(offset)
	if l.txnAwaitingHW.Load() {
		l.txnHighWatermarkMoved()
	}
}

// SetConfig replaces the log's settings; size-related ones apply from the
// next segment on.
func (l *Log) SetConfig(cfg LogConfig) {
	c := cfg
	l.cfg.Store(&c)
}

func (l *Log) config() *LogConfig { return l.cfg.Load() }

func (l *Log) active() *segment { return l.segments[len(l.segments)-1] }

// AppendAsLeader validates one produce batch (see validateProduce),
// assigns it offsets from the log end offset and the leader epoch (a new
// epoch starts there in the leader epoch cache, leader_epoch.go), and
// appends it to the active segment, rolling first if needed. records is
// modified in place and written byte for byte. Errors unwrap to a
// *kerr.Error: validation failures are *AppendError, disk failures
// KAFKA_STORAGE_ERROR (the log stays readable and nothing appended before
// is lost).
func (l *Log) AppendAsLeader(records []byte, leaderEpoch int32) (AppendInfo, error) {
	return l.appendAsLeader(records, leaderEpoch, originClient, false, nil)
}

// AppendAsLeaderVerified is AppendAsLeader for a produce request with a
// transactional id: a transactional batch that opens a transaction must
// present the guard StartTxnVerification returned before the transaction
// coordinator confirmed the partition is in the transaction (else
// INVALID_TXN_STATE; nil when none was needed).
func (l *Log) AppendAsLeaderVerified(records []byte, leaderEpoch int32, guard *VerificationGuard) (AppendInfo, error) {
	return l.appendAsLeader(records, leaderEpoch, originClient, true, guard)
}

func (l *Log) appendAsLeader(records []byte, leaderEpoch int32, origin appendOrigin, verify bool, guard *VerificationGuard) (AppendInfo, error) {
	now := l.now()
	cfg := l.config()
	validate := validateProduce
	if origin == originCoordinator {
		validate = validateFromCoordinator
	}
	vb, err := validate(records, cfg, now.UnixMilli(), filepath.Base(l.dir))
	if err != nil {
		return AppendInfo{}, err
	}

	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return AppendInfo{}, errLogClosed
	}
	// Producer state (idempotent sequence/epoch checks, transactions and
	// their verification), under the lock and before offsets are assigned, as Kafka's
	// UnifiedLog.append: a duplicate of a recent batch appends nothing and
	// answers with the original offsets.
	producer, dup, err := l.checkProducerLocked(&vb.header, l.logEndOffset.Load(), origin, verify, guard)
	if err != nil {
		return AppendInfo{}, err
	}
	if dup != nil {
		return l.duplicateAppendInfo(dup), nil
	}

	base := l.logEndOffset.Load()
	// Kafka's appendAsLeader: the epoch stamped on the batch starts here if
	// it is new.
	if err := l.maybeAssignEpochLocked(leaderEpoch, base); err != nil {
		return AppendInfo{}, err
	}
	setBaseOffset(vb.bytes, base)
	setLeaderEpoch(vb.bytes, leaderEpoch)
	vb.header.BaseOffset, vb.header.LeaderEpoch = base, leaderEpoch

	seg, err := l.maybeRollLocked(&vb.header, now)
	if err != nil {
		return AppendInfo{}, storageErr("roll segment", err)
	}
	if err := seg.append(vb.bytes, &vb.header, cfg.IndexIntervalBytes); err != nil {
		l.logger.Error("append failed", "dir", l.dir, "offset", base, "err", err)
		return AppendInfo{}, storageErr("append", err)
	}
	l.logEndOffset.Store(vb.header.nextOffset())
	l.updateProducersLocked(producer, vb.header.nextOffset())
	info := AppendInfo{
		FirstOffset:    base,
		LastOffset:     vb.header.lastOffset(),
		LogAppendTime:  vb.logAppendTime,
		LogStartOffset: l.logStartOffset.Load(),
		RecordCount:    int64(vb.header.RecordCount),
	}

	l.unflushedMessages += int64(vb.header.RecordCount)
	if l.unflushedMessages >= cfg.FlushMessages {
		if err := l.flushLocked(now); err != nil {
			// Appended but not durable: Kafka fails the log dir here, and the
			// producer sees KAFKA_STORAGE_ERROR.
			return info, storageErr("flush", err)
		}
	}
	return info, nil
}

// maybeRollLocked returns the segment the batch goes to, rolling a new one
// when Kafka's LogSegment.shouldRoll would: the batch does not fit in
// segment.bytes, segment.ms has passed (measured on record timestamps when
// the segment's first batch has one, else on the wall clock since the
// segment was created), an index is full, or the offsets would not fit
// the index's 32-bit relative offsets.
func (l *Log) maybeRollLocked(h *batchHeader, now time.Time) (*segment, error) {
	cfg := l.config()
	seg := l.active()
	var waited int64
	if seg.firstBatchTimestamp >= 0 {
		waited = h.MaxTimestamp - seg.firstBatchTimestamp
	} else {
		waited = now.Sub(seg.created).Milliseconds()
	}
	roll := (seg.size > 0 && (seg.size > cfg.SegmentBytes-h.size() || waited > cfg.maxSegmentMs())) ||
		seg.offsetIndex.full() || seg.timeIndex.full() ||
		h.lastOffset()-seg.baseOffset > math.MaxInt32
	if !roll {
		return seg, nil
	}
	// A replicated batch may start past the log end offset (offsets the
	// leader's cleaner removed): the new segment starts at the batch, as
	// Kafka's roll(expectedNextOffset) does.
	return l.rollAtLocked(max(l.logEndOffset.Load(), h.BaseOffset), now)
}

// rollLocked seals the active segment and starts a new one at the log end
// offset. The sealed segment is fsynced, so the recovery point moves to the
// new base offset.
func (l *Log) rollLocked(now time.Time) (*segment, error) {
	return l.rollAtLocked(l.logEndOffset.Load(), now)
}

// rollAtLocked is rollLocked with the new segment's base offset given
// (at least the log end offset).
func (l *Log) rollAtLocked(base int64, now time.Time) (*segment, error) {
	cfg := l.config()
	old := l.active()
	if old.size == 0 && old.baseOffset == base {
		return old, nil // nothing to seal; an index cannot be full either
	}
	// The new segment first: should its files not be made (a full disk
	// failing the reservation of index blocks), the old one is untouched.
	seg, err := openSegmentFiles(l.fs, l.dir, base, cfg, segmentCreate, true, now)
	if err != nil {
		return nil, err
	}
	if err := old.seal(); err != nil {
		seg.closeFiles()
		if rerr := removeSegmentFiles(l.fs, l.dir, base, ""); rerr != nil {
			l.logger.Warn("cannot remove the files of a segment whose roll failed", "dir", l.dir, "base_offset", base, "err", rerr)
		}
		l.reactivateLocked(old)
		return nil, err
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		l.logger.Warn("fsync of partition directory failed", "dir", l.dir, "err", err)
	}
	l.segments = append(l.segments, seg)
	l.logger.Debug("rolled segment", "dir", l.dir, "base_offset", base, "previous_size", old.size)
	l.setRecoveryPointLocked(base)
	if err := l.snapshotProducersLocked(base); err != nil {
		// Only costs recovery work: Open replays from an older snapshot.
		l.logger.Warn("cannot write producer state snapshot", "dir", l.dir, "offset", base, "err", err)
	}
	return seg, nil
}

// reactivateLocked makes a segment whose sealing failed take appends
// again: indexes already sealed are preallocated and mapped again.
func (l *Log) reactivateLocked(s *segment) {
	for _, ix := range []*indexFile{s.offsetIndex.indexFile, s.timeIndex.indexFile} {
		if err := ix.activate(); err != nil {
			l.logger.Error("cannot reactivate segment index after a failed roll", "file", ix.path, "err", err)
		}
	}
}

// setRecoveryPointLocked records that offsets below rp are fsynced.
func (l *Log) setRecoveryPointLocked(rp int64) {
	if rp <= l.recoveryPoint {
		return
	}
	l.recoveryPoint = rp
	if err := writeCheckpoint(l.fs, l.dir, recoveryPointFile, rp); err != nil {
		// Only costs recovery work after a crash.
		l.logger.Warn("cannot write recovery point checkpoint", "dir", l.dir, "err", err)
	}
}

// flushLocked fsyncs the active segment (sealed ones were fsynced when
// they were rolled).
func (l *Log) flushLocked(now time.Time) error {
	if err := l.active().flush(); err != nil {
		return err
	}
	l.unflushedMessages = 0
	l.lastFlush = now
	return nil
}

// Flush fsyncs everything appended so far and checkpoints the recovery
// point and the high watermark.
func (l *Log) Flush() error {
	l.hwMu.Lock()
	defer l.hwMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return errLogClosed
	}
	if err := l.flushLocked(l.now()); err != nil {
		return storageErr("flush", err)
	}
	l.setRecoveryPointLocked(l.logEndOffset.Load())
	if err := l.writeHighWatermarkLocked(); err != nil {
		return storageErr("checkpoint high watermark", err)
	}
	return nil
}

// MaybeFlush flushes if flush.ms has passed since the last flush and
// something is unflushed; the broker calls it periodically (Kafka's
// log.flush.scheduler.interval.ms).
func (l *Log) MaybeFlush(now time.Time) error {
	cfg := l.config()
	if cfg.FlushMs == math.MaxInt64 {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed || l.unflushedMessages == 0 || now.Sub(l.lastFlush).Milliseconds() < cfg.FlushMs {
		return nil
	}
	if err := l.flushLocked(now); err != nil {
		return storageErr("flush", err)
	}
	l.setRecoveryPointLocked(l.logEndOffset.Load())
	return nil
}

// Close flushes, trims the active segment's indexes, checkpoints and
// writes the clean-shutdown marker, then closes every file. Reads already
// holding FileSlices must have finished.
func (l *Log) Close() error {
	l.stopCleaning()
	l.hwMu.Lock()
	defer l.hwMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	err := l.shutdownLocked()
	for _, s := range l.segments {
		if cerr := s.closeFiles(); err == nil && cerr != nil {
			err = storageErr("close", cerr)
		}
	}
	return err
}

func (l *Log) shutdownLocked() error {
	act := l.active()
	// Kafka's LogSegment.close: the final time-index entry, so that the
	// last entry always holds the segment's largest timestamp.
	if err := act.timeIndex.maybeAppend(act.maxTimestamp, act.offsetOfMaxTimestamp); err != nil {
		return storageErr("close", err)
	}
	if err := act.log.Sync(); err != nil {
		return storageErr("close", err)
	}
	if err := act.txnIndex.sync(); err != nil {
		return storageErr("close", err)
	}
	// Trimmed to their used size and fsynced, as Kafka's close does (the
	// fsync covers what was stored through the mapping: no msync first).
	if err := act.offsetIndex.seal(); err != nil {
		return storageErr("close", err)
	}
	if err := act.timeIndex.seal(); err != nil {
		return storageErr("close", err)
	}
	l.setRecoveryPointLocked(l.logEndOffset.Load())
	if l.highWatermark.Load() != l.hwCheckpointed { // else the file holds it
		if err := l.writeHighWatermarkLocked(); err != nil {
			return storageErr("close: high watermark checkpoint", err)
		}
	}
	// A clean shutdown without any producer snapshot is taken for a log
	// that never had producer state (Kafka's upgrade path, no replay), so
	// the marker must not outlive a failed snapshot.
	if err := l.snapshotProducersLocked(l.logEndOffset.Load()); err != nil {
		return storageErr("close: producer state snapshot", err)
	}
	if err := writeMarker(l.fs, l.dir, cleanShutdownFile); err != nil {
		return storageErr("close", err)
	}
	return nil
}

// Delete closes the log and removes its directory. The directory is first
// renamed to <dir>.<id>-delete (Kafka's convention, so the name is free for
// a new partition at once and a restart finishes the job); its files are
// closed and removed after file.delete.delay.ms, so fetches already sending
// from them complete.
func (l *Log) Delete() error {
	l.stopCleaning()
	l.hwMu.Lock()
	defer l.hwMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return errLogClosed
	}
	l.closed = true
	var id [8]byte
	_, _ = rand.Read(id[:])
	dest := fmt.Sprintf("%s.%s-delete", l.dir, hex.EncodeToString(id[:]))
	if err := l.fs.Rename(l.dir, dest); err != nil {
		for _, s := range l.segments {
			s.closeFiles()
		}
		return storageErr("delete", err)
	}
	_ = l.fs.SyncDir(filepath.Dir(l.dir))
	segs := l.segments
	remove := func() {
		for _, s := range segs {
			s.closeFiles()
		}
		if err := l.fs.RemoveAll(dest); err != nil {
			l.logger.Error("cannot remove deleted partition directory", "dir", dest, "err", err)
		}
	}
	if delay := l.config().FileDeleteDelayMs; delay > 0 {
		time.AfterFunc(time.Duration(delay)*time.Millisecond, remove)
	} else {
		remove()
	}
	return nil
}

// stopCleaning aborts a cleaning of this log in progress and waits until
// the cleaner has let go of it (Kafka's abortCleaning); a cleaner that
// finds cleanAbort set does not start.
func (l *Log) stopCleaning() {
	l.cleanAbort.Store(true)
	l.cleanMu.Lock() // a barrier only: a cleaning holds it to its end
	l.cleanMu.Unlock()
}

// deleteSegmentsLocked removes segments from the log: their files are
// renamed *.deleted now and closed and removed after file.delete.delay.ms.
func (l *Log) deleteSegmentsLocked(segs []*segment) {
	for _, s := range segs {
		if err := s.renameForDeletion(l.fs); err != nil {
			l.logger.Error("cannot rename segment for deletion", "dir", l.dir, "base_offset", s.baseOffset, "err", err)
		}
	}
	l.removeDeletedSegmentsLater(segs)
	l.deleteProducerSnapshotsLocked(segs)
}

// removeDeletedSegmentsLater closes and removes segments already renamed
// *.deleted after file.delete.delay.ms, so that fetches holding FileSlices
// of them finish sending first.
func (l *Log) removeDeletedSegmentsLater(segs []*segment) {
	remove := func() {
		for _, s := range segs {
			if err := s.removeDeletedFiles(l.fs); err != nil {
				l.logger.Error("cannot remove deleted segment", "dir", l.dir, "base_offset", s.baseOffset, "err", err)
			}
		}
	}
	if delay := l.config().FileDeleteDelayMs; delay > 0 {
		time.AfterFunc(time.Duration(delay)*time.Millisecond, remove)
	} else {
		remove()
	}
}

// offsetOutOfRange is the error of a read outside [log start, log end].
func offsetOutOfRange(offset, start, end int64) error {
	return fmt.Errorf("%w: offset %d is outside [%d, %d]", kerr.OffsetOutOfRange, offset, start, end)
}
