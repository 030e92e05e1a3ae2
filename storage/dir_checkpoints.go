package storage

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
)

// DirCheckpoints is one log directory's three per-directory checkpoints,
// as Kafka keeps them: recovery-point-offset-checkpoint,
// log-start-offset-checkpoint and replication-offset-checkpoint (the high
// watermarks). A Log opened with Options.Checkpoints reads its offsets from
// here instead of its own per-partition files, and writes none of those.
//
// The values are pulled, not pushed: a write gathers every registered log's
// recovery point, log start offset and high watermark (atomics, no log
// lock), so appends and high-watermark moves cost nothing here. The owner
// (the broker's replication manager) writes each file periodically (Kafka's
// log.flush.offset.checkpoint.interval.ms,
// log.flush.start.offset.checkpoint.interval.ms,
// replica.high.watermark.checkpoint.interval.ms) and all three once on
// shutdown (Close). A write whose entries are already durable is skipped.
//
// Writes the logs force, because a stale file would be unsafe rather than
// only costly:
//
//   - a recovery point or log start offset lowered below the file's value
//     (truncation, recovery cutting a tail): a crash would otherwise trust
//     or hide offsets written since;
//   - DeleteRecords and TruncateFullyAndStartAt raising the log start
//     offset: records below it must not come back after a crash (retention
//     and a follower's move of its log start are left to the periodic
//     write, as in Kafka: segments below are gone anyway, or the leader's
//     log start reaches the follower again);
//   - a deleted log (Kafka checkpoints the directory after each deletion
//     too): a partition re-created under the same name must not inherit its
//     offsets. The partitions of one topic deletion are written once, at
//     the end (HoldForgets).
//
// Entries of partitions not opened yet keep their loaded values, so that a
// periodic write during start-up loses nothing; entries whose partition
// directory no longer exists are dropped on load.
type DirCheckpoints struct {
	fs     FS
	dir    string
	logger *slog.Logger

	mu      sync.Mutex
	entries map[TopicPartition]*dirEntry

	// One writer per file, each holding its lock across gather and write,
	// so a forced write after a lowering always writes last.
	writers [numDirKinds]*DirCheckpointWriter
	writeMu [numDirKinds]sync.Mutex
	// durable is what each file holds, by partition; guarded by writeMu.
	durable [numDirKinds]map[TopicPartition]int64
	// stale says a value of file k may have changed since its last
	// periodic write (touch): an idle broker's periodic writes then skip
	// gathering and sorting every partition's value.
	stale [numDirKinds]atomic.Bool

	// forgetsHeld counts the callers of HoldForgets that have not yet
	// released them; forgotten says a Forget skipped its write meanwhile.
	// Guarded by mu.
	forgetsHeld int
	forgotten   bool
}

type dirKind int

const (
	recoveryPointKind dirKind = iota
	logStartKind
	highWatermarkKind
	numDirKinds
)

var dirKindFiles = [numDirKinds]string{recoveryPointFile, logStartOffsetFile, ReplicationOffsetFile}

// legacyFiles are the per-partition files of the same roles, migrated from.
var legacyFiles = [numDirKinds]string{recoveryPointFile, logStartOffsetFile, highWatermarkFile}

// dirEntry is one partition: its open log, or the values it had when last
// seen (loaded from the files, or frozen when its log closed). has says
// which values exist; an absent one is left out of its file.
type dirEntry struct {
	log    *Log
	values [numDirKinds]int64
	has    [numDirKinds]bool
}

// OpenDirCheckpoints loads logDir's per-directory checkpoints. Missing
// files are migrated from the per-partition ones (LoadDirOffsets): the
// per-directory files are written durably first, then the per-partition
// files removed. A malformed per-directory file is logged and ignored, as
// Kafka's LogManager does (the logs then recover from their start). Only
// an error reading the directory or writing a migrated file fails.
func OpenDirCheckpoints(fsys FS, logDir string, logger *slog.Logger) (*DirCheckpoints, error) {
	if fsys == nil {
		fsys = OSFS{}
	}
	if logger == nil {
		logger = slog.Default()
	}
	c := &DirCheckpoints{fs: fsys, dir: logDir, logger: logger, entries: map[TopicPartition]*dirEntry{}}
	c.touch()
	if err := fsys.MkdirAll(logDir, 0o755); err != nil {
		return nil, err
	}
	live := map[TopicPartition]bool{}
	des, err := fsys.ReadDir(logDir)
	if err != nil {
		return nil, err
	}
	for _, de := range des {
		if topic, p, ok := ParsePartitionDirName(de.Name()); ok && de.IsDir() {
			live[TopicPartition{topic, p}] = true
		}
	}
	var migrated []dirKind
	for k := range numDirKinds {
		c.writers[k] = NewDirCheckpointWriter(fsys, logDir, dirKindFiles[k])
		offsets, mig, err := LoadDirOffsets(fsys, logDir, dirKindFiles[k], legacyFiles[k], logger)
		var malformed *MalformedCheckpointError
		if errors.As(err, &malformed) {
			logger.Warn("ignoring malformed checkpoint", "dir", logDir, "err", err)
		} else if err != nil {
			return nil, err
		}
		for tp, off := range offsets {
			if !live[tp] {
				continue
			}
			e := c.entries[tp]
			if e == nil {
				e = &dirEntry{}
				c.entries[tp] = e
			}
			e.values[k], e.has[k] = off, true
		}
		if mig {
			migrated = append(migrated, k)
		}
	}
	for k := range numDirKinds {
		c.durable[k] = map[TopicPartition]int64{}
		for tp, e := range c.entries {
			if e.has[k] {
				c.durable[k][tp] = e.values[k]
			}
		}
	}
	for _, k := range migrated {
		c.writeMu[k].Lock()
		err := c.writeLocked(k)
		c.writeMu[k].Unlock()
		if err != nil {
			return nil, err
		}
	}
	if len(migrated) > 0 {
		for tp := range live {
			pdir := filepath.Join(logDir, tp.Topic+"-"+strconv.FormatInt(int64(tp.Partition), 10))
			for _, name := range legacyFiles {
				if err := fsys.Remove(filepath.Join(pdir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
					logger.Warn("removing a migrated per-partition checkpoint", "dir", pdir, "file", name, "err", err)
				}
			}
		}
		logger.Info("migrated per-partition checkpoints to per-directory ones", "dir", logDir, "partitions", len(live))
	}
	return c, nil
}

// Dir is the log directory.
func (c *DirCheckpoints) Dir() string { return c.dir }

// loaded returns tp's value of kind k held here (loaded, frozen, or the
// open log's).
func (c *DirCheckpoints) loaded(tp TopicPartition, k dirKind) (int64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.entries[tp]
	if e == nil {
		return 0, false
	}
	if e.log != nil {
		return e.log.dirValue(k), true
	}
	return e.values[k], e.has[k]
}

// register makes l the source of tp's values.
func (c *DirCheckpoints) register(tp TopicPartition, l *Log) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.entries[tp]
	if e == nil {
		e = &dirEntry{}
		c.entries[tp] = e
	}
	e.log = l
	c.touch()
}

// setFrozen sets a not-open partition's value of kind k (used while a log
// loads, before it registers).
func (c *DirCheckpoints) setFrozen(tp TopicPartition, k dirKind, v int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.entries[tp]
	if e == nil {
		e = &dirEntry{}
		c.entries[tp] = e
	}
	if e.log == nil {
		e.values[k], e.has[k] = v, true
	}
	c.touch()
}

// unregister freezes tp's values as l has them now (l is closing).
func (c *DirCheckpoints) unregister(tp TopicPartition, l *Log) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.entries[tp]
	if e == nil || e.log != l {
		return
	}
	for k := range numDirKinds {
		e.values[k], e.has[k] = l.dirValue(k), true
	}
	e.log = nil
	c.touch()
}

// Adopt sets tp's values, for a partition about to be opened here from a
// copy of its files (a replica moved between log directories), and writes
// the three files.
func (c *DirCheckpoints) Adopt(tp TopicPartition, recoveryPoint, logStart, highWatermark int64) error {
	c.mu.Lock()
	c.entries[tp] = &dirEntry{values: [numDirKinds]int64{recoveryPoint, logStart, highWatermark}, has: [numDirKinds]bool{true, true, true}}
	c.mu.Unlock()
	c.touch()
	return c.WriteAll()
}

// Forget drops tp (its log deleted, or moved to another directory) and
// writes the three files, so that a partition created later under the same
// name starts afresh even after a crash. The entry goes only if l is still
// its source, or it has none (l nil).
func (c *DirCheckpoints) Forget(tp TopicPartition, l *Log) error {
	c.mu.Lock()
	if e := c.entries[tp]; e != nil && (e.log == nil || e.log == l) {
		delete(c.entries, tp)
	}
	held := c.forgetsHeld > 0
	c.forgotten = c.forgotten || held
	c.mu.Unlock()
	c.touch()
	if held {
		return nil
	}
	return c.WriteAll()
}

// HoldForgets makes Forget drop entries without writing the files until
// the returned release, which writes them once if any Forget came
// meanwhile: the deletion of a topic's 10,000 partitions writes the three
// files once, as Kafka's LogManager.asyncDelete checkpoints each directory
// once for the partitions it deletes together, rather than once per
// partition (each write gathers every partition of the directory). A
// crash before the release leaves the deleted partitions in the files;
// their directories are gone (renamed for deletion), so the load drops
// them. The caller must not re-create a forgotten partition before the
// release.
func (c *DirCheckpoints) HoldForgets() (release func() error) {
	c.mu.Lock()
	c.forgetsHeld++
	c.mu.Unlock()
	var once sync.Once
	return func() error {
		var write bool
		once.Do(func() {
			c.mu.Lock()
			c.forgetsHeld--
			write = c.forgetsHeld == 0 && c.forgotten
			if write {
				c.forgotten = false
			}
			c.mu.Unlock()
		})
		if !write {
			return nil
		}
		return c.WriteAll()
	}
}

// lowered writes file k now if it holds a value for tp above v (the caller
// has just lowered tp's value to v, in its log or with setFrozen).
func (c *DirCheckpoints) lowered(tp TopicPartition, k dirKind, v int64) error {
	c.writeMu[k].Lock()
	defer c.writeMu[k].Unlock()
	if d, ok := c.durable[k][tp]; !ok || d <= v {
		return nil
	}
	return c.writeLocked(k)
}

// touch notes that values may have changed (a log's change hook, a
// recovery point moved, an entry added or frozen).
func (c *DirCheckpoints) touch() {
	for k := range c.stale {
		if !c.stale[k].Load() {
			c.stale[k].Store(true)
		}
	}
}

// writePeriodic is the periodic write of file k: nothing when no value
// changed since the last one.
func (c *DirCheckpoints) writePeriodic(k dirKind) error {
	c.writeMu[k].Lock()
	defer c.writeMu[k].Unlock()
	if !c.stale[k].Swap(false) {
		return nil
	}
	if err := c.writeLocked(k); err != nil {
		c.stale[k].Store(true)
		return err
	}
	return nil
}

// writeNow writes file k with the values as they are now.
func (c *DirCheckpoints) writeNow(k dirKind) error {
	c.writeMu[k].Lock()
	defer c.writeMu[k].Unlock()
	return c.writeLocked(k)
}

func (c *DirCheckpoints) writeLocked(k dirKind) error { return c.writeSyncLocked(k, syncAll) }

func (c *DirCheckpoints) writeSyncLocked(k dirKind, mode fileSync) error {
	offsets := c.gather(k)
	if _, err := c.writers[k].writeSync(offsets, mode); err != nil {
		c.durable[k] = map[TopicPartition]int64{} // unknown: lowerings force writes until one succeeds
		for tp := range offsets {
			c.durable[k][tp] = 1<<63 - 1
		}
		return storageErr("checkpoint "+dirKindFiles[k], err)
	}
	c.durable[k] = offsets
	return nil
}

// gather is every partition's value of kind k.
func (c *DirCheckpoints) gather(k dirKind) map[TopicPartition]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[TopicPartition]int64, len(c.entries))
	for tp, e := range c.entries {
		switch {
		case e.log != nil:
			if v := e.log.dirValue(k); v >= 0 {
				out[tp] = v
			}
		case e.has[k]:
			out[tp] = e.values[k]
		}
	}
	return out
}

// WriteRecoveryPoints writes recovery-point-offset-checkpoint (Kafka's
// log.flush.offset.checkpoint.interval.ms task).
func (c *DirCheckpoints) WriteRecoveryPoints() error { return c.writePeriodic(recoveryPointKind) }

// WriteLogStartOffsets writes log-start-offset-checkpoint (Kafka's
// log.flush.start.offset.checkpoint.interval.ms task).
func (c *DirCheckpoints) WriteLogStartOffsets() error { return c.writePeriodic(logStartKind) }

// WriteHighWatermarks writes replication-offset-checkpoint (Kafka's
// replica.high.watermark.checkpoint.interval.ms task).
func (c *DirCheckpoints) WriteHighWatermarks() error { return c.writePeriodic(highWatermarkKind) }

// WriteAll writes the three files; the broker calls it once per directory
// on a clean shutdown, after closing the directory's logs. Each file's
// contents are fsynced, then the directory once for the three renames.
func (c *DirCheckpoints) WriteAll() error {
	for k := range numDirKinds {
		c.writeMu[k].Lock()
		defer c.writeMu[k].Unlock()
	}
	var errs []error
	for k := range numDirKinds {
		errs = append(errs, c.writeSyncLocked(k, syncContents))
	}
	if err := c.fs.SyncDir(c.dir); err != nil {
		// The renames may not be durable: lowerings must write again.
		for k := range numDirKinds {
			for tp := range c.durable[k] {
				c.durable[k][tp] = 1<<63 - 1
			}
			c.writers[k].mu.Lock()
			c.writers[k].last = nil
			c.writers[k].mu.Unlock()
		}
		errs = append(errs, storageErr("checkpoint "+c.dir, err))
	}
	return errors.Join(errs...)
}
