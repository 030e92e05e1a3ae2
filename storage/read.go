package storage

import (
	"os"
	"sort"

	"github.com/strait/strait/recordbatch"
)

// FileSlice is a byte range of a segment file holding whole batches; the
// broker sends it with sendfile. The file stays open until the
// ReadResult's Release (filecache.go), even past its segment's deletion.
type FileSlice struct {
	File *os.File
	Pos  int64
	Len  int64
}

// ReadResult is what Read returns: file slices of whole batches.
type ReadResult struct {
	Slices         []FileSlice
	Size           int64 // sum of slice lengths
	LogStartOffset int64
	LogEndOffset   int64
	HighWatermark  int64
	// EndOffset bounds the offsets returned: the base offset of the first
	// batch not returned (the fetch offset when nothing is), the upper end
	// of a read_committed fetch's aborted-transaction search.
	EndOffset int64
	// Declined: ReadWithinFileBound stopped at a segment whose file no
	// other read holds while the files held by reads are at the
	// descriptor bound; Slices hold what came before it (often nothing).
	// The caller answers as for a read cut short by its byte limit.
	Declined bool

	// pins are the segment files of Slices, kept open until Release.
	pins []*segFile
}

// Release lets the segment files of the slices be closed again (by the
// FileCache, or because their segment was deleted); the slices must not be
// used afterwards. Until it is called the files stay open: a caller that
// never calls it keeps descriptors open, it never reads a closed file.
// Calling it more than once is harmless.
func (r *ReadResult) Release() {
	for _, sf := range r.pins {
		sf.releaseHeld()
	}
	r.pins = nil
}

// pin pins seg's file for the result's slices (see segFile.pin).
func (r *ReadResult) pin(seg *segment, withinBound bool) (*os.File, error) {
	f, err := seg.log.pin(withinBound)
	if err != nil {
		return nil, err
	}
	r.pins = append(r.pins, seg.log)
	return f, nil
}

// unpinLast undoes the last pin (its segment gave no slice).
func (r *ReadResult) unpinLast() {
	r.pins[len(r.pins)-1].releaseHeld()
	r.pins = r.pins[:len(r.pins)-1]
}

// segmentFor returns the index of the last segment whose base offset is
// <= offset (0 if offset is below every base).
func (l *Log) segmentFor(offset int64) int {
	i := sort.Search(len(l.segments), func(i int) bool { return l.segments[i].baseOffset > offset })
	return max(i-1, 0)
}

// Read returns whole batches starting with the batch that contains offset,
// stopping before the first batch whose base offset is >= upTo (the high
// watermark, or last stable offset) and at maxBytes, except that with
// minOneBatch the first batch is returned even if larger (KIP-74). Batches
// may span segments (one slice per segment). offset == log end offset, or
// >= upTo, gives an empty result; offset outside [log start, log end] is
// OFFSET_OUT_OF_RANGE. Cost: a binary search over segments and over the
// offset index, then at most one index interval of batch headers at each
// end of the range; a read starting where a recent one ended, or among
// the last batches, reads no header to find its start (readends.go,
// tailbatches.go). The slices stay valid without any lock.
//
// Read opens the segment files it needs whatever the FileCache holds: for
// callers that copy the slices and release them at once (the share fetch,
// the internal topics' readers, a move between log directories).
func (l *Log) Read(offset int64, maxBytes int64, upTo int64, minOneBatch bool) (ReadResult, error) {
	return l.readReleasingOnError(offset, maxBytes, upTo, minOneBatch, false)
}

// ReadWithinFileBound is Read for a caller that holds the slices until a
// response is written (Fetch, over up to every partition of the broker):
// it pins files other reads hold freely, but declines to hold another
// while the files held by reads have reached the FileCache's total bound
// (Declined, no error), so that the reads in flight cannot take the process past
// RLIMIT_NOFILE.
func (l *Log) ReadWithinFileBound(offset int64, maxBytes int64, upTo int64, minOneBatch bool) (ReadResult, error) {
	return l.readReleasingOnError(offset, maxBytes, upTo, minOneBatch, true)
}

func (l *Log) readReleasingOnError(offset int64, maxBytes int64, upTo int64, minOneBatch, withinBound bool) (ReadResult, error) {
	res, err := l.read(offset, maxBytes, upTo, minOneBatch, withinBound)
	if err != nil {
		res.Release()
		res.Slices, res.Size = nil, 0
	}
	return res, err
}

// readBounds is what every read answers with before its records: the
// log's offsets, and OFFSET_OUT_OF_RANGE for an offset outside them.
func (l *Log) readBounds(offset int64) (ReadResult, error) {
	res := ReadResult{
		LogStartOffset: l.logStartOffset.Load(),
		LogEndOffset:   l.logEndOffset.Load(),
		HighWatermark:  l.highWatermark.Load(),
		EndOffset:      offset,
	}
	if offset < res.LogStartOffset || offset > res.LogEndOffset {
		return res, offsetOutOfRange(offset, res.LogStartOffset, res.LogEndOffset)
	}
	return res, nil
}

func (l *Log) read(offset int64, maxBytes int64, upTo int64, minOneBatch, withinBound bool) (ReadResult, error) {
	nothingToRead := func(logEnd int64) bool {
		return maxBytes <= 0 && !minOneBatch || offset >= min(upTo, logEnd)
	}
	if nothingToRead(l.logEndOffset.Load()) && !l.closed.Load() {
		// Nothing to read (a fetch's response is full, or the reader is
		// caught up): the offsets alone, without the lock, whose atomic
		// add is much of a visit when a fetch visits 10,000 partitions.
		// A log closing meanwhile answers as it did just before.
		if res, err := l.readBounds(offset); err != nil || nothingToRead(res.LogEndOffset) {
			return res, err
		}
		// The log grew between the two loads: read it under the lock.
	}
	l.mu.RLock()
	defer l.mu.RUnlock()
	res, err := l.readBounds(offset)
	if l.closed.Load() {
		return res, errLogClosed
	}
	if err != nil || nothingToRead(res.LogEndOffset) {
		return res, err
	}
	upTo = min(upTo, res.LogEndOffset)

	start, found, err := l.findStart(offset)
	if err != nil || !found {
		return res, err
	}
	remaining := maxBytes
	for i, pos, size := start.seg, start.pos, start.size; i < len(l.segments); i, pos, size = i+1, 0, 0 {
		seg := l.segments[i]
		if seg.baseOffset >= upTo || (remaining <= 0 && len(res.Slices) > 0) {
			break
		}
		c, err := seg.cut(pos, size, upTo, remaining, minOneBatch && len(res.Slices) == 0)
		if err != nil {
			return res, storageErr("read", err)
		}
		if c.end <= pos {
			if i == start.seg && start.headerRead {
				// Nothing fits, and finding the start read its header:
				// the fetches to come, as full when they reach this
				// partition, find its size without the file.
				seg.recordReadEnd(offset, pos, size)
			}
			break
		}
		// The file is pinned only for a slice: a fetch over many
		// partitions visits most of them with nothing to return (its
		// response full, or they are caught up), and those open nothing.
		file, err := res.pin(seg, withinBound)
		if err == errFileBound {
			res.Declined = true
			break
		}
		if err != nil {
			return res, storageErr("read", err)
		}
		res.Slices = append(res.Slices, FileSlice{File: file, Pos: pos, Len: c.end - pos})
		res.Size += c.end - pos
		remaining -= c.end - pos
		res.EndOffset = seg.nextOffset
		if c.end < seg.size {
			next, err := c.nextBatch(seg)
			if err != nil {
				return res, storageErr("read", err)
			}
			res.EndOffset = next.base
			seg.recordReadEnd(next.base, c.end, next.size) // the consumer's next fetch starts here
		}
		if c.stopped {
			break
		}
	}
	return res, nil
}

// readStart is where a read's first batch lies.
type readStart struct {
	seg int // index in Log.segments
	batchPos
}

// findStart finds the batch holding offset, or the first batch after it
// should offset fall in a gap between segments. found is false if no
// segment has such a batch.
func (l *Log) findStart(offset int64) (readStart, bool, error) {
	for i := l.segmentFor(offset); i < len(l.segments); i++ {
		at, found, err := l.segments[i].findBatchPos(offset)
		if err != nil {
			return readStart{}, false, storageErr("read", err)
		}
		if found {
			return readStart{seg: i, batchPos: at}, true, nil
		}
	}
	return readStart{}, false, nil
}

// sliceCut is where a read's slice of one segment ends.
type sliceCut struct {
	end int64 // the slice is [start, end)
	// next is the batch at end, if the cut learnt it on the way (end below
	// the segment's size).
	next batchAt
	// stopped: the read ends here, by its upper offset or its byte limit,
	// rather than going on into the next segment.
	stopped bool
}

// batchAt is a batch's base offset and size, if known.
type batchAt struct {
	base, size int64
	known      bool
}

// nextBatch returns the batch at c.end, reading its header if the cut did
// not learn it.
func (c sliceCut) nextBatch(s *segment) (batchAt, error) {
	if c.next.known {
		return c.next, nil
	}
	var buf [recordbatch.HeaderSize]byte
	h, err := s.readHeader(c.end, &buf)
	if err != nil {
		return batchAt{}, err
	}
	return batchAt{base: h.BaseOffset, size: h.Size(), known: true}, nil
}

// cut returns where a slice of s starting at the batch at start (of
// startSize bytes, 0 if unknown) ends: before the first batch whose base
// offset is >= upTo, and within remaining bytes, except that an obliged
// slice (a fetch's first batch, KIP-74) holds its first batch whatever its
// size. An end at or below start means nothing to return.
func (s *segment) cut(start, startSize, upTo, remaining int64, obliged bool) (sliceCut, error) {
	c := sliceCut{end: s.size}
	if upTo < s.nextOffset {
		p, base, size, found, err := s.findBatchEnd(upTo)
		if err != nil {
			return c, err
		}
		if found {
			c.stopped = true
			if base < upTo {
				c.end = p + size
			} else {
				c.end, c.next = p, batchAt{base: base, size: size, known: true}
			}
		}
	}
	if c.end <= start || c.end-start <= remaining {
		return c, nil
	}
	c.stopped = true
	if startSize > 0 && startSize > remaining {
		// Not even the first batch fits (startSize is a whole batch, so
		// the end above is at least start+startSize): no header to read.
		c.end, c.next = start, batchAt{}
		if obliged {
			c.end = start + startSize
		}
		return c, nil
	}
	p, h, hasHeader, err := s.boundaryAtOrBefore(start, start+max(remaining, 0))
	if err != nil {
		return c, err
	}
	c.end, c.next = p, batchAt{base: h.BaseOffset, size: h.Size(), known: hasHeader}
	if p == start && hasHeader && !obliged {
		// Nothing fits, and the size of the batch at start is known now:
		// the fetches to come, as full when they reach this partition
		// (a consumer's first pass over many partitions from offset 0),
		// answer without the file.
		s.recordReadEnd(h.BaseOffset, start, h.Size())
	}
	if p == start && obliged {
		if !hasHeader { // the header at start, were it not read
			var buf [recordbatch.HeaderSize]byte
			if h, err = s.readHeader(start, &buf); err != nil {
				return c, err
			}
		}
		c.end, c.next = start+h.Size(), batchAt{}
	}
	return c, nil
}

// OffsetForTimestamp returns the first record whose timestamp is >= ts
// (ListOffsets with a timestamp): the first segment whose largest
// timestamp reaches ts, its time index and offset index narrow the search
// to an interval, then batches are walked and, in the first batch whose
// max timestamp reaches ts, its records (decompressed if needed). The
// special ListOffsets timestamps (-1 latest, -2 earliest, -3 max) are the
// caller's. found is false if no record has such a timestamp.
func (l *Log) OffsetForTimestamp(ts int64) (offset int64, timestamp int64, found bool, err error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed.Load() {
		return -1, -1, false, errLogClosed
	}
	start := l.logStartOffset.Load()
	for _, seg := range l.segments {
		if seg.maxTimestamp < ts || seg.nextOffset <= start {
			continue
		}
		_, fromOffset, err := seg.timeIndex.lookup(ts)
		if err != nil {
			return -1, -1, false, storageErr("list offsets", err)
		}
		_, pos, err := seg.offsetIndex.lookup(max(fromOffset, start))
		if err != nil {
			return -1, -1, false, storageErr("list offsets", err)
		}
		var buf [recordbatch.HeaderSize]byte
		for pos < seg.size {
			h, err := seg.readHeader(pos, &buf)
			if err != nil {
				return -1, -1, false, storageErr("list offsets", err)
			}
			if h.MaxTimestamp >= ts && h.LastOffset() >= start {
				o, t, ok, err := seg.firstRecordWhere(pos, &h, func(o, t int64) bool { return t >= ts && o >= start })
				if err != nil {
					return -1, -1, false, storageErr("list offsets", err)
				}
				if ok {
					return o, t, true, nil
				}
			}
			pos += h.Size()
		}
		return -1, -1, false, nil
	}
	return -1, -1, false, nil
}

// MaxTimestamp returns the offset and timestamp of the first record
// carrying the largest timestamp in the log (ListOffsets MAX_TIMESTAMP,
// KIP-734), or (-1, -1) if no record has a timestamp.
func (l *Log) MaxTimestamp() (offset int64, timestamp int64) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed.Load() {
		return -1, -1
	}
	var best *segment
	for _, seg := range l.segments {
		if seg.maxTimestamp > recordbatch.NoTimestamp && (best == nil || seg.maxTimestamp > best.maxTimestamp) {
			best = seg
		}
	}
	if best == nil {
		return -1, -1
	}
	pos, h, found, err := best.findBatch(best.offsetOfMaxTimestamp)
	if err == nil && found {
		o, t, ok, err := best.firstRecordWhere(pos, &h, func(_, t int64) bool { return t == best.maxTimestamp })
		if err == nil && ok {
			return o, t
		}
	}
	if err != nil {
		l.logger.Warn("max timestamp lookup fell back to the batch offset", "dir", l.dir, "err", err)
	}
	return best.offsetOfMaxTimestamp, best.maxTimestamp
}

// firstRecordWhere returns the offset and timestamp of the first record of
// the batch at pos satisfying match.
func (s *segment) firstRecordWhere(pos int64, h *batchHeader, match func(offset, ts int64) bool) (int64, int64, bool, error) {
	batch, err := s.readBatch(pos, h)
	if err != nil {
		return 0, 0, false, err
	}
	var offset, ts int64
	found := false
	errStop := &errRecordShape{Msg: "stop"}
	err = walkBatchRecords(batch, h, func(_ int32, r recordInfo) error {
		o, t := h.BaseOffset+int64(r.OffsetDelta), h.BaseTimestamp+r.TimestampDelta
		if h.timestampType() == LogAppendTime {
			t = h.MaxTimestamp
		}
		if match(o, t) {
			offset, ts, found = o, t, true
			return errStop
		}
		return nil
	})
	if err != nil && err != error(errStop) {
		return 0, 0, false, err
	}
	return offset, ts, found, nil
}
