package storage

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"slices"
	"time"

	"github.com/strait/strait/recordbatch"
	"github.com/strait/strait/storage/compress"
)

// Cleaning one compacted log, as Kafka's Cleaner (LogCleaner.scala):
//
//   - the dirty section runs from the first dirty offset (the
//     cleaner-offset-checkpoint, else the log start offset) to the first
//     uncleanable offset: the base of the segment holding the smallest of
//     the last stable offset, the active segment's base, and the first dirty segment whose largest timestamp is within
//     min.compaction.lag.ms of now;
//   - an offset map (key -> latest offset) is built over the dirty section,
//     as far as its memory allows; the map's latest offset + 1 is where this
//     cleaning ends and the next begins;
//   - every sealed segment below that end, clean or dirty, is rewritten in
//     groups (each at most segment.bytes and segment.index.bytes of input,
//     with offsets fitting one index) into one new segment per group,
//     keeping a record if it is past the map, or it is the latest of its key
//     and either has a value or is a tombstone whose batch's delete horizon
//     (KIP-534, set to now + delete.retention.ms the first time a cleaning
//     keeps it) has not passed; records without a key are dropped;
//   - a batch keeping all its records, and needing no delete horizon, is
//     copied byte for byte; otherwise it is rewritten (its records streamed
//     from the decompressor into its codec's compressor, see
//     cleanrecords.go) with its base offset, last offset delta
//     and producer fields; a batch keeping no record is dropped, except the
//     last batch of the round and the last data batch of a producer still
//     active (Kafka keeps those as an empty header for the producer's
//     sequence and epoch);
//   - each new segment is swapped in for its group (see swap.go) and the
//     checkpoint moves to the end offset.
//
// Transactions: aborted records are dropped, markers kept, the
// transaction index carried over (see txn_clean.go).
//
// Locking: the partition lock is held only to take a snapshot of the
// segment list and to swap a cleaned segment in. Sealed segments never
// change, so reading them, building the map and writing the .cleaned files
// (fsync included) happen without it; appends and fetches go on meanwhile.

// cleanCandidate is a compacted log's cleanable range (Kafka's LogToClean).
type cleanCandidate struct {
	log *Log

	firstDirtyOffset       int64
	firstUncleanableOffset int64 // a segment base offset
	cleanBytes             int64 // bytes of the segments below the first dirty offset
	cleanableBytes         int64
	needCompactionNow      bool // max.compaction.lag.ms has passed for dirty data
	forceCheckpoint        bool // the checkpoint was invalid and is reset

	// The snapshot the range was computed on.
	segments   []*segment
	activeSize int64
	cfg        LogConfig
	// aborted are the log's aborted transactions, read when cleaning starts.
	aborted abortedSet
}

func (c *cleanCandidate) ratio() float64 {
	total := c.cleanBytes + c.cleanableBytes
	if total == 0 {
		return 0
	}
	return float64(c.cleanableBytes) / float64(total)
}

// cleanable is Kafka's filter in grabFilthiestCompactedLog.
func (c *cleanCandidate) cleanable() bool {
	return c.cleanBytes+c.cleanableBytes > 0 &&
		((c.needCompactionNow && c.cleanableBytes > 0) || c.ratio() > c.cfg.MinCleanableDirtyRatio)
}

// segmentsIn returns the segments Kafka's LogSegments.values(from, to)
// returns: from the one holding from (or the first) to those based below to.
func segmentsIn(segs []*segment, from, to int64) []*segment {
	if from >= to {
		return nil
	}
	i, _ := slices.BinarySearchFunc(segs, from, func(s *segment, o int64) int {
		switch {
		case s.baseOffset < o:
			return -1
		case s.baseOffset > o:
			return 1
		}
		return 0
	})
	if i == len(segs) || segs[i].baseOffset > from {
		i = max(i-1, 0)
	}
	j := i
	for j < len(segs) && segs[j].baseOffset < to {
		j++
	}
	return segs[i:j]
}

// cleanCandidate computes the log's cleanable range at nowMs, as Kafka's
// LogCleanerManager.cleanableOffsets, calculateCleanableBytes and
// maxCompactionDelay; ok is false if the log is closed.
func (l *Log) cleanCandidate(nowMs int64) (c cleanCandidate, ok bool) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed.Load() {
		return c, false
	}
	c = cleanCandidate{log: l, segments: slices.Clone(l.segments), activeSize: l.active().size, cfg: *l.config()}
	segs := c.segments
	active := segs[len(segs)-1]
	nonActive := segs[:len(segs)-1]
	lso, leo := l.logStartOffset.Load(), l.logEndOffset.Load()

	firstDirty := lso
	if cp := l.cleanerCheckpoint.Load(); cp >= 0 {
		firstDirty = cp
		switch {
		case cp < lso:
			if !c.cfg.Delete {
				l.logger.Warn("resetting the first dirty offset to the log start offset: the checkpoint is below it",
					"dir", l.dir, "checkpoint", cp, "log_start_offset", lso)
			}
			firstDirty, c.forceCheckpoint = lso, true
		case cp > leo:
			l.logger.Warn("resetting the first dirty offset to the log start offset: the checkpoint is past the log end",
				"dir", l.dir, "checkpoint", cp, "log_end_offset", leo)
			firstDirty, c.forceCheckpoint = lso, true
		}
	}

	uncleanable := min(l.LastStableOffset(), active.baseOffset)
	dirtyNonActive := segmentsIn(nonActive, firstDirty, active.baseOffset)
	if lag := max(c.cfg.MinCompactionLagMs, 0); lag > 0 {
		for _, s := range dirtyNonActive {
			if s.maxTimestamp > nowMs-lag {
				uncleanable = min(uncleanable, s.baseOffset)
				break
			}
		}
	}
	uncleanable = max(firstDirty, uncleanable)

	// The first uncleanable offset is the base of the segment holding it.
	c.firstUncleanableOffset = active.baseOffset
	if ss := segmentsIn(nonActive, uncleanable, active.baseOffset); len(ss) > 0 {
		c.firstUncleanableOffset = ss[0].baseOffset
	}
	for _, s := range segmentsIn(segs, min(firstDirty, c.firstUncleanableOffset), c.firstUncleanableOffset) {
		c.cleanableBytes += s.size
	}
	for _, s := range segmentsIn(segs, -1, firstDirty) {
		c.cleanBytes += s.size
	}
	c.firstDirtyOffset = firstDirty

	earliest := int64(math.MaxInt64)
	for _, s := range dirtyNonActive {
		if s.firstBatchTimestamp > 0 {
			earliest = min(earliest, s.firstBatchTimestamp)
		}
	}
	c.needCompactionNow = earliest < nowMs-max(c.cfg.MaxCompactionLagMs, 0)
	return c, true
}

// cleanStats counts one cleaning's work (Kafka's CleanerStats).
type cleanStats struct {
	mapBytesRead, mapRecordsRead   int64
	bytesRead, bytesWritten        int64
	recordsRead, recordsWritten    int64
	invalidRecords                 int64 // records without a key, dropped
	segmentsReplaced, segmentsMade int
}

// clean cleans the candidate's log (Kafka's Cleaner.doClean) and returns
// the end offset: the new first dirty offset.
func (w *cleanerWorker) clean(c *cleanCandidate, now time.Time) (int64, error) {
	l := c.log
	started := time.Now()
	w.stats = cleanStats{}
	aborted, err := l.abortedSince(l.LogStartOffset())
	if err != nil {
		return 0, err
	}
	c.aborted = aborted
	m := w.offsetMap()
	if err := w.buildOffsetMap(c, m); err != nil {
		return 0, err
	}
	// Never behind the first dirty offset, so the checkpoint cannot move back.
	end := max(m.latestOffset()+1, c.firstDirtyOffset)

	producers := l.lastDataOffsetsOfActiveProducers()
	nonActive := c.segments[:len(c.segments)-1]
	for _, group := range groupSegmentsBySize(segmentsIn(nonActive, 0, end), &c.cfg, c.firstUncleanableOffset) {
		if err := w.cleanSegments(c, group, now.UnixMilli(), producers); err != nil {
			return 0, err
		}
	}
	l.logger.Info("cleaned log", "dir", l.dir, "first_dirty_offset", c.firstDirtyOffset, "end_offset", end,
		"bytes_read", w.stats.bytesRead, "bytes_written", w.stats.bytesWritten,
		"records_read", w.stats.recordsRead, "records_written", w.stats.recordsWritten,
		"segments_replaced", w.stats.segmentsReplaced, "segments_written", w.stats.segmentsMade,
		"map_entries", m.size(), "elapsed", time.Since(started).Round(time.Millisecond))
	if w.stats.invalidRecords > 0 {
		l.logger.Warn("found records without a key during compaction", "dir", l.dir, "records", w.stats.invalidRecords)
	}
	return end, nil
}

// buildOffsetMap fills m with the latest offset of every key in the dirty
// section, stopping when the map reaches its load factor (Kafka's
// buildOffsetMap and buildOffsetMapForSegment).
func (w *cleanerWorker) buildOffsetMap(c *cleanCandidate, m *offsetMap) error {
	m.clear()
	start, end := c.firstDirtyOffset, c.firstUncleanableOffset
	dirty := segmentsIn(c.segments[:len(c.segments)-1], start, end)
	maxEntries := int(float64(m.slots) * w.cfg.DedupeBufferLoadFactor)
	for i, seg := range dirty {
		nextStart := end
		if i+1 < len(dirty) {
			nextStart = dirty[i+1].baseOffset
		}
		_, from, err := seg.offsetIndex.lookup(start)
		if err != nil {
			return w.readErr(c, seg, err)
		}
		full := false
		err = w.forEachBatch(c, seg, from, seg.size, func(_ int64, h *batchHeader, batch []byte) error {
			w.stats.mapBytesRead += h.Size()
			if !h.IsControl() && !c.aborted.contains(h) {
				err := w.stream.walk(batch, h, c.cfg.MaxDecompressedBatchBytes, nil, 0, func(r *cleanRecord) (bool, error) {
					w.stats.mapRecordsRead++
					if !r.hasKey || r.offset < start {
						return false, nil
					}
					if m.size() >= maxEntries || !m.putHash(&r.keyHash, r.offset) {
						full = true
						return false, errStopIteration
					}
					return false, nil
				})
				if err == errStopIteration {
					return err
				}
				if err != nil {
					return fmt.Errorf("segment %d: batch at offset %d: %w", seg.baseOffset, h.BaseOffset, err)
				}
			}
			if h.LastOffset() >= start {
				m.updateLatestOffset(h.LastOffset())
			}
			return nil
		})
		if full {
			l := c.log
			l.logger.Debug("offset map is full; cleaning part of the dirty section", "dir", l.dir,
				"segment", seg.baseOffset, "latest_offset", m.latestOffset())
			return nil
		}
		if err != nil {
			return err
		}
		// Offsets in a gap up to the next segment are covered too.
		m.updateLatestOffset(nextStart - 1)
	}
	return nil
}

// lastDataOffsetsOfActiveProducers is Kafka's
// UnifiedLog.lastRecordsOfActiveProducers: for each producer the log's
// producer state still holds (see ExpireProducers), the last offset of its
// last data batch, the batch a cleaning keeps even if empty so that the
// producer's sequence and epoch survive.
func (l *Log) lastDataOffsetsOfActiveProducers() map[int64]int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	out := map[int64]int64{}
	if l.producers == nil {
		return out
	}
	for id, e := range l.producers.producers {
		if off := e.lastDataOffset(); off >= 0 {
			out[id] = off
		}
	}
	return out
}

// groupSegmentsBySize groups segments for rewriting, each group becoming
// one segment, as Kafka's groupSegmentsBySize: at most segment.bytes of log
// and segment.index.bytes of each index per group, and offsets within 2^31
// of the group's base (estimated by the next segment's base offset).
func groupSegmentsBySize(segs []*segment, cfg *LogConfig, firstUncleanable int64) [][]*segment {
	var groups [][]*segment
	for len(segs) > 0 {
		group := segs[:1]
		logSize := segs[0].size
		indexSize := int64(segs[0].offsetIndex.n * offsetIndexEntrySize)
		timeIndexSize := int64(segs[0].timeIndex.n * timeIndexEntrySize)
		segs = segs[1:]
		for len(segs) > 0 {
			next := segs[0]
			lastOffset := firstUncleanable - 1
			if len(segs) > 1 {
				lastOffset = segs[1].baseOffset - 1
			}
			ni, nt := int64(next.offsetIndex.n*offsetIndexEntrySize), int64(next.timeIndex.n*timeIndexEntrySize)
			if logSize+next.size > min(cfg.SegmentBytes, math.MaxInt32) ||
				indexSize+ni > int64(cfg.SegmentIndexBytes) || timeIndexSize+nt > int64(cfg.SegmentIndexBytes) ||
				(next.size > 0 && lastOffset-group[0].baseOffset > math.MaxInt32) {
				break
			}
			group = group[:len(group)+1]
			logSize, indexSize, timeIndexSize = logSize+next.size, indexSize+ni, timeIndexSize+nt
			segs = segs[1:]
		}
		groups = append(groups, group)
	}
	return groups
}

// cleanSegments rewrites a group of segments into one .cleaned segment and
// swaps it in (Kafka's cleanSegments and cleanInto).
func (w *cleanerWorker) cleanSegments(c *cleanCandidate, group []*segment, nowMs int64, producers map[int64]int64) error {
	l := c.log
	var inputBytes int64
	for _, s := range group {
		inputBytes += s.size
	}
	// The new indexes take at most one entry per batch or per index
	// interval of output: size them for that, not for segment.index.bytes,
	// in case index.interval.bytes shrank since the input was written.
	cfg := c.cfg
	entries := inputBytes/max(int64(cfg.IndexIntervalBytes), recordbatch.HeaderSize) + 2
	cfg.SegmentIndexBytes = int32(min(max(int64(cfg.SegmentIndexBytes), entries*timeIndexEntrySize), math.MaxInt32))
	cleaned, err := openSegmentFilesNamed(l.fs, l.dir, group[0].baseOffset, cleanedFileSuffix, &cfg, segmentCreate, true, l.now())
	if err != nil {
		return err
	}
	out := segmentWriter{seg: cleaned, buf: w.writeBuf[:0], flushAt: max(cap(w.writeBuf), 64<<10), interval: cfg.IndexIntervalBytes,
		throttle: w.throttle, stop: w.stop}
	m := w.offsetMap()
	upperBound := c.firstUncleanableOffset
	for _, seg := range group {
		err = w.forEachBatch(c, seg, 0, seg.size, func(_ int64, h *batchHeader, batch []byte) error {
			w.stats.bytesRead += h.Size()
			retainEmpty := h.NextOffset() == upperBound
			if last, ok := producers[h.ProducerID]; ok && h.HasProducerID() && last == h.LastOffset() {
				retainEmpty = true
			}
			if h.IsControl() {
				return out.write(batch, h)
			}
			if c.aborted.contains(h) {
				if !retainEmpty {
					return nil
				}
				w.rebuilt = appendEmptyBatch(w.rebuilt[:0], h)
				nh := parseBatchHeader(w.rebuilt)
				return out.write(w.rebuilt, &nh)
			}
			// First walk: decide on every record, and learn what a rewrite
			// needs to write its header before its records.
			var p keptSummary
			w.bigKept = w.bigKept[:0]
			err := w.stream.walk(batch, h, c.cfg.MaxDecompressedBatchBytes, nil, 0, func(r *cleanRecord) (bool, error) {
				p.read++
				if !w.shouldRetainRecord(m, h, r, nowMs) {
					return false, nil
				}
				if p.kept == 0 {
					p.firstTs = r.timestamp
				}
				p.kept++
				p.maxTs = max(p.maxTs, r.timestamp)
				p.tombstones = p.tombstones || !r.hasValue
				if r.bigHead {
					w.bigKept = append(w.bigKept, r.index)
				}
				return true, nil
			})
			if err != nil {
				return fmt.Errorf("segment %d: batch at offset %d: %w", seg.baseOffset, h.BaseOffset, err)
			}
			w.stats.recordsRead += int64(p.read)
			w.stats.recordsWritten += int64(p.kept)
			horizon, hasHorizon := h.deleteHorizon()
			switch {
			case p.kept > 0 && p.kept == p.read && (!p.tombstones || hasHorizon):
				return out.write(batch, h)
			case p.kept > 0:
				if p.tombstones && !hasHorizon {
					horizon = nowMs + c.cfg.DeleteRetentionMs
				}
				if err := w.rewriteBatch(c, &out, batch, h, &p, horizon, nowMs); err != nil {
					return fmt.Errorf("segment %d: rewrite batch at offset %d: %w", seg.baseOffset, h.BaseOffset, err)
				}
				return nil
			case retainEmpty:
				w.rebuilt = appendEmptyBatch(w.rebuilt[:0], h)
				nh := parseBatchHeader(w.rebuilt)
				return out.write(w.rebuilt, &nh)
			}
			return nil
		})
		if err != nil {
			l.discardCleaned(cleaned)
			return err
		}
	}
	if err := out.flush(); err != nil {
		l.discardCleaned(cleaned)
		return err
	}
	w.writeBuf = out.buf[:0]
	if err := cleaned.seal(); err != nil {
		l.discardCleaned(cleaned)
		return err
	}
	w.stats.bytesWritten += cleaned.size
	if err := l.cleanedTxnIndex(cleaned, group); err != nil {
		l.discardCleaned(cleaned)
		return err
	}
	if err := l.replaceSegments(cleaned, group); err != nil {
		return err
	}
	w.stats.segmentsReplaced += len(group)
	w.stats.segmentsMade++
	return nil
}

// shouldRetainRecord is Kafka's Cleaner.shouldRetainRecord for v2 batches.
func (w *cleanerWorker) shouldRetainRecord(m *offsetMap, h *batchHeader, r *cleanRecord, nowMs int64) bool {
	if r.offset > m.latestOffset() {
		return true // past what this cleaning mapped: the next one decides
	}
	if !r.hasKey {
		w.stats.invalidRecords++
		return false
	}
	if r.offset < m.getHash(&r.keyHash) {
		return false
	}
	horizon, hasHorizon := h.deleteHorizon()
	return r.hasValue || !hasHorizon || nowMs < horizon
}

// keptSummary is what the first walk over a batch learns of the records a
// cleaning keeps.
type keptSummary struct {
	read, kept     int32
	firstTs, maxTs int64 // of the kept records
	tombstones     bool  // some kept record is a tombstone
}

// rewriteBatch writes to out the batch h keeping only the records the
// first walk kept (p), as Kafka's buildRetainedRecordsInto: the base
// offset, last offset delta (so the producer's last sequence survives),
// producer fields, leader epoch, timestamp type and codec are h's; records
// keep their offsets; baseTimestamp is the delete horizon when
// deleteHorizonMs >= 0 (attributes bit 6 set), else the first kept
// record's timestamp; maxTimestamp is the largest kept timestamp, or h's
// for LogAppendTime. The records stream a second time from the
// decompressor through the codec's compressor into the segment; the header
// is patched with the length and CRC at the end.
func (w *cleanerWorker) rewriteBatch(c *cleanCandidate, out *segmentWriter, batch []byte, h *batchHeader, p *keptSummary, deleteHorizonMs, nowMs int64) error {
	baseTs := deleteHorizonMs
	if baseTs < 0 {
		baseTs = p.firstTs
	}
	nh := *h
	nh.Attributes = h.Attributes &^ recordbatch.AttrDeleteHorizon
	if deleteHorizonMs >= 0 {
		nh.Attributes |= recordbatch.AttrDeleteHorizon
	}
	nh.BaseTimestamp, nh.MaxTimestamp, nh.RecordCount = baseTs, p.maxTs, p.kept
	if h.timestampType() == LogAppendTime {
		nh.MaxTimestamp = h.MaxTimestamp
	}
	nh.BatchLength = recordbatch.HeaderSize - recordbatch.LogOverhead // for Put; patched below
	var head [recordbatch.HeaderSize]byte
	nh.Put(head[:])
	pos := out.pos()
	out.append(head[:])
	pw := payloadWriter{sw: out, crc: crc32.Update(0, recordbatch.CRCTable, head[recordbatch.PosAttributes:])}
	cw, err := compress.NewWriter(h.codec(), &pw)
	if err != nil {
		return err
	}
	if w.bw == nil {
		w.bw = bufio.NewWriterSize(cw, 32<<10)
	} else {
		w.bw.Reset(cw)
	}
	m := w.offsetMap()
	invalid := w.stats.invalidRecords // counted by the first walk
	big := w.bigKept
	err = w.stream.walk(batch, h, c.cfg.MaxDecompressedBatchBytes, w.bw, baseTs, func(r *cleanRecord) (bool, error) {
		if r.bigHead {
			keep := len(big) > 0 && big[0] == r.index
			if keep {
				big = big[1:]
			}
			return keep, nil
		}
		return w.shouldRetainRecord(m, h, r, nowMs), nil
	})
	w.stats.invalidRecords = invalid
	if ferr := w.bw.Flush(); err == nil {
		err = ferr
	}
	w.bw.Reset(nil)
	if cerr := cw.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = pw.err
	}
	if err != nil {
		return err
	}
	size := recordbatch.HeaderSize + pw.n
	if size-recordbatch.LogOverhead > math.MaxInt32 {
		return fmt.Errorf("rewritten batch of %d bytes is over the batch size limit", size)
	}
	nh.BatchLength = int32(size - recordbatch.LogOverhead)
	nh.CRC = pw.crc
	binary.BigEndian.PutUint32(head[recordbatch.PosBatchLength:], uint32(nh.BatchLength))
	binary.BigEndian.PutUint32(head[recordbatch.PosCRC:], nh.CRC)
	if err := out.patch(pos, head[:]); err != nil {
		return err
	}
	return out.seg.indexBatch(&nh, pos, out.interval)
}

// payloadWriter passes a rewritten batch's compressed records to the
// segment writer, summing their length and CRC.
type payloadWriter struct {
	sw  *segmentWriter
	crc uint32
	n   int64
	err error
}

func (p *payloadWriter) Write(b []byte) (int, error) {
	if p.err != nil {
		return 0, p.err
	}
	p.crc = crc32.Update(p.crc, recordbatch.CRCTable, b)
	p.n += int64(len(b))
	if p.err = p.sw.append(b); p.err != nil {
		return 0, p.err
	}
	return len(b), nil
}

// segmentWriter appends batches to a segment being built by the cleaner,
// buffering writes and indexing each batch at its final position.
type segmentWriter struct {
	seg      *segment
	buf      []byte // bytes not yet written, which start at seg.size
	flushAt  int
	interval int32
	throttle *throttler // the cleaner's I/O limit (nil: none)
	stop     <-chan struct{}
}

func (sw *segmentWriter) write(batch []byte, h *batchHeader) error {
	if err := sw.seg.indexBatch(h, sw.seg.size+int64(len(sw.buf)), sw.interval); err != nil {
		return err
	}
	sw.buf = append(sw.buf, batch...)
	if len(sw.buf) >= sw.flushAt {
		return sw.flush()
	}
	return nil
}

// pos is where the next byte goes in the segment.
func (sw *segmentWriter) pos() int64 { return sw.seg.size + int64(len(sw.buf)) }

// append adds bytes that are not (yet) a whole batch: write indexes them.
func (sw *segmentWriter) append(b []byte) error {
	sw.buf = append(sw.buf, b...)
	if len(sw.buf) >= sw.flushAt {
		return sw.flush()
	}
	return nil
}

// patch overwrites bytes written at pos, in the buffer or in the file. A
// patch never straddles the two: a flush writes the whole buffer, and b
// (a batch header) was appended whole.
func (sw *segmentWriter) patch(pos int64, b []byte) error {
	if pos >= sw.seg.size {
		copy(sw.buf[pos-sw.seg.size:], b)
		return nil
	}
	_, err := sw.seg.log.WriteAt(b, pos)
	return err
}

func (sw *segmentWriter) flush() error {
	if len(sw.buf) == 0 {
		return nil
	}
	if _, err := sw.seg.log.WriteAt(sw.buf, sw.seg.size); err != nil {
		return err
	}
	sw.seg.size += int64(len(sw.buf))
	sw.throttle.maybeThrottle(int64(len(sw.buf)), sw.stop)
	sw.buf = sw.buf[:0]
	return nil
}

// errStopIteration ends forEachBatch early without an error.
var errStopIteration = errors.New("stop")

// forEachBatch calls fn for each whole batch of seg in [from, to), reading
// the file in chunks of the worker's read buffer (grown for a larger batch).
// Each batch's CRC is checked: the cleaner never rewrites a corrupt batch
// under a fresh CRC. It checks for an abort between chunks.
func (w *cleanerWorker) forEachBatch(c *cleanCandidate, seg *segment, from, to int64, fn func(pos int64, h *batchHeader, batch []byte) error) error {
	for pos := from; pos < to; {
		if w.stopped() || c.log.cleaningAborted() {
			return errCleaningAborted
		}
		n := min(int64(len(w.readBuf)), to-pos)
		chunk := w.readBuf[:n]
		if _, err := seg.log.ReadAt(chunk, pos); err != nil {
			return w.readErr(c, seg, err)
		}
		w.throttle.maybeThrottle(n, w.stop)
		off := int64(0)
		for off+recordbatch.HeaderSize <= n {
			h := parseBatchHeader(chunk[off:])
			if h.BatchLength < recordbatch.MinBatchLength || h.Magic != recordbatch.MagicV2 || pos+off+h.Size() > to {
				return fmt.Errorf("segment %d: invalid batch at position %d", seg.baseOffset, pos+off)
			}
			if off+h.Size() > n {
				break
			}
			batch := chunk[off : off+h.Size()]
			if recordbatch.Batch(batch).ComputeCRC() != h.CRC {
				return fmt.Errorf("segment %d: corrupt batch at position %d (offset %d)", seg.baseOffset, pos+off, h.BaseOffset)
			}
			if err := fn(pos+off, &h, batch); err != nil {
				if err == errStopIteration {
					return nil
				}
				return err
			}
			off += h.Size()
		}
		if off == 0 {
			if n < recordbatch.HeaderSize {
				return fmt.Errorf("segment %d: %d trailing bytes at position %d", seg.baseOffset, n, pos)
			}
			h := parseBatchHeader(chunk)
			w.readBuf = make([]byte, h.Size()) // a batch larger than the buffer
			continue
		}
		pos += off
	}
	if len(w.readBuf) > w.ioBufferSize {
		w.readBuf = make([]byte, w.ioBufferSize)
	}
	return nil
}

// readErr turns a read failure into errCleaningAborted when the segment
// left the log meanwhile (retention closed its files).
func (w *cleanerWorker) readErr(c *cleanCandidate, seg *segment, err error) error {
	l := c.log
	l.mu.RLock()
	gone := l.closed.Load() || !slices.Contains(l.segments, seg)
	l.mu.RUnlock()
	if gone || l.cleaningAborted() {
		return errCleaningAborted
	}
	return fmt.Errorf("read segment %d: %w", seg.baseOffset, err)
}

// cleanerWorker is one cleaner thread's state (Kafka's Cleaner): its offset
// map, I/O buffers and scratch space, reused from one cleaning to the next.
type cleanerWorker struct {
	cfg          *CleanerConfig
	mapMemory    int
	ioBufferSize int
	stopped      func() bool

	dedupe   *offsetMap // allocated at the first cleaning
	readBuf  []byte
	writeBuf []byte
	stream   recordStream
	bigKept  []int32       // records kept whose head is larger than the stream's window (see walk)
	bw       *bufio.Writer // buffers retained records before their compressor
	rebuilt  []byte
	stats    cleanStats
	// throttle holds reads and writes to log.cleaner.io.max.bytes.per.second
	// (nil: no limit); a sleep in it ends when stop closes.
	throttle *throttler
	stop     <-chan struct{}
}

func newCleanerWorker(cfg *CleanerConfig, stopped func() bool) *cleanerWorker {
	threads := max(cfg.Threads, 1)
	io := max(cfg.IOBufferSize/threads/2, 4<<10)
	return &cleanerWorker{
		cfg:          cfg,
		mapMemory:    int(min(cfg.DedupeBufferSize/int64(threads), math.MaxInt32)),
		ioBufferSize: io,
		stopped:      stopped,
		readBuf:      make([]byte, io),
		writeBuf:     make([]byte, 0, io),
	}
}

func (w *cleanerWorker) offsetMap() *offsetMap {
	if w.dedupe == nil {
		w.dedupe = newOffsetMap(w.mapMemory)
	}
	return w.dedupe
}
