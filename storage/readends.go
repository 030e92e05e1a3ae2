package storage

import (
	"math"
	"sync/atomic"
)

// readEnds remembers where the last few reads of a segment ended: the
// base offset and position of the first batch a read did not return.
// A consumer's next fetch starts at exactly that offset (the ReadResult's
// EndOffset), so it finds its first batch here instead of looking up the
// offset index and reading batch headers (findBatch: one pread or more
// per fetch, most of a fetch's CPU for a consumer of old data, which
// tailBatches does not cover).
//
// An entry is true while the segment exists and is not truncated below
// it: bytes below the size never change, appends go past it, and a
// compaction swap or a deletion replaces or drops the whole segment (and
// its readEnds). A truncation clears the entries (truncateAt), under the
// Log's write lock. Reads record and look up entries under the read lock,
// concurrently, so each entry is one atomic word: the offset relative to
// the segment's base in the high 32 bits (it fits: a segment's offsets
// span at most MaxInt32, as the offset index's), position+1 in the low 32
// (segment files stay below 2 GiB; 0 is an empty slot).
type readEnds struct {
	next atomic.Uint32
	e    [readEndsKept]atomic.Uint64
}

// readEndsKept: one entry per consumer group reading the partition at a
// different place, a few groups at once. 40 bytes per segment.
const readEndsKept = 4

// record remembers that the batch at pos has base offset offset, in a
// segment based at base.
func (r *readEnds) record(base, offset, pos int64) {
	rel := offset - base
	if r == nil || rel < 0 || rel > math.MaxInt32 || pos < 0 || pos >= math.MaxUint32 {
		return
	}
	v := uint64(rel)<<32 | uint64(pos+1)
	for i := range r.e {
		if r.e[i].Load() == v {
			return
		}
	}
	r.e[r.next.Add(1)%readEndsKept].Store(v)
}

// find returns the position of the batch whose base offset is target, if
// an entry holds it below size.
func (r *readEnds) find(base, target, size int64) (int64, bool) {
	rel := target - base
	if r == nil || rel < 0 || rel > math.MaxInt32 {
		return 0, false
	}
	for i := range r.e {
		v := r.e[i].Load()
		if v>>32 != uint64(rel) || v&math.MaxUint32 == 0 {
			continue
		}
		if pos := int64(v&math.MaxUint32) - 1; pos < size {
			return pos, true
		}
	}
	return 0, false
}

// clear forgets every entry (a truncation: bytes from the cut on will be
// others).
func (r *readEnds) clear() {
	if r == nil {
		return
	}
	for i := range r.e {
		r.e[i].Store(0)
	}
}
