package storage

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/strait/strait/recordbatch"
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
// (log start, log end, high watermark) are atomics read without the lock,
// and a read with nothing to return answers from them alone.
//
// A roll fsyncs nothing under the lock, so appends and fetches do not wait
// for a sealed segment to reach the disk: a goroutine started for the roll
// (flushRolled, as Kafka's roll schedules flushUptoOffsetExclusive) makes
// the fsyncs without it, taking it only to see what to fsync and then to
// move the recovery point.
type Log struct {
	dir    string
	fs     FS
	logger *slog.Logger
	now    func() time.Time
	cfg    atomic.Pointer[LogConfig]

	mu       sync.RWMutex
	segments []*segment // by base offset; the last is active
	// recoveryPoint: offsets below are fsynced. Written under mu; read
	// under it, or by writeRecoveryPoint with rpMu only.
	recoveryPoint     atomic.Int64
	unflushedMessages int64
	lastFlush         time.Time
	closed            atomic.Bool // set under mu; the read of nothing loads it without (read.go)
	// recoveredSegments is how many segments Open re-validated batch by
	// batch (no clean shutdown, or a failed sanity check); set by Open.
	recoveredSegments int

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

	// cp is the log directory's per-directory checkpoints, nil when the
	// log keeps per-partition files (Options.Checkpoints); tp is its key
	// there.
	cp *DirCheckpoints
	tp TopicPartition
	// cache bounds the segments' open log files (filecache.go); nil keeps
	// them open.
	cache *FileCache
	// idleSeg and idleEnd are the active segment and its next offset when
	// ReleaseIdleActive last saw them change, at idleSince; guarded by mu.
	idleSeg   *segment
	idleEnd   int64
	idleSince time.Time
	// onChange is called when something the time-based work depends on
	// changed (schedule.go); nil: nobody asks.
	onChange atomic.Pointer[func()]

	// The asynchronous flush of rolled segments (flushRolled). flushMu
	// serializes the flushes of this log; taken before mu. flushes counts
	// the flush goroutines: Close and Delete set closed (no flush starts
	// any more) and stopFlush (those running skip the fsyncs left: Close
	// makes them itself, Delete needs none), then wait for them without
	// holding mu, which a flush takes. flushGen, guarded by mu, changes
	// when a truncation replaces offsets: a flush started before it must
	// not move the recovery point over offsets written since.
	flushMu   sync.Mutex
	flushes   sync.WaitGroup
	stopFlush atomic.Bool
	flushGen  uint64
	// rpMu serializes writes of the recovery-point checkpoint, so that a
	// flush writes it (with its fsyncs) without holding mu: each write
	// stores the recovery point as it is when the write starts, so the
	// last write leaves the latest value, and a truncation lowering it
	// writes the lower value before it cuts anything. Taken after mu or
	// without it, never before it. rpCheckpointed is the offset the file
	// holds, -1 when not known; guarded by rpMu.
	rpMu           sync.Mutex
	rpCheckpointed int64

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

// dirValue is the offset of kind k the per-directory checkpoints hold for
// this log, -1 for none. The recovery point only ever covers fsynced
// offsets, so reading it without a lock is safe.
func (l *Log) dirValue(k dirKind) int64 {
	switch k {
	case recoveryPointKind:
		return l.recoveryPoint.Load()
	case logStartKind:
		return l.logStartOffset.Load()
	default:
		return l.highWatermark.Load()
	}
}

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
	if l.highWatermark.Swap(offset) != offset {
		l.changed()
	}
	if l.txnAwaitingHW.Load() {
		l.txnHighWatermarkMoved()
	}
}

// SetConfig replaces the log's settings; size-related ones apply from the
// next segment on.
func (l *Log) SetConfig(cfg LogConfig) {
	c := cfg
	l.cfg.Store(&c)
	l.changed()
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
	vb, err := validate(records, cfg, now.UnixMilli(), l.dir)
	if err != nil {
		return AppendInfo{}, err
	}
	if vb.rebuilt {
		// Written to the segment (copied) under the lock below, and not
		// kept: the buffer goes back to its pool when this returns.
		defer releaseRebuilt(vb.bytes)
	}

	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed.Load() {
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
	recordbatch.Batch(vb.bytes).SetBaseOffset(base)
	recordbatch.Batch(vb.bytes).SetLeaderEpoch(leaderEpoch)
	vb.header.BaseOffset, vb.header.LeaderEpoch = base, leaderEpoch

	seg, err := l.maybeRollLocked(&vb.header, now)
	if err != nil {
		return AppendInfo{}, storageErr("roll segment", err)
	}
	if err := seg.append(vb.bytes, &vb.header, cfg.IndexIntervalBytes); err != nil {
		l.errorLimited("append failed", "dir", l.dir, "offset", base, "err", err)
		return AppendInfo{}, storageErr("append", err)
	}
	l.logEndOffset.Store(vb.header.NextOffset())
	l.changed()
	l.updateProducersLocked(producer, vb.header.NextOffset())
	info := AppendInfo{
		FirstOffset:    base,
		LastOffset:     vb.header.LastOffset(),
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
// segment.bytes, segment.ms less the segment's jitter has passed (measured on record timestamps when
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
	roll := (seg.size > 0 && (seg.size > cfg.SegmentBytes-h.Size() || waited > cfg.maxSegmentMs()-seg.rollJitterMs)) ||
		seg.offsetIndex.full() || seg.timeIndex.full() ||
		h.LastOffset()-seg.baseOffset > math.MaxInt32
	if !roll {
		return seg, nil
	}
	// A replicated batch may start past the log end offset (offsets the
	// leader's cleaner removed): the new segment starts at the batch, as
	// Kafka's roll(expectedNextOffset) does.
	return l.rollAtLocked(max(l.logEndOffset.Load(), h.BaseOffset), now)
}

// rollLocked seals the active segment and starts a new one at the log end
// offset. Nothing is fsynced on this, the append path: a flush started in
// the background (flushRolled) fsyncs the sealed segment, the producer
// snapshot taken at the new base offset and the directory, and then moves
// the recovery point to the new base offset.
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
	seg, err := l.createActiveSegment(base, cfg, now)
	if err != nil {
		return nil, err
	}
	// Kafka's onBecomeInactiveSegment: the final time-index entry and the
	// indexes trimmed, no fsync.
	if err := old.deactivate(); err != nil {
		seg.closeFiles()
		if rerr := removeSegmentFiles(l.fs, l.dir, base, ""); rerr != nil {
			l.warnLimited("cannot remove the files of a segment whose roll failed", "dir", l.dir, "base_offset", base, "err", rerr)
		}
		l.reactivateLocked(old)
		return nil, err
	}
	l.segments = append(l.segments, seg)
	old.log.makeEvictable(l.cache)
	l.logger.Debug("rolled segment", "dir", l.dir, "base_offset", base, "previous_size", old.size)
	if err := l.snapshotProducersLocked(base, syncNone); err != nil {
		// Only costs recovery work: Open replays from an older snapshot.
		l.warnLimited("cannot write producer state snapshot", "dir", l.dir, "offset", base, "err", err)
	}
	l.startFlushLocked(base)
	return seg, nil
}

// reactivateLocked makes a segment whose sealing failed take appends
// again: indexes already sealed are preallocated and mapped again.
func (l *Log) reactivateLocked(s *segment) {
	for _, ix := range []*indexFile{s.offsetIndex.indexFile, s.timeIndex.indexFile} {
		if err := ix.activate(); err != nil {
			l.errorLimited("cannot reactivate segment index after a failed roll", "file", ix.path, "err", err)
		}
	}
}

// startFlushLocked starts the flush of what a roll to upTo left unflushed
// (flushRolled), one goroutine per roll; flushMu makes them take turns.
func (l *Log) startFlushLocked(upTo int64) {
	if l.closed.Load() {
		return // Close flushes what is left itself
	}
	gen := l.flushGen
	l.flushes.Add(1) // under mu, before closed is set: Close's Wait covers it
	go func() {
		defer l.flushes.Done()
		l.flushMu.Lock()
		defer l.flushMu.Unlock()
		l.flushRolled(upTo, gen)
	}()
}

// flushRolled is the flush a roll to upTo starts, as Kafka's
// flushUptoOffsetExclusive: the sealed segments holding offsets from the
// recovery point up to upTo, the producer snapshots those rolls took and
// the directory (the new segments' entries) are fsynced without mu held;
// then the recovery point moves to upTo, unless the log was closed or
// truncated (gen) meanwhile or the recovery point is there already (a
// later roll's flush, or Flush, got there first). A segment gone meanwhile
// (retention, or a cleaned segment swapped in, which the cleaner fsynced)
// needs no fsync, so its failing one is no error. A real failure is
// logged and leaves the recovery point where it was: a crash then
// recovers from there, rescanning these segments.
func (l *Log) flushRolled(upTo int64, gen uint64) {
	l.mu.RLock()
	if l.closed.Load() || l.flushGen != gen || upTo <= l.recoveryPoint.Load() {
		l.mu.RUnlock()
		return
	}
	segs, snapshots := l.unflushedLocked(upTo)
	epochs, epochsVersion := l.epochs.snapshot()
	l.mu.RUnlock()

	for i := range segs {
		if l.stopFlush.Load() {
			return
		}
		if err := segs[i].sync(l.fs); err != nil && l.flushFailed(gen, segs[i].seg, segs[i].seg.baseOffset, "segment", err) {
			return
		}
	}
	for _, off := range snapshots {
		if l.stopFlush.Load() {
			return
		}
		if err := l.syncProducerSnapshot(off); err != nil && l.flushFailed(gen, nil, off, "producer snapshot", err) {
			return
		}
	}
	if l.stopFlush.Load() {
		return
	}
	// The leader epochs changed in memory since the file was written: it
	// must hold them before the recovery point moves (leader_epoch.go).
	// Its rename is made durable by the directory's fsync below.
	if epochs != nil {
		if err := l.epochs.persist(epochs, epochsVersion, syncContents); err != nil &&
			l.flushFailed(gen, nil, upTo, "leader epoch checkpoint", err) {
			return
		}
	}
	if err := l.fs.SyncDir(l.dir); err != nil && l.flushFailed(gen, nil, upTo, "directory", err) {
		return
	}

	l.mu.Lock()
	advance := !l.closed.Load() && l.flushGen == gen && upTo > l.recoveryPoint.Load()
	if advance {
		l.recoveryPoint.Store(upTo)
		l.cpTouch()
	}
	l.mu.Unlock()
	if advance {
		if err := l.writeRecoveryPoint(); err != nil {
			// Only costs recovery work after a crash.
			l.logger.Warn("cannot write recovery point checkpoint", "dir", l.dir, "err", err)
		}
	}
}

// flushFailed handles a failed fsync of flushRolled (of seg's files, or
// of another file with seg nil) and reports whether the flush must give
// up. The failure matters only while the log is open, not truncated since
// the roll, and seg still in it; one that matters is logged.
func (l *Log) flushFailed(gen uint64, seg *segment, offset int64, what string, err error) bool {
	l.mu.RLock()
	moot := l.closed.Load() || l.flushGen != gen
	gone := seg != nil && !slices.Contains(l.segments, seg)
	l.mu.RUnlock()
	switch {
	case moot:
		return true
	case gone:
		return false
	}
	l.logger.Error("flush of a rolled segment failed; the recovery point stays behind", "dir", l.dir,
		"base_offset", offset, "file", what, "recovery_point", l.recoveryPoint.Load(), "err", err)
	return true
}

// unflushedLocked returns the sealed segments holding offsets in
// [recovery point, upTo) and the offsets in (recovery point, upTo] of
// producer snapshots, which rolls write without an fsync.
func (l *Log) unflushedLocked(upTo int64) ([]sealedSync, []int64) {
	rp := l.recoveryPoint.Load()
	var segs []sealedSync
	for i, s := range l.segments[:len(l.segments)-1] {
		if s.baseOffset >= upTo {
			break
		}
		if l.segments[i+1].baseOffset > rp {
			segs = append(segs, s.sealedSyncLocked())
		}
	}
	var snapshots []int64
	for _, off := range l.producers.snapshots {
		if off > rp && off <= upTo {
			snapshots = append(snapshots, off)
		}
	}
	return segs, snapshots
}

// flushRolledLocked makes flushRolled's fsyncs under mu, for a flush that
// does not wait for the asynchronous one: every fsync must succeed.
func (l *Log) flushRolledLocked(upTo int64) error {
	segs, snapshots := l.unflushedLocked(upTo)
	for _, ss := range segs {
		if err := ss.seg.syncSealed(); err != nil {
			return err
		}
	}
	for _, off := range snapshots {
		if err := l.syncProducerSnapshot(off); err != nil {
			return err
		}
	}
	return l.fs.SyncDir(l.dir)
}

// syncProducerSnapshot fsyncs the snapshot a roll wrote at off. One gone
// went with its segment (or was never written: the roll logged that); it
// needs no fsync.
func (l *Log) syncProducerSnapshot(off int64) error {
	if err := syncPath(l.fs, producerSnapshotPath(l.dir, off)); !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// setRecoveryPointLocked records that offsets below rp are fsynced and
// checkpoints it; a recovery point already at or past rp stays.
func (l *Log) setRecoveryPointLocked(rp int64) {
	l.setRecoveryPointSyncLocked(rp, syncAll)
}

// setRecoveryPointSyncLocked is setRecoveryPointLocked with the fsyncs of
// mode. The leader epoch checkpoint is written first if it lacks changes:
// recovery rescans only from the recovery point (leader_epoch.go); if it
// cannot be written the recovery point stays.
func (l *Log) setRecoveryPointSyncLocked(rp int64, mode fileSync) {
	if rp <= l.recoveryPoint.Load() {
		return
	}
	if err := l.epochs.persistLocked(mode); err != nil {
		l.logger.Warn("cannot write leader epoch checkpoint; the recovery point stays", "dir", l.dir, "err", err)
		return
	}
	l.storeRecoveryPointLocked(rp, mode)
}

// storeRecoveryPointLocked sets the recovery point to rp and writes its
// checkpoint, leaving the leader-epoch file as it is: the caller made it
// hold the entries below rp, or loaded a clean log whose file gives them.
func (l *Log) storeRecoveryPointLocked(rp int64, mode fileSync) {
	l.recoveryPoint.Store(rp)
	l.cpTouch()
	if err := l.writeRecoveryPointSync(mode); err != nil {
		// Only costs recovery work after a crash.
		l.logger.Warn("cannot write recovery point checkpoint", "dir", l.dir, "err", err)
	}
}

// writeRecoveryPoint writes the recovery point, as it is when the write
// starts, to its checkpoint unless the file holds it already. The caller
// holds mu, or nothing (see rpMu).
func (l *Log) writeRecoveryPoint() error { return l.writeRecoveryPointSync(syncAll) }

// writeRecoveryPointSync is writeRecoveryPoint with the fsyncs of mode.
func (l *Log) writeRecoveryPointSync(mode fileSync) error {
	l.rpMu.Lock()
	defer l.rpMu.Unlock()
	rp := l.recoveryPoint.Load()
	if l.cp != nil {
		// The directory's file is written periodically; only a lowered
		// recovery point must reach it at once (dir_checkpoints.go).
		l.cp.setFrozen(l.tp, recoveryPointKind, rp)
		return l.cp.lowered(l.tp, recoveryPointKind, rp)
	}
	if rp == l.rpCheckpointed {
		return nil
	}
	if err := writeCheckpointSync(l.fs, l.dir, recoveryPointFile, rp, mode); err != nil {
		l.rpCheckpointed = -1 // the old file, or the new one not durable
		return err
	}
	l.rpCheckpointed = rp
	return nil
}

// flushLocked fsyncs the active segment and, first, what rolls left to an
// asynchronous flush not yet complete: sealed segments, producer
// snapshots, directory entries. The recovery point moves to the active
// segment's base in memory only, so that flush.messages appends do not
// fsync those again; the checkpoint, and moving it further, are the
// caller's (or the next flush's).
func (l *Log) flushLocked(now time.Time) error {
	act := l.active()
	if l.recoveryPoint.Load() < act.baseOffset {
		// The leader epoch checkpoint before the recovery point moves
		// (leader_epoch.go); flushRolledLocked's directory fsync makes its
		// rename durable.
		if err := l.epochs.persistLocked(syncContents); err != nil {
			return err
		}
		if err := l.flushRolledLocked(act.baseOffset); err != nil {
			return err
		}
		l.recoveryPoint.Store(act.baseOffset)
		l.cpTouch()
	}
	if err := act.flush(); err != nil {
		return err
	}
	l.unflushedMessages = 0
	l.lastFlush = now
	return nil
}

// flush fsyncs everything appended so far (sealed segments whose
// asynchronous flush is pending included) and checkpoints the recovery
// point and the high watermark.
func (l *Log) flush() error {
	l.hwMu.Lock()
	defer l.hwMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed.Load() {
		return errLogClosed
	}
	if err := l.flushLocked(l.now()); err != nil {
		return storageErr("flush", err)
	}
	l.setRecoveryPointLocked(l.logEndOffset.Load())
	if err := l.writeHighWatermarkLocked(syncAll); err != nil {
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
	if l.closed.Load() || l.unflushedMessages == 0 || now.Sub(l.lastFlush).Milliseconds() < cfg.FlushMs {
		return nil
	}
	if err := l.flushLocked(now); err != nil {
		return storageErr("flush", err)
	}
	l.setRecoveryPointLocked(l.logEndOffset.Load())
	return nil
}

// Close waits for the flushes rolls started (stopping them short), flushes
// what they left and the active segment, trims the active segment's
// indexes, checkpoints and writes the log's own clean-shutdown marker in
// its directory, then closes every file; no goroutine touches the log's
// files after it returns. Reads already holding FileSlices must have
// finished. The marker makes the next Open of this directory a clean one
// on its own: a standalone log, and a log the broker closes while it runs
// (moved between log directories, its log directory failing). The broker's
// shutdown closes its logs with CloseUnmarked or CloseUnsynced instead and
// writes one marker per log directory (clean_shutdown.go).
func (l *Log) Close() error { return l.close(syncContents, true) }

// CloseUnmarked is Close without the log's own clean-shutdown marker, for
// the owner of a log directory that writes the directory's marker once
// every log of it closed without error (Kafka's LogManager.shutdown): a
// file creation per partition less, which 100,000 partitions notice.
func (l *Log) CloseUnmarked() error { return l.close(syncContents, false) }

// CloseUnsynced is CloseUnmarked for a shutdown of many logs on one
// filesystem (replication's Manager.Close): it writes what Close writes
// but fsyncs nothing; the caller's SyncFS makes the writes durable, and
// only then may the directory's marker be written. One filesystem-wide
// flush then replaces about seven fsyncs per partition. A log without its
// directory's checkpoints is closed by CloseUnmarked: its own checkpoint
// files would claim a recovery point before the data under it is durable.
func (l *Log) CloseUnsynced() error {
	if l.cp == nil {
		return l.CloseUnmarked()
	}
	return l.close(syncNone, false)
}

func (l *Log) close(mode fileSync, marker bool) error {
	l.stopCleaning()
	l.hwMu.Lock()
	defer l.hwMu.Unlock()
	if !l.closeAndStopFlushes() {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.closeLocked(l.shutdownLocked(mode, marker))
}

// RecoveredSegments is how many segments Open recovered (re-validated
// batch by batch, as after a crash) rather than trusting them after a clean
// shutdown: 0 for a log loaded clean.
func (l *Log) RecoveredSegments() int { return l.recoveredSegments }

// closeLocked closes every file of a log whose shutdown ended with err.
func (l *Log) closeLocked(err error) error {
	for _, s := range l.segments {
		if cerr := s.closeFiles(); err == nil && cerr != nil {
			err = storageErr("close", cerr)
		}
	}
	if l.cp != nil {
		l.cp.unregister(l.tp, l)
	}
	return err
}

// shutdownLocked writes what a closing log leaves: the final time-index
// entry, the active segment trimmed (file and indexes), the checkpoints and
// a producer snapshot. With syncContents everything is fsynced, then the
// directory once, then (marker) the log's own clean-shutdown marker is
// written. CloseUnsynced passes syncNone: no fsync and no marker, the
// files durable only after the caller's SyncFS.
func (l *Log) shutdownLocked(mode fileSync, marker bool) error {
	sync := mode != syncNone
	act := l.active()
	// What the asynchronous flushes, stopped, left.
	if sync && l.recoveryPoint.Load() < act.baseOffset {
		if err := l.flushRolledLocked(act.baseOffset); err != nil {
			return storageErr("close", err)
		}
	}
	// Kafka's LogSegment.close: the final time-index entry, so that the
	// last entry always holds the segment's largest timestamp.
	if err := act.timeIndex.maybeAppendFinal(act.maxTimestamp, act.offsetOfMaxTimestamp); err != nil {
		return storageErr("close", err)
	}
	// A preallocated file is trimmed first, so that what a clean
	// shutdown leaves is whole batches only.
	if err := act.trimPreallocated(); err != nil {
		return storageErr("close", err)
	}
	// Indexes trimmed to their used size and, with sync, fsynced, as
	// Kafka's close does (the fsync covers what was stored through the
	// mapping: no msync first).
	trimIndex := (*indexFile).trim
	if sync {
		if err := act.log.Sync(); err != nil {
			return storageErr("close", err)
		}
		if err := act.txnIndex.sync(); err != nil {
			return storageErr("close", err)
		}
		trimIndex = (*indexFile).seal
	}
	if err := trimIndex(act.offsetIndex.indexFile); err != nil {
		return storageErr("close", err)
	}
	if err := trimIndex(act.timeIndex.indexFile); err != nil {
		return storageErr("close", err)
	}
	// With sync the checkpoints and the snapshot fsync their contents; one
	// fsync of the directory then makes all their renames durable, before
	// the marker exists (a partition's close is fsync-bound: one directory
	// fsync instead of one per file). With the directory's checkpoints
	// (always so without sync) the offsets are only recorded in memory;
	// the directory's files are written by their owner. The leader-epoch
	// checkpoint goes first: recovery re-derives only the epochs past the
	// recovery point.
	if err := l.epochs.persistLocked(mode); err != nil {
		return storageErr("close: leader epoch checkpoint", err)
	}
	l.setRecoveryPointSyncLocked(l.logEndOffset.Load(), mode)
	if l.highWatermark.Load() != l.hwCheckpointed { // else the file holds it
		if err := l.writeHighWatermarkLocked(mode); err != nil {
			return storageErr("close: high watermark checkpoint", err)
		}
	}
	// A clean shutdown without any producer snapshot is taken for a log
	// that never had producer state (Kafka's upgrade path, no replay), so
	// the marker must not outlive a failed snapshot.
	if err := l.snapshotProducersLocked(l.logEndOffset.Load(), mode); err != nil {
		return storageErr("close: producer state snapshot", err)
	}
	if !sync {
		return nil
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		return storageErr("close", err)
	}
	if !marker {
		return nil
	}
	if err := writeMarker(l.fs, l.dir, cleanShutdownFile, nil, syncAll); err != nil {
		return storageErr("close", err)
	}
	return nil
}

// Delete closes the log (waiting for the flushes rolls started, stopping
// them short) and removes its directory. The directory is first
// renamed to <dir>.<id>-delete (Kafka's convention, so the name is free for
// a new partition at once and a restart finishes the job); its files are
// closed and removed after file.delete.delay.ms, so fetches already sending
// from them complete.
func (l *Log) Delete() error {
	l.stopCleaning()
	l.hwMu.Lock()
	defer l.hwMu.Unlock()
	if !l.closeAndStopFlushes() {
		return errLogClosed
	}
	l.mu.Lock()
	defer l.mu.Unlock()
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
	if l.cp != nil {
		if err := l.cp.Forget(l.tp, l); err != nil {
			l.logger.Warn("checkpointing the log directory after a deletion", "dir", l.dir, "err", err)
		}
	}
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

// closeAndStopFlushes marks the log closed and waits for the asynchronous
// flushes to end, those running skipping the fsyncs left; it reports
// whether the log was open. Close and Delete call it holding hwMu, which
// keeps a second caller out until the first is done, and not mu, which a
// flush takes. The flushes waited for include any started before closed
// was set, and none starts after.
func (l *Log) closeAndStopFlushes() bool {
	l.mu.Lock()
	wasOpen := !l.closed.Load()
	l.closed.Store(true)
	l.changed()
	l.mu.Unlock()
	l.stopFlush.Store(true)
	l.flushes.Wait()
	return wasOpen
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
