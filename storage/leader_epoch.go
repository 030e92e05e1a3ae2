package storage

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kerr"
)

// The leader epoch cache is Kafka's LeaderEpochFileCache: for every leader
// epoch that wrote to the partition, the offset of its first record (or,
// for the current leader, the log end offset when its leadership began).
// Followers ask the leader for the end offset of their latest epoch
// (OffsetForLeaderEpoch, KIP-101/KIP-279) to find where their log diverges,
// and consumers ask it to detect a truncated log (KIP-320).
//
// Entries are ordered by epoch, and their start offsets increase with it.
// An entry is added when an append carries an epoch above the latest
// (AssignEpochStartOffset, and every leader and follower append); the cache
// is cut from the end when the log is truncated, and from the start when
// the log start offset moves (the first entry then starts at the new log
// start offset).
//
// On disk it is Kafka's leader-epoch-checkpoint file in the partition
// directory, text, replaced atomically (written to <name>.tmp, fsynced,
// renamed):
//
//	0                       format version
//	<count>                 number of entries
//	<epoch> <startOffset>   one line per entry, in epoch order
//
// When the file is written: not on every change, unlike Kafka, whose
// assign fsyncs the file and its directory under the log's lock (only its
// truncations write in the background since KAFKA-15046 and KAFKA-16541).
// A change (a new leader's epoch, a follower's first batch of an epoch, a
// truncation, a new log start) is made in memory only; the file is
// written and fsynced, if anything changed, before the recovery point
// moves (flushRolled, flushLocked, setRecoveryPointSyncLocked) and by
// Close before the clean-shutdown marker. So after a crash every entry
// starting below the recovery point is in the file, and recovery
// re-derives the others from the batches it rescans, which start at or
// below the recovery point: it drops the entries starting at or past the
// first rescanned segment's base and assigns each rescanned batch's
// partition leader epoch, as Kafka's LogSegment.recover does
// (recoverEpochsFrom, recoverBatchEpoch). A failover at 10,000 partitions
// thus costs no fsync per partition for its epochs. Only clear
// (TruncateFullyAndStartAt) writes at once, as Kafka's clearAndFlush.
// A clean open does not write it either when the load only dropped
// entries at the log end (a leadership that wrote nothing) or before the
// log start: loading the file again drops the same, so the recovery point
// moves to the log end without it, and the file is written before the
// recovery point moves further.
//
// Thread-safety: entries and version are guarded by the owning Log's lock;
// the file by fileMu, so that a flush can write it without that lock.
const leaderEpochFile = "leader-epoch-checkpoint"

// undefinedEpoch is Kafka's UNDEFINED_EPOCH and UNDEFINED_EPOCH_OFFSET.
const undefinedEpoch = -1

// maxEpochCheckpointBytes bounds what loading the checkpoint reads.
const maxEpochCheckpointBytes = 64 << 20

// EpochEntry is one leader epoch and the offset of its first record.
type EpochEntry struct {
	Epoch       int32
	StartOffset int64
}

// leaderEpochCache is one partition's epochs, persisted in dir.
type leaderEpochCache struct {
	fs      FS
	dir     string
	logger  *slog.Logger
	entries []EpochEntry // epoch ascending, start offsets ascending
	// version counts the changes to entries; written is the version the
	// file holds (a failed write leaves it behind). fileMu serializes the
	// writes of the file and guards written's updates.
	version uint64
	fileMu  sync.Mutex
	written atomic.Uint64
}

// loadLeaderEpochCache reads the checkpoint in dir; an absent file is an
// empty cache, a malformed one is logged and taken as empty. Entries are
// assigned one by one, as Kafka's constructor does, so entries violating
// the ordering are dropped.
func loadLeaderEpochCache(fsys FS, dir string, logger *slog.Logger) (*leaderEpochCache, error) {
	c := &leaderEpochCache{fs: fsys, dir: dir, logger: logger}
	entries, err := readEpochCheckpoint(fsys, filepath.Join(dir, leaderEpochFile))
	if err != nil {
		if os.IsNotExist(err) {
			return c, nil
		}
		if !errors.Is(err, errMalformedEpochCheckpoint) {
			return nil, err
		}
		logger.Warn("ignoring malformed leader epoch checkpoint", "dir", dir)
		return c, nil
	}
	for _, e := range entries {
		c.entries = assignEntry(c.entries, e, nil)
	}
	return c, nil
}

var errMalformedEpochCheckpoint = errors.New("malformed " + leaderEpochFile)

func readEpochCheckpoint(fsys FS, path string) ([]EpochEntry, error) {
	buf, err := readBoundedFile(fsys, path, maxEpochCheckpointBytes)
	var tooLarge *fileTooLargeError
	if errors.As(err, &tooLarge) || errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, errMalformedEpochCheckpoint
	}
	if err != nil {
		return nil, err
	}
	lines := bytes.Split(bytes.TrimSpace(buf), []byte("\n"))
	if len(lines) < 2 || string(bytes.TrimSpace(lines[0])) != "0" {
		return nil, errMalformedEpochCheckpoint
	}
	count, err := strconv.Atoi(string(bytes.TrimSpace(lines[1])))
	if err != nil || count != len(lines)-2 {
		return nil, errMalformedEpochCheckpoint
	}
	entries := make([]EpochEntry, 0, count)
	for _, line := range lines[2:] {
		fields := bytes.Fields(line)
		if len(fields) != 2 {
			return nil, errMalformedEpochCheckpoint
		}
		epoch, err1 := strconv.ParseInt(string(fields[0]), 10, 32)
		start, err2 := strconv.ParseInt(string(fields[1]), 10, 64)
		if err1 != nil || err2 != nil || epoch < 0 || start < 0 {
			return nil, errMalformedEpochCheckpoint
		}
		entries = append(entries, EpochEntry{Epoch: int32(epoch), StartOffset: start})
	}
	return entries, nil
}

// writeEpochCheckpoint atomically replaces the checkpoint file, with the
// fsyncs of mode.
func writeEpochCheckpoint(fsys FS, dir string, entries []EpochEntry, mode fileSync) error {
	b := make([]byte, 0, 16+len(entries)*16)
	b = append(b, "0\n"...)
	b = strconv.AppendInt(b, int64(len(entries)), 10)
	b = append(b, '\n')
	for _, e := range entries {
		b = strconv.AppendInt(b, int64(e.Epoch), 10)
		b = append(b, ' ')
		b = strconv.AppendInt(b, e.StartOffset, 10)
		b = append(b, '\n')
	}
	return replaceFileSync(fsys, dir, filepath.Join(dir, leaderEpochFile), b, mode)
}

// change makes entries the cache's, in memory; the file follows later
// (persistLocked, persist).
func (c *leaderEpochCache) change(entries []EpochEntry) {
	c.entries = entries
	c.version++
}

// dirty reports whether the file lacks changes made in memory. The caller
// holds the Log's lock.
func (c *leaderEpochCache) dirty() bool { return c.written.Load() != c.version }

// snapshot returns the entries and their version for persist, nil when
// the file holds them already. The caller holds the Log's lock, at least
// for reading.
func (c *leaderEpochCache) snapshot() ([]EpochEntry, uint64) {
	if !c.dirty() {
		return nil, 0
	}
	return slices.Clone(c.entries), c.version
}

// persist writes entries, the cache's at version, to the file with the
// fsyncs of mode, unless the file holds that version or a later one
// already. It needs no lock: a flush calls it without the Log's.
func (c *leaderEpochCache) persist(entries []EpochEntry, version uint64, mode fileSync) error {
	c.fileMu.Lock()
	defer c.fileMu.Unlock()
	if c.written.Load() >= version {
		return nil
	}
	if err := writeEpochCheckpoint(c.fs, c.dir, entries, mode); err != nil {
		return err
	}
	c.written.Store(version)
	return nil
}

// persistLocked writes the file if it lacks changes; the caller holds the
// Log's lock.
func (c *leaderEpochCache) persistLocked(mode fileSync) error {
	if c == nil || !c.dirty() {
		return nil
	}
	return c.persist(c.entries, c.version, mode)
}

func (c *leaderEpochCache) latest() (EpochEntry, bool) {
	if len(c.entries) == 0 {
		return EpochEntry{}, false
	}
	return c.entries[len(c.entries)-1], true
}

// updateNeeded is Kafka's isUpdateNeeded: the epoch differs from the
// latest, or it is the latest with an earlier start.
func (c *leaderEpochCache) updateNeeded(e EpochEntry) bool {
	last, ok := c.latest()
	return !ok || e.Epoch != last.Epoch || e.StartOffset < last.StartOffset
}

// assignEntry adds e to entries (a fresh slice when anything changes),
// first removing from the end the entries that would break the ordering
// (Kafka's maybeTruncateNonMonotonicEntries: epoch >= e's or start offset
// >= e's). Non-trivial removals are logged when logger is set.
func assignEntry(entries []EpochEntry, e EpochEntry, logger *slog.Logger) []EpochEntry {
	n := len(entries)
	for n > 0 && (entries[n-1].Epoch >= e.Epoch || entries[n-1].StartOffset >= e.StartOffset) {
		n--
	}
	removed := entries[n:]
	if logger != nil && (len(removed) > 1 || (len(removed) == 1 && removed[0].StartOffset != e.StartOffset)) {
		logger.Warn("new leader epoch entry truncated conflicting entries", "epoch", e.Epoch,
			"start_offset", e.StartOffset, "removed", removed)
	}
	return append(slices.Clone(entries[:n]), e)
}

// assign is Kafka's LeaderEpochFileCache.assign, in memory (see the file
// comment for when the file follows).
func (c *leaderEpochCache) assign(epoch int32, startOffset int64) error {
	e := EpochEntry{Epoch: epoch, StartOffset: startOffset}
	if epoch < 0 || startOffset < 0 {
		return fmt.Errorf("%w: invalid partition leader epoch entry (epoch %d, start offset %d)", kerr.InvalidRequest, epoch, startOffset)
	}
	if !c.updateNeeded(e) {
		return nil
	}
	c.change(assignEntry(c.entries, e, c.logger.With("dir", c.dir)))
	c.logger.Debug("assigned leader epoch", "dir", c.dir, "epoch", epoch, "start_offset", startOffset, "entries", len(c.entries))
	return nil
}

// truncateFromEnd removes the entries starting at or after endOffset
// (Kafka's truncateFromEnd), after a truncation of the log to endOffset.
func (c *leaderEpochCache) truncateFromEnd(endOffset int64) {
	last, ok := c.latest()
	if endOffset < 0 || !ok || last.StartOffset < endOffset {
		return
	}
	n := len(c.entries)
	for n > 0 && c.entries[n-1].StartOffset >= endOffset {
		n--
	}
	c.change(slices.Clone(c.entries[:n]))
}

// truncateFromStart drops the entries starting at or before startOffset,
// the new log start offset, keeping the last of them with startOffset as
// its start (Kafka's truncateFromStart): the epoch that was current at the
// log start now starts there.
func (c *leaderEpochCache) truncateFromStart(startOffset int64) {
	n := 0
	for n < len(c.entries) && c.entries[n].StartOffset <= startOffset {
		n++
	}
	if n == 0 || (n == 1 && c.entries[0].StartOffset == startOffset) {
		return
	}
	first := EpochEntry{Epoch: c.entries[n-1].Epoch, StartOffset: startOffset}
	c.change(append([]EpochEntry{first}, c.entries[n:]...))
}

// clear removes every entry and writes the file at once (Kafka's
// clearAndFlush): the log was emptied and restarted elsewhere
// (TruncateFullyAndStartAt), and recovery would not rescan the old
// offsets the entries name.
func (c *leaderEpochCache) clear() error {
	if len(c.entries) == 0 && !c.dirty() {
		if ok, err := fileExists(c.fs, filepath.Join(c.dir, leaderEpochFile)); err != nil || !ok {
			return err
		}
	}
	c.change(nil)
	return c.persist(nil, c.version, syncAll)
}

// recoverBatchEpoch records a recovered batch's partition leader epoch, as
// Kafka's LogSegment.recover: an epoch above the latest starts at the
// batch's base offset; a batch without one (-1) records nothing.
func (c *leaderEpochCache) recoverBatchEpoch(epoch int32, baseOffset int64) {
	if epoch < 0 {
		return
	}
	if last, ok := c.latest(); ok && epoch <= last.Epoch {
		return
	}
	c.change(assignEntry(c.entries, EpochEntry{Epoch: epoch, StartOffset: baseOffset}, c.logger.With("dir", c.dir)))
}

// endOffsetFor is Kafka's LeaderEpochFileCache.endOffsetFor.
func (c *leaderEpochCache) endOffsetFor(requested int32, logEndOffset int64) (int32, int64) {
	if requested == undefinedEpoch {
		return undefinedEpoch, undefinedEpoch
	}
	if last, ok := c.latest(); ok && last.Epoch == requested {
		return requested, logEndOffset
	}
	// higher: the first entry with an epoch above the requested one.
	hi := sort.Search(len(c.entries), func(i int) bool { return c.entries[i].Epoch > requested })
	if hi == len(c.entries) {
		return undefinedEpoch, undefinedEpoch
	}
	higher := c.entries[hi]
	if hi == 0 {
		// Below every known epoch: its data is gone from the log, and the
		// follower must start from the first epoch we know.
		return requested, higher.StartOffset
	}
	return c.entries[hi-1].Epoch, higher.StartOffset
}

// openLeaderEpochs loads the cache at the start of Open, before the
// segments, whose recovery updates it (recoverEpochsFrom,
// recoverBatchEpoch); it returns the entries the file holds.
func (l *Log) openLeaderEpochs() ([]EpochEntry, error) {
	c, err := loadLeaderEpochCache(l.fs, l.dir, l.logger)
	if err != nil {
		return nil, fmt.Errorf("leader epoch checkpoint: %w", err)
	}
	l.epochs = c
	return slices.Clone(c.entries), nil
}

// recoverEpochsFrom prepares the cache for the recovery of the log from
// base, the first segment rescanned because of where the recovery point
// is: the entries starting at or past base go, since the file may hold
// stale ones there (a truncation made in memory only) and lack others (an
// epoch started in memory only); the rescanned batches then assign theirs
// (recoverBatchEpoch). Entries below base are right: the file was written
// before the recovery point moved past them.
func (l *Log) recoverEpochsFrom(base int64) {
	l.epochs.truncateFromEnd(base)
}

// finishLeaderEpochsLocked ends the cache's load, once the log end and
// start offsets are known: entries at or past the log end go (recovery
// may have cut the log; a leader may have recorded its epoch without
// writing), and the first entry moves up to the log start offset, as
// Kafka's LogLoader does. Unless the result is what the file holds
// (loaded), the cache is dirty: the file is written before the recovery
// point is set, or on a clean open before it moves past the log end.
func (l *Log) finishLeaderEpochsLocked(loaded []EpochEntry) {
	c := l.epochs
	c.truncateFromEnd(l.logEndOffset.Load())
	c.truncateFromStart(l.logStartOffset.Load())
	if slices.Equal(c.entries, loaded) {
		c.written.Store(c.version)
	}
}

// maybeAssignEpochLocked records that epoch starts at startOffset, for an
// append of a batch stamped with epoch (Kafka's appendAsLeader and
// appendAsFollower call assign for every batch). An epoch below 0 (no
// leader epoch) records nothing.
func (l *Log) maybeAssignEpochLocked(epoch int32, startOffset int64) error {
	if epoch < 0 {
		return nil
	}
	return l.epochs.assign(epoch, startOffset)
}

// AssignEpochStartOffset records that leader epoch epoch starts at
// startOffset (Kafka's UnifiedLog.maybeAssignEpochStartOffset, called by a
// new leader with its log end offset): it adds the entry if epoch differs
// from the latest cached epoch (or is the latest with an earlier start),
// after removing the entries whose epoch is >= epoch or whose start offset
// is >= startOffset; it does nothing when epoch is the latest already.
// The checkpoint file follows when the recovery point next moves (see
// leaderEpochCache): a crash before that loses nothing, since the entry
// starts at the log end.
func (l *Log) AssignEpochStartOffset(epoch int32, startOffset int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed.Load() {
		return errLogClosed
	}
	return l.epochs.assign(epoch, startOffset)
}

// LatestEpoch is the latest cached leader epoch; false when the cache is
// empty.
func (l *Log) LatestEpoch() (int32, bool) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.epochs == nil {
		return undefinedEpoch, false
	}
	e, ok := l.epochs.latest()
	if !ok {
		return undefinedEpoch, false
	}
	return e.Epoch, true
}

// EndOffsetForEpoch answers OffsetForLeaderEpoch as Kafka's
// LeaderEpochFileCache.endOffsetFor(epoch, logEndOffset): (-1, -1) for the
// undefined epoch -1 or an epoch above every cached one; (epoch, log end
// offset) for the latest epoch; else the largest cached epoch <= the
// requested one (the requested one itself if none is) with the start
// offset of the first epoch above it.
func (l *Log) EndOffsetForEpoch(epoch int32) (int32, int64) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.epochs == nil {
		return undefinedEpoch, undefinedEpoch
	}
	return l.epochs.endOffsetFor(epoch, l.logEndOffset.Load())
}

// epochEntries returns a copy of the leader epoch cache.
func (l *Log) epochEntries() []EpochEntry {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.epochs == nil {
		return nil
	}
	return slices.Clone(l.epochs.entries)
}
