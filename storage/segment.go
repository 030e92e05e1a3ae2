package storage

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/strait/strait/recordbatch"
)

const (
	logFileSuffix       = ".log"
	indexFileSuffix     = ".index"
	timeIndexFileSuffix = ".timeindex"
	deletedFileSuffix   = ".deleted"
	// A segment the cleaner is writing has its three files named
	// *.cleaned; they become *.swap once complete, and lose the suffix
	// once the segments they replace are renamed *.deleted (see clean.go).
	cleanedFileSuffix = ".cleaned"
	swapFileSuffix    = ".swap"
)

// segmentFileSuffixes are the files of a segment, in the order the swap
// protocol renames them: the log first, so that recovery finding a
// *.log.swap beside a *.index.cleaned knows the rename was cut short.
var segmentFileSuffixes = [...]string{logFileSuffix, indexFileSuffix, timeIndexFileSuffix, txnIndexFileSuffix}

func segmentPath(dir string, baseOffset int64, suffix string) string {
	return filepath.Join(dir, fmt.Sprintf("%020d%s", baseOffset, suffix))
}

// segment is one `%020d.log` file of whole v2 batches plus its offset and
// time indexes. The log file is written only at its end (WriteAt at size),
// so byte ranges below size never change while the segment exists and
// readers may send them without the lock.
//
// Thread-safety: none; the owning Log's lock guards every call, except
// the fsyncs of a sealedSync captured under it (the asynchronous flush
// after a roll). The log file is the only descriptor a segment holds
// (index.go, txn_index.go), and with a FileCache only while the cache
// keeps it open (filecache.go).
type segment struct {
	dir         string
	baseOffset  int64
	log         *segFile // opened on demand once sealed (filecache.go)
	size        int64    // bytes of whole batches; the file may hold a torn tail beyond
	offsetIndex *offsetIndex
	timeIndex   *timeIndex
	txnIndex    *txnIndex // aborted transactions whose marker is here (txn_index.go); nil: none yet

	appendTrackers
	created time.Time
	// rollJitterMs is taken from the segment's age limit (segment.ms) when
	// it is the active segment: drawn once per segment when it is opened,
	// below segment.jitter.ms, as Kafka's LogSegment.rollJitterMs, so that
	// partitions created together do not all roll at once.
	rollJitterMs int64
	// preallocated: the log file was made segment.bytes long when the
	// segment was created (preallocate) and is not trimmed yet.
	preallocated bool
	// tail: where the last batches start, while active (tailbatches.go).
	tail *tailBatches
	// ends: where recent reads ended (readends.go).
	ends atomic.Pointer[readEnds]
}

// appendTrackers are what indexBatch moves with each batch: a failed
// append puts them back.
type appendTrackers struct {
	nextOffset               int64 // offset after the last batch, baseOffset when empty
	bytesSinceLastIndexEntry int64
	maxTimestamp             int64 // largest batch max timestamp, -1 if none
	offsetOfMaxTimestamp     int64 // last offset of the batch carrying it
	firstBatchTimestamp      int64 // max timestamp of the first batch: the segment.ms clock, -1 if none
}

// segmentJitter draws a segment's roll jitter in [0, bound); tests
// replace it.
var segmentJitter = func(bound int64) int64 { return rand.Int64N(bound) }

// randomSegmentJitter is Kafka's LogConfig.randomSegmentJitter: 0 without
// segment.jitter.ms, else a random value below min(segment.jitter.ms,
// segment.ms).
func (c *LogConfig) randomSegmentJitter() int64 {
	bound := min(c.SegmentJitterMs, c.SegmentMs)
	if bound <= 0 {
		return 0
	}
	return segmentJitter(bound)
}

// segmentOpenMode says which of a segment's files start empty.
type segmentOpenMode int

const (
	segmentCreate  segmentOpenMode = iota // every file new and empty
	segmentLoad                           // every file as found
	segmentRebuild                        // the log as found, the indexes empty
)

// openSegmentFiles opens a segment's log file and its indexes. With
// active, the indexes are preallocated and mapped (see index.go).
func openSegmentFiles(fsys FS, dir string, baseOffset int64, cfg *LogConfig, mode segmentOpenMode, active bool, now time.Time) (*segment, error) {
	return openSegmentFilesNamed(fsys, dir, baseOffset, "", cfg, mode, active, now)
}

// openSegmentFilesNamed is openSegmentFiles for files whose names carry an
// extra suffix (".cleaned" for a segment the cleaner writes).
func openSegmentFilesNamed(fsys FS, dir string, baseOffset int64, extra string, cfg *LogConfig, mode segmentOpenMode, active bool, now time.Time) (*segment, error) {
	flag := os.O_RDWR | os.O_CREATE
	if mode == segmentCreate {
		flag |= os.O_TRUNC
	}
	path := segmentPath(dir, baseOffset, logFileSuffix+extra)
	lf, err := fsys.OpenFile(path, flag, 0o644)
	if err != nil {
		return nil, err
	}
	fi, err := lf.Stat()
	if err != nil {
		lf.Close()
		return nil, err
	}
	s := &segment{
		dir: dir, baseOffset: baseOffset, log: newSegFile(fsys, path, lf), size: fi.Size(),
		appendTrackers: appendTrackers{nextOffset: baseOffset, maxTimestamp: recordbatch.NoTimestamp, offsetOfMaxTimestamp: -1, firstBatchTimestamp: recordbatch.NoTimestamp},
		created:        now,
		rollJitterMs:   cfg.randomSegmentJitter(),
	}
	if mode == segmentCreate && active && extra == "" && cfg.Preallocate && cfg.SegmentBytes > 0 {
		// Kafka's FileRecords.open with preallocate: the file is made
		// segment.bytes long at once (RandomAccessFile.setLength), the
		// segment's size stays 0, and the file is trimmed to its size on
		// roll and close (trimPreallocated); recovery cuts the zero tail
		// a crash leaves.
		if err := lf.Truncate(cfg.SegmentBytes); err != nil {
			lf.Close()
			return nil, err
		}
		s.size, s.preallocated = 0, true
	}
	if err := s.openIndexes(fsys, extra, cfg, mode != segmentLoad, active); err != nil {
		lf.Close()
		return nil, err
	}
	return s, nil
}

// trimPreallocated cuts a preallocated log file to the segment's size
// (Kafka's FileRecords.trim, on roll and close).
func (s *segment) trimPreallocated() error {
	if !s.preallocated {
		return nil
	}
	if err := s.log.Truncate(s.size); err != nil {
		return err
	}
	s.preallocated = false
	return nil
}

func (s *segment) openIndexes(fsys FS, extra string, cfg *LogConfig, fresh, active bool) error {
	oi, err := openIndexFile(fsys, segmentPath(s.dir, s.baseOffset, indexFileSuffix+extra), offsetIndexEntrySize, cfg.SegmentIndexBytes, fresh, active)
	if err != nil {
		return err
	}
	ti, err := openIndexFile(fsys, segmentPath(s.dir, s.baseOffset, timeIndexFileSuffix+extra), timeIndexEntrySize, cfg.SegmentIndexBytes, fresh, active)
	if err != nil {
		oi.close()
		return err
	}
	s.offsetIndex = &offsetIndex{indexFile: oi, baseOffset: s.baseOffset}
	s.timeIndex = &timeIndex{indexFile: ti, baseOffset: s.baseOffset, lastTs: recordbatch.NoTimestamp}
	if _, _, _, err := s.timeIndex.loadLast(); err != nil {
		s.closeIndexes()
		return err
	}
	return nil
}

func (s *segment) closeIndexes() {
	if s.offsetIndex != nil {
		s.offsetIndex.close()
	}
	if s.timeIndex != nil {
		s.timeIndex.close()
	}
}

// indexBatch updates the in-memory trackers and the indexes for a batch
// at pos, as Kafka's LogSegment.append does for each batch.
func (s *segment) indexBatch(h *batchHeader, pos int64, intervalBytes int32) error {
	if pos == 0 {
		s.firstBatchTimestamp = h.MaxTimestamp
	}
	if h.MaxTimestamp > s.maxTimestamp {
		s.maxTimestamp, s.offsetOfMaxTimestamp = h.MaxTimestamp, h.LastOffset()
	}
	if s.bytesSinceLastIndexEntry > int64(intervalBytes) {
		if err := s.offsetIndex.appendEntry(h.LastOffset(), pos); err != nil {
			return err
		}
		if err := s.timeIndex.maybeAppend(s.maxTimestamp, s.offsetOfMaxTimestamp); err != nil {
			return err
		}
		s.bytesSinceLastIndexEntry = 0
	}
	s.bytesSinceLastIndexEntry += h.Size()
	s.nextOffset = h.NextOffset()
	return nil
}

// append writes one validated batch (base offset already set) at the end.
// On failure the segment is as before: the log file is cut back to its
// previous size and index entries added for the batch are dropped.
func (s *segment) append(batch []byte, h *batchHeader, intervalBytes int32) error {
	// An idle partition's file went to the sealed bound
	// (Log.ReleaseIdleActive): an append makes it active again. The cache
	// may have closed it: WriteAt opens it again.
	s.log.reactivate()
	pos := s.size
	saved := s.appendTrackers
	savedOffN, savedTimeN := s.offsetIndex.n, s.timeIndex.n
	savedLastTs := s.timeIndex.lastTs
	_, err := s.log.WriteAt(batch, pos)
	if err == nil {
		err = s.indexBatch(h, pos, intervalBytes)
	}
	if err != nil {
		// Best effort: the bytes past size are never read, and recovery would
		// cut them anyway, but a clean file is nicer.
		_ = s.log.Truncate(pos)
		offIx, timeIx := s.offsetIndex, s.timeIndex
		s.appendTrackers = saved
		_ = offIx.truncateEntries(savedOffN)
		_ = timeIx.truncateEntries(savedTimeN)
		timeIx.lastTs = savedLastTs
		return err
	}
	s.size = pos + int64(len(batch))
	if s.tail == nil {
		s.tail = new(tailBatches)
	}
	s.tail.add(h, pos, int64(len(batch)))
	return nil
}

// readHeader reads the batch header at pos, which must lie below size.
func (s *segment) readHeader(pos int64, buf *[recordbatch.HeaderSize]byte) (batchHeader, error) {
	if pos+recordbatch.HeaderSize > s.size {
		return batchHeader{}, fmt.Errorf("segment %d: batch header at %d runs past the end %d", s.baseOffset, pos, s.size)
	}
	if _, err := s.log.ReadAt(buf[:], pos); err != nil {
		return batchHeader{}, err
	}
	h := parseBatchHeader(buf[:])
	if h.BatchLength < recordbatch.MinBatchLength || pos+h.Size() > s.size {
		return batchHeader{}, fmt.Errorf("segment %d: batch at %d has invalid length %d", s.baseOffset, pos, h.BatchLength)
	}
	return h, nil
}

// findBatch returns the position and header of the first batch whose last
// offset is >= target, scanning from the offset index's entry at or below
// target: at most one index interval of headers. found is false if no batch
// of this segment reaches target.
func (s *segment) findBatch(target int64) (pos int64, h batchHeader, found bool, err error) {
	_, pos, err = s.offsetIndex.lookup(target)
	if err != nil {
		return 0, h, false, err
	}
	var buf [recordbatch.HeaderSize]byte
	for pos < s.size {
		h, err = s.readHeader(pos, &buf)
		if err != nil {
			return 0, h, false, err
		}
		if h.LastOffset() >= target {
			return pos, h, true, nil
		}
		pos += h.Size()
	}
	return pos, h, false, nil
}

// boundaryAtOrBefore returns the largest batch start position p with
// from <= p <= limit, walking headers from the offset-index entry at or
// below limit; it returns from if no later batch starts before limit.
// When p < size, h is the header of the batch at p if the walk read it
// (hasHeader), sparing the caller a read of it.
func (s *segment) boundaryAtOrBefore(from, limit int64) (p int64, h batchHeader, hasHeader bool, err error) {
	if limit >= s.size {
		return s.size, h, false, nil
	}
	_, pos, err := s.offsetIndex.lookupPosition(limit)
	if err != nil {
		return 0, h, false, err
	}
	pos = max(pos, from)
	var buf [recordbatch.HeaderSize]byte
	for pos < s.size {
		h, err = s.readHeader(pos, &buf)
		if err != nil {
			return 0, h, false, err
		}
		if pos+h.Size() > limit {
			return pos, h, true, nil
		}
		pos += h.Size()
	}
	return pos, h, false, nil
}

// readBatch reads the whole batch at pos.
func (s *segment) readBatch(pos int64, h *batchHeader) ([]byte, error) {
	b := make([]byte, h.Size())
	if _, err := s.log.ReadAt(b, pos); err != nil {
		return nil, err
	}
	return b, nil
}

// flush fsyncs the log file and the indexes.
func (s *segment) flush() error {
	if err := s.log.Sync(); err != nil {
		return err
	}
	if err := s.offsetIndex.sync(); err != nil {
		return err
	}
	if err := s.txnIndex.sync(); err != nil {
		return err
	}
	return s.timeIndex.sync()
}

// deactivate makes the segment inactive, as Kafka's
// onBecomeInactiveSegment: the final time-index entry, so that the last
// entry holds the segment's largest timestamp, and both indexes trimmed
// and unmapped (index.go). Nothing is fsynced: a roll leaves that to the
// Log's asynchronous flush (syncSealed, or sealedSync without the lock).
func (s *segment) deactivate() error {
	s.tail = nil // fetches at the log end read the next segment now
	if err := s.trimPreallocated(); err != nil {
		return err
	}
	if s.timeIndex.active {
		if err := s.timeIndex.maybeAppend(s.maxTimestamp, s.offsetOfMaxTimestamp); err != nil {
			return err
		}
	}
	if err := s.offsetIndex.trim(); err != nil {
		return err
	}
	return s.timeIndex.trim()
}

// seal deactivates the segment and fsyncs all its files (the cleaner's
// output, a segment recovery rebuilt).
func (s *segment) seal() error {
	if err := s.deactivate(); err != nil {
		return err
	}
	return s.syncSealed()
}

// syncSealed fsyncs the files of a deactivated segment: the log, the
// transaction index and both indexes.
func (s *segment) syncSealed() error {
	if err := s.log.Sync(); err != nil {
		return err
	}
	if err := s.txnIndex.sync(); err != nil {
		return err
	}
	if err := s.offsetIndex.syncFile(); err != nil {
		return err
	}
	return s.timeIndex.syncFile()
}

// sealedSync is what the Log's asynchronous flush needs to fsync a
// deactivated segment, captured under the Log's lock so that the fsyncs,
// made without it, read no state the lock guards.
type sealedSync struct {
	seg     *segment
	log     File
	txnPath string // "" if the transaction index has nothing to fsync
	indexes [2]*indexFile
}

// sealedSyncLocked captures the segment's files for a sealedSync.
func (s *segment) sealedSyncLocked() sealedSync {
	ss := sealedSync{seg: s, log: s.log, indexes: [2]*indexFile{s.offsetIndex.indexFile, s.timeIndex.indexFile}}
	if s.txnIndex != nil && s.txnIndex.dirty {
		ss.txnPath = s.txnIndex.path
	}
	return ss
}

// sync fsyncs the files. The transaction index stays marked dirty (its
// flag is the lock's); a later syncSealed merely fsyncs it again.
func (ss *sealedSync) sync(fsys FS) error {
	if err := ss.log.Sync(); err != nil {
		return err
	}
	if ss.txnPath != "" {
		if err := syncPath(fsys, ss.txnPath); err != nil {
			return err
		}
	}
	for _, ix := range ss.indexes {
		if err := ix.syncFile(); err != nil {
			return err
		}
	}
	return nil
}

// syncPath fsyncs the file at path through a descriptor opened for it.
func syncPath(fsys FS, path string) error {
	f, err := fsys.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// closeFiles closes every file of the segment.
func (s *segment) closeFiles() error {
	err := s.log.Close()
	s.closeIndexes()
	s.txnIndex.close()
	return err
}

// renameForDeletion renames the segment's files to *.deleted (Kafka's
// convention) so that a restart finishes the deletion.
func (s *segment) renameForDeletion(fsys FS) error {
	// Readers may still open it (file.delete.delay.ms), under its old name
	// no more.
	_ = s.log.keepOpen() // else a reader's open fails: a storage error, not wrong data
	return renameSegmentFiles(fsys, s.dir, s.baseOffset, "", deletedFileSuffix)
}

// renameSegmentFiles renames a segment's three files from names ending in
// from to names ending in to (the suffixes follow .log/.index/.timeindex),
// log file first. A file already gone is skipped.
func renameSegmentFiles(fsys FS, dir string, baseOffset int64, from, to string) error {
	for _, suffix := range segmentFileSuffixes {
		p := segmentPath(dir, baseOffset, suffix)
		if err := fsys.Rename(p+from, p+to); err != nil && !os.IsNotExist(err) {
			return err
		}
	}
	return nil
}

// removeSegmentFiles removes a segment's three files named with suffix
// extra, ignoring files already gone.
func removeSegmentFiles(fsys FS, dir string, baseOffset int64, extra string) error {
	var firstErr error
	for _, suffix := range segmentFileSuffixes {
		if err := fsys.Remove(segmentPath(dir, baseOffset, suffix) + extra); err != nil && !os.IsNotExist(err) && firstErr == nil {
			firstErr = err
		}
	}
	return firstErr
}

// removeDeletedFiles closes the files and removes the *.deleted names.
func (s *segment) removeDeletedFiles(fsys FS) error {
	s.closeFiles()
	return removeSegmentFiles(fsys, s.dir, s.baseOffset, deletedFileSuffix)
}
