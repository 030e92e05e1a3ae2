package storage

import (
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/strait/strait/recordbatch"
)

// Open loads (or creates) the partition log in dir, as Kafka's LogLoader:
//
//   - a swap of a cleaned segment cut short by a crash is completed or
//     undone (see swap.go);
//   - leftovers are removed: *.deleted files (a deletion interrupted by a
//     crash), checkpoint temporaries, index files without a log file;
//   - after a clean shutdown (Options.CleanShutdown: the log directory's
//     .kafka_cleanshutdown marker covered the log; or the log's own marker
//     in its directory, written by Close or by Strait versions before the
//     directory marker) segment files are trusted, with cheap sanity
//     checks: index files present, whole entries, the last offset-index
//     entry pointing at the batch it names, and the log's tail after it
//     walking cleanly;
//   - otherwise every segment from the one holding the recovery point on is
//     re-validated batch by batch (length bounds, magic, CRC32C, increasing
//     offsets): the first bad byte and everything after it are cut, later
//     segments are deleted, and indexes are rebuilt from the log; in a log
//     that is not compacted, a segment ending before the next one starts
//     (a power loss took its unsynced tail but kept the next one's
//     directory entry) has its later segments deleted the same way;
//   - a segment failing a sanity check is recovered the same way; one whose
//     files cannot be opened or read (EMFILE, EACCES, EIO) fails Open with
//     that error and is left untouched: that says nothing of its content;
//   - the leader epoch cache (leader_epoch.go) is re-derived from the
//     batches of the segments recovered from the recovery point on (their
//     partition leader epochs, as Kafka's LogSegment.recover), since its
//     file is written only when the recovery point moves; it then loses
//     the entries at or past the log end and starts at the log start
//     offset;
//   - the high watermark starts at its checkpoint (high_watermark.go).
//
// The log's own marker is removed (durably) before Open returns: from then
// on the log is open for writing and only Close writes it again. The
// directory's marker is its owner's to remove, before Open.
func Open(dir string, cfg LogConfig, opts Options) (*Log, error) {
	l := &Log{dir: dir, fs: opts.FS, logger: opts.Logger, now: opts.Now, hwCheckpointed: -1, rpCheckpointed: -1, cache: opts.FileCache}
	if l.fs == nil {
		l.fs = OSFS{}
	}
	if l.logger == nil {
		l.logger = slog.Default()
	}
	if l.now == nil {
		l.now = time.Now
	}
	if opts.Checkpoints != nil {
		topic, partition, ok := ParsePartitionDirName(filepath.Base(dir))
		if !ok {
			return nil, storageErr("open "+dir, fmt.Errorf("not a partition directory name: %q", filepath.Base(dir)))
		}
		l.cp, l.tp = opts.Checkpoints, TopicPartition{topic, partition}
	}
	l.SetConfig(cfg)
	if err := l.load(opts.CleanShutdown); err != nil {
		for _, s := range l.segments {
			s.closeFiles()
		}
		return nil, storageErr("open "+dir, err)
	}
	if l.cp != nil {
		l.cp.register(l.tp, l)
	}
	l.adoptSegmentFiles()
	return l, nil
}

// load reads the log's files; dirClean is Options.CleanShutdown.
func (l *Log) load(dirClean bool) error {
	cfg := l.config()
	now := l.now()
	if err := l.fs.MkdirAll(l.dir, 0o755); err != nil {
		return err
	}
	bases, ownMarker, err := l.scanDir()
	if err != nil {
		return err
	}
	clean := dirClean || ownMarker
	var recoveryPoint, startCheckpoint int64
	var hasRecoveryPoint bool
	if l.cp != nil {
		recoveryPoint, hasRecoveryPoint = l.cp.loaded(l.tp, recoveryPointKind)
		startCheckpoint, _ = l.cp.loaded(l.tp, logStartKind)
	} else {
		recoveryPoint, hasRecoveryPoint, err = readCheckpoint(l.fs, l.dir, recoveryPointFile)
		if err != nil {
			l.logger.Warn("ignoring recovery point checkpoint", "dir", l.dir, "err", err)
		}
		startCheckpoint, _, err = readCheckpoint(l.fs, l.dir, logStartOffsetFile)
		if err != nil {
			l.logger.Warn("ignoring log start offset checkpoint", "dir", l.dir, "err", err)
		}
	}
	l.cleanerCheckpoint.Store(-1)
	if off, ok, err := readCheckpoint(l.fs, l.dir, cleanerOffsetFile); err != nil {
		l.logger.Warn("ignoring cleaner offset checkpoint", "dir", l.dir, "err", err)
	} else if ok {
		l.cleanerCheckpoint.Store(off)
	}

	loadedEpochs, err := l.openLeaderEpochs()
	if err != nil {
		return err
	}
	recoverFrom := len(bases)
	if !clean {
		recoverFrom = 0
		for i, b := range bases {
			if b <= recoveryPoint {
				recoverFrom = i
			}
		}
	}
	recovered := 0
	for i, base := range bases {
		last := i == len(bases)-1
		var seg *segment
		if i < recoverFrom {
			seg, err = l.loadSegment(base, last, now)
			if err != nil && fileAccessError(err) {
				// The files could not be opened or read (EMFILE, EACCES,
				// EIO): nothing is known about their content, so recovering
				// (and maybe truncating) the segment could throw good data
				// away. The load fails instead and the files stay as they are.
				return fmt.Errorf("storage: opening segment %d in %s: %w", base, l.dir, err)
			}
			if err != nil {
				l.logger.Warn("segment failed sanity checks; recovering it", "dir", l.dir, "base_offset", base, "err", err)
			}
		}
		if seg == nil {
			if i == recoverFrom {
				l.recoverEpochsFrom(base)
			}
			var truncated bool
			limit := int64(math.MaxInt64)
			if !last {
				limit = bases[i+1]
			}
			seg, truncated, err = l.recoverSegment(base, limit, now)
			if err != nil {
				return err
			}
			recovered++
			if end := max(seg.nextOffset, seg.baseOffset); !last && !truncated && !cfg.Compact && end < bases[i+1] {
				// A hole before the next segment: this one lost an
				// unsynced tail to a power loss while the next one's
				// directory entry was made durable (any fsync of the
				// directory does that). Segments of a log that is never
				// compacted follow each other without gaps, so the later
				// ones go as after a cut tail; a replica fetches them again
				// rather than serving a log with offsets missing.
				l.logger.Warn("recovery found a segment ending before the next one starts; dropping the later segments",
					"dir", l.dir, "base_offset", base, "next_offset", end, "next_segment", bases[i+1])
				truncated = true
			}
			if !last && truncated {
				l.segments = append(l.segments, seg)
				l.dropSegmentFiles(bases[i+1:])
				break
			}
			if !last {
				if err := seg.seal(); err != nil {
					return err
				}
			}
		}
		l.segments = append(l.segments, seg)
	}
	if len(l.segments) == 0 {
		seg, err := openSegmentFiles(l.fs, l.dir, startCheckpoint, cfg, segmentCreate, true, now)
		if err != nil {
			return err
		}
		l.segments = append(l.segments, seg)
	}

	act := l.active()
	leo := max(act.nextOffset, act.baseOffset)
	l.logEndOffset.Store(leo)
	lso := max(startCheckpoint, l.segments[0].baseOffset)
	if lso > leo {
		l.logger.Warn("log start offset checkpoint is past the log end; clamping", "dir", l.dir, "checkpoint", lso, "log_end_offset", leo)
		lso = leo
	}
	l.logStartOffset.Store(lso)
	l.highWatermark.Store(l.loadHighWatermark(lso, leo))
	l.finishLeaderEpochsLocked(loadedEpochs)
	// Transaction indexes (txn_index.go): entries past the log end went
	// with a cut tail; a corrupt index is rebuilt by replaying the whole
	// log, as if no producer snapshot and no clean shutdown were there.
	txnIndexesIntact, err := l.loadTxnIndexesLocked()
	if err != nil {
		return fmt.Errorf("transaction index: %w", err)
	}
	if !txnIndexesIntact {
		if err := l.removeProducerSnapshots(); err != nil {
			return fmt.Errorf("producer state: %w", err)
		}
	}
	if err := l.truncateTxnIndexesLocked(leo); err != nil {
		return err
	}
	if err := l.loadProducerState(clean && txnIndexesIntact); err != nil {
		return fmt.Errorf("producer state: %w", err)
	}
	l.updateFirstUnstableLocked()
	if len(bases) == 0 && !hasRecoveryPoint {
		// A new log: its one segment is empty, nothing needs an fsync, and
		// an absent checkpoint already says "recover everything", as
		// safe as one at leo (a new partition would otherwise cost three
		// fsyncs here, which 10,000 partitions created at once notice).
		l.recoveryPoint.Store(leo)
	} else {
		l.recoveryPoint.Store(-1) // rewrite the checkpoint: recovery may have cut below it
		if recovered > 0 || !clean {
			for _, s := range l.segments {
				if err := s.flush(); err != nil {
					return err
				}
			}
		}
		if clean && recovered == 0 {
			// The epochs are the file's, less what load cut at the log
			// end (a leadership that wrote nothing) and start, which
			// loading the file again cuts the same way: the recovery
			// point may move to the log end without rewriting the file
			// (a new file per partition at every start, which ext4 makes
			// slow right after the last run replaced as many). The cache
			// stays dirty, so the file is written before the recovery
			// point moves past the log end.
			l.storeRecoveryPointLocked(leo, syncAll)
		} else {
			l.setRecoveryPointLocked(leo)
		}
	}
	l.lastFlush = now
	if ownMarker {
		if err := RemoveCleanShutdown(l.fs, l.dir); err != nil {
			return err
		}
	}
	l.recoveredSegments = recovered
	l.logger.Debug("opened log", "dir", l.dir, "segments", len(l.segments), "log_start_offset", lso,
		"log_end_offset", leo, "clean_shutdown", clean, "recovered_segments", recovered)
	return nil
}

// scanDir removes leftovers and returns the base offsets of the segments
// and whether the log's own clean-shutdown marker is there.
func (l *Log) scanDir() (bases []int64, marker bool, err error) {
	if err := l.completeInterruptedSwap(); err != nil {
		return nil, false, err
	}
	entries, err := l.fs.ReadDir(l.dir)
	if err != nil {
		return nil, false, err
	}
	logs := map[int64]bool{}
	var indexes []string
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() {
			continue
		}
		switch {
		case name == cleanShutdownFile:
			marker = true
		case strings.HasSuffix(name, deletedFileSuffix), strings.HasSuffix(name, checkpointTmp):
			if err := l.fs.Remove(filepath.Join(l.dir, name)); err != nil && !os.IsNotExist(err) {
				return nil, false, err
			}
		case strings.HasSuffix(name, logFileSuffix):
			base, ok := parseBaseOffset(name, logFileSuffix)
			if !ok {
				l.logger.Warn("ignoring unexpected file", "dir", l.dir, "file", name)
				continue
			}
			logs[base] = true
		case strings.HasSuffix(name, indexFileSuffix), strings.HasSuffix(name, timeIndexFileSuffix),
			strings.HasSuffix(name, txnIndexFileSuffix):
			indexes = append(indexes, name)
		}
	}
	for _, name := range indexes {
		suffix := indexFileSuffix
		switch {
		case strings.HasSuffix(name, timeIndexFileSuffix):
			suffix = timeIndexFileSuffix
		case strings.HasSuffix(name, txnIndexFileSuffix):
			suffix = txnIndexFileSuffix
		}
		if base, ok := parseBaseOffset(name, suffix); ok && !logs[base] {
			l.logger.Info("removing index without a log file", "dir", l.dir, "file", name)
			if err := l.fs.Remove(filepath.Join(l.dir, name)); err != nil && !os.IsNotExist(err) {
				return nil, false, err
			}
		}
	}
	bases = make([]int64, 0, len(logs))
	for b := range logs {
		bases = append(bases, b)
	}
	sort.Slice(bases, func(i, j int) bool { return bases[i] < bases[j] })
	return bases, marker, nil
}

func parseBaseOffset(name, suffix string) (int64, bool) {
	digits := strings.TrimSuffix(name, suffix)
	if len(digits) != 20 {
		return 0, false
	}
	v, err := strconv.ParseInt(digits, 10, 64)
	return v, err == nil && v >= 0
}

// dropSegmentFiles deletes the files of segments cut off by recovery.
func (l *Log) dropSegmentFiles(bases []int64) {
	for _, b := range bases {
		for _, suffix := range segmentFileSuffixes {
			p := segmentPath(l.dir, b, suffix)
			if fi, err := l.fs.Stat(p); err == nil && suffix == logFileSuffix {
				l.logger.Warn("recovery deleted a segment after corruption", "dir", l.dir, "base_offset", b, "bytes", fi.Size())
			}
			if err := l.fs.Remove(p); err != nil && !os.IsNotExist(err) {
				l.logger.Error("cannot delete segment file", "file", p, "err", err)
			}
		}
	}
}

// loadSegment opens a segment trusting its files after sanity checks; an
// error means the caller must recover the segment instead, unless it is a
// fileAccessError, which stops the load.
func (l *Log) loadSegment(base int64, active bool, now time.Time) (*segment, error) {
	cfg := l.config()
	for _, suffix := range []string{indexFileSuffix, timeIndexFileSuffix} {
		ok, err := fileExists(l.fs, segmentPath(l.dir, base, suffix))
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, fmt.Errorf("missing %s file", suffix)
		}
	}
	seg, err := openSegmentFiles(l.fs, l.dir, base, cfg, segmentLoad, active, now)
	if err != nil {
		return nil, err
	}
	if err := l.checkSegment(seg, cfg); err != nil {
		seg.closeFiles()
		return nil, err
	}
	return seg, nil
}

// checkSegment validates a loaded segment's indexes against its log and
// fills in the in-memory trackers: it walks the batch headers after the
// last offset-index entry (at most one index interval when the index is
// whole) and checks that the index would not have had another entry there.
func (l *Log) checkSegment(seg *segment, cfg *LogConfig) error {
	var buf [recordbatch.HeaderSize]byte
	lastOffset, pos, hasEntry, err := seg.offsetIndex.last()
	if err != nil {
		return err
	}
	var bytesSince int64
	expectNext := seg.baseOffset
	if hasEntry {
		h, err := seg.readHeader(pos, &buf)
		if err != nil {
			return fmt.Errorf("last offset index entry: %w", err)
		}
		if h.Magic != recordbatch.MagicV2 || h.LastOffset() != lastOffset {
			return fmt.Errorf("last offset index entry (%d at %d) does not match the batch there (last offset %d)", lastOffset, pos, h.LastOffset())
		}
		seg.noteBatch(&h)
		bytesSince, expectNext = h.Size(), h.NextOffset()
		pos += h.Size()
	}
	for pos < seg.size {
		h, err := seg.readHeader(pos, &buf)
		if err != nil {
			return err
		}
		if h.Magic != recordbatch.MagicV2 || h.BaseOffset < expectNext || h.LastOffsetDelta < 0 {
			return fmt.Errorf("malformed batch header at position %d", pos)
		}
		if bytesSince > int64(cfg.IndexIntervalBytes) {
			return fmt.Errorf("offset index lacks an entry for the batch at position %d", pos)
		}
		seg.noteBatch(&h)
		bytesSince += h.Size()
		expectNext = h.NextOffset()
		pos += h.Size()
	}
	seg.nextOffset = max(expectNext, seg.nextOffset)
	seg.bytesSinceLastIndexEntry = bytesSince

	ts, tsOffset, hasTs, err := seg.timeIndex.loadLast()
	if err != nil {
		return err
	}
	switch {
	case hasTs && (tsOffset < seg.baseOffset || tsOffset >= seg.nextOffset):
		return fmt.Errorf("last time index entry offset %d outside the segment [%d, %d)", tsOffset, seg.baseOffset, seg.nextOffset)
	case !hasTs && hasEntry:
		return errors.New("empty time index beside a non-empty offset index")
	case hasTs && ts < seg.maxTimestamp:
		// Close and roll append the segment's largest timestamp last, so the
		// index lost entries.
		return fmt.Errorf("last time index entry %d is below the segment's timestamp %d", ts, seg.maxTimestamp)
	case hasTs:
		seg.maxTimestamp, seg.offsetOfMaxTimestamp = ts, tsOffset
	}
	if seg.size > 0 {
		h, err := seg.readHeader(0, &buf)
		if err != nil {
			return err
		}
		seg.firstBatchTimestamp = h.MaxTimestamp
	}
	return nil
}

// noteBatch updates the max-timestamp tracker and next offset for a batch
// seen while loading.
func (s *segment) noteBatch(h *batchHeader) {
	if h.MaxTimestamp > s.maxTimestamp {
		s.maxTimestamp, s.offsetOfMaxTimestamp = h.MaxTimestamp, h.LastOffset()
	}
	s.nextOffset = h.NextOffset()
}

// recoverSegment re-validates a segment's log from its start, cuts it at
// the first invalid byte and rebuilds both indexes. Its batches must end
// below limit, the next segment's base offset (the base offset is outside
// the CRC, so a flipped bit there passes it and would make offsets go
// back). Each batch kept gives the leader epoch cache its partition leader
// epoch (recoverBatchEpoch). The segment comes back active (indexes
// mapped); the caller seals it if it is not the last.
func (l *Log) recoverSegment(base, limit int64, now time.Time) (*segment, bool, error) {
	cfg := l.config()
	seg, err := openSegmentFiles(l.fs, l.dir, base, cfg, segmentRebuild, true, now)
	if err != nil {
		return nil, false, err
	}
	fileSize := seg.size
	seg.size = 0
	var hbuf [recordbatch.HeaderSize]byte
	crcBuf := make([]byte, 64<<10)
	var pos int64
	var problem string
	for pos < fileSize {
		problem = validateBatchOnDisk(seg, pos, fileSize, &hbuf, crcBuf)
		if problem != "" {
			break
		}
		h := parseBatchHeader(hbuf[:])
		if h.LastOffset() >= limit {
			problem = fmt.Sprintf("offsets [%d, %d] reach the next segment's base %d", h.BaseOffset, h.LastOffset(), limit)
			break
		}
		if err := seg.indexBatch(&h, pos, cfg.IndexIntervalBytes); err != nil {
			seg.closeFiles()
			return nil, false, err
		}
		l.epochs.recoverBatchEpoch(h.LeaderEpoch, h.BaseOffset)
		pos += h.Size()
		seg.size = pos
	}
	truncated := pos < fileSize
	if truncated {
		l.logger.Warn("recovery truncated a corrupt segment tail",
			"dir", l.dir, "base_offset", base, "position", pos, "bytes_dropped", fileSize-pos,
			"next_offset", seg.nextOffset, "reason", problem)
		if err := seg.log.Truncate(pos); err != nil {
			seg.closeFiles()
			return nil, false, err
		}
	}
	return seg, truncated, nil
}

// validateBatchOnDisk checks the batch at pos of a segment being recovered,
// leaving its header in hbuf; it returns what is wrong, or "".
func validateBatchOnDisk(seg *segment, pos, fileSize int64, hbuf *[recordbatch.HeaderSize]byte, crcBuf []byte) string {
	if fileSize-pos < recordbatch.HeaderSize {
		return fmt.Sprintf("%d trailing bytes, less than a batch header", fileSize-pos)
	}
	if _, err := seg.log.ReadAt(hbuf[:], pos); err != nil {
		return "read error: " + err.Error()
	}
	h := parseBatchHeader(hbuf[:])
	switch {
	case h.BatchLength < recordbatch.MinBatchLength:
		return fmt.Sprintf("batch length %d below the minimum", h.BatchLength)
	case pos+h.Size() > fileSize:
		return fmt.Sprintf("batch length %d runs past the end of the file", h.BatchLength)
	case h.Magic != recordbatch.MagicV2:
		return fmt.Sprintf("magic %d", h.Magic)
	case h.BaseOffset < seg.nextOffset:
		return fmt.Sprintf("base offset %d below the expected %d", h.BaseOffset, seg.nextOffset)
	case h.LastOffsetDelta < 0 || h.LastOffset()-seg.baseOffset > math.MaxInt32:
		return fmt.Sprintf("invalid offset range [%d, %d]", h.BaseOffset, h.LastOffset())
	}
	crc := uint32(0)
	for off := pos + recordbatch.PosAttributes; off < pos+h.Size(); {
		n := min(int64(len(crcBuf)), pos+h.Size()-off)
		if _, err := seg.log.ReadAt(crcBuf[:n], off); err != nil {
			return "read error: " + err.Error()
		}
		crc = crc32.Update(crc, recordbatch.CRCTable, crcBuf[:n])
		off += n
	}
	if crc != h.CRC {
		return fmt.Sprintf("crc mismatch (stored %d, computed %d) for batch at offset %d", h.CRC, crc, h.BaseOffset)
	}
	return ""
}

// fileAccessError reports whether err is a failure to open, stat or read a
// file (an *fs.PathError from the file system: out of descriptors, no
// permission, an I/O error) rather than a finding about its content, which
// the sanity checks report as their own errors.
func fileAccessError(err error) bool {
	var pe *fs.PathError
	return errors.As(err, &pe)
}
