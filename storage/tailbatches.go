package storage

// tailBatches remembers where the last few batches of an active segment
// start, so that a fetch at the log end (a consumer caught up, a follower)
// finds its first batch without reading headers from the file: otherwise
// one or two pread calls per fetch (findBatch walks headers from the offset
// index entry at or below the offset).
//
// The entries are contiguous in the file: an append that does not start
// where the last entry ends (the segment was truncated meanwhile) starts
// them afresh, and a lookup ignores entries past the segment's size (a
// truncation not yet followed by an append). Bytes below the size never
// change while the segment exists, so an entry within it stays true.
//
// Guarded by the owning Log's lock like the rest of the segment: appends
// under the write lock, lookups under the read lock.
type tailBatches struct {
	n int
	e [tailBatchesKept]tailBatch
}

// tailBatchesKept: a consumer fetching once per few appends still finds
// its offset here. 4 x 32 bytes per active segment that took an append.
const tailBatchesKept = 4

type tailBatch struct {
	base, last int64 // first and last offset
	pos, end   int64 // byte range in the segment's log file
}

// add records the bytes appended at pos, the batch h; bytes that are not
// exactly that one batch start the entries afresh.
func (t *tailBatches) add(h *batchHeader, pos, n int64) {
	if (t.n > 0 && t.e[t.n-1].end != pos) || h.Size() != n {
		t.n = 0
		if h.Size() != n {
			return
		}
	}
	if t.n == tailBatchesKept {
		copy(t.e[:], t.e[1:])
		t.n--
	}
	t.e[t.n] = tailBatch{base: h.BaseOffset, last: h.LastOffset(), pos: pos, end: pos + h.Size()}
	t.n++
}

// findEntry returns the entry of the first batch whose last offset is >=
// target, ok false when the entries cannot tell (target before the first
// entry or after the last, or an entry past size).
func (t *tailBatches) findEntry(target, size int64) (tailBatch, bool) {
	if t == nil || t.n == 0 || target < t.e[0].base || target > t.e[t.n-1].last {
		return tailBatch{}, false
	}
	for i := range t.n {
		e := &t.e[i]
		if e.end > size {
			return tailBatch{}, false
		}
		if e.last >= target {
			return *e, true
		}
	}
	return tailBatch{}, false
}

// batchPos is where a batch lies in a segment's file.
type batchPos struct {
	pos  int64
	size int64 // 0 when not known without reading its header
	// headerRead: the size comes from a header this lookup read from the
	// file, not from memory.
	headerRead bool
}

// findBatchPos is findBatch for a caller that needs only the position
// and the size: answered from the tail entries, from where a recent read
// ended (readends.go), or for a target at or below the segment's base
// offset, the first batch (every batch's last offset is at or above the
// base, size unknown), when it can; else by findBatch.
func (s *segment) findBatchPos(target int64) (at batchPos, found bool, err error) {
	if e, ok := s.tail.findEntry(target, s.size); ok {
		return batchPos{pos: e.pos, size: e.end - e.pos}, true, nil
	}
	if pos, size, ok := s.findReadEnd(target); ok {
		return batchPos{pos: pos, size: size}, true, nil
	}
	if target <= s.baseOffset && s.size > 0 {
		return batchPos{}, true, nil
	}
	pos, h, found, err := s.findBatch(target)
	if !found {
		return batchPos{pos: pos}, found, err
	}
	return batchPos{pos: pos, size: h.Size(), headerRead: true}, found, err
}

// findBatchEnd is findBatch answered from the tail entries when they hold
// target: the position, base offset and size of the first batch whose
// last offset is >= target (a read's upper end, the high watermark, is
// mostly within the last batches).
func (s *segment) findBatchEnd(target int64) (pos, base, size int64, found bool, err error) {
	if e, ok := s.tail.findEntry(target, s.size); ok {
		return e.pos, e.base, e.end - e.pos, true, nil
	}
	pos, h, found, err := s.findBatch(target)
	return pos, h.BaseOffset, h.Size(), found, err
}
