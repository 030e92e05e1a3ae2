package storage

import (
	"math"
	"sync/atomic"
)

// readEnds remembers where the last few reads of a segment ended: the
// base offset, position and size of the first batch a read did not
// return (or, for a read that returned nothing, the offset it asked for
// and the batch holding it). A consumer's next fetch starts at exactly that offset (the
// ReadResult's EndOffset), so it finds its first batch here instead of
// looking up the offset index and reading batch headers (findBatch: one
// pread or more per fetch, most of a fetch's CPU for a consumer of old
// data, which tailBatches does not cover). The size answers a read whose
// byte limit is below that batch without reading the file: a fetch whose
// response is nearly full visits each of its remaining partitions that
// way (10,000 per Fetch of a consumer of 10,000 partitions).
//
// An entry is true while the segment exists and is not truncated below
// it: bytes below the size never change, appends go past it, and a
// compaction swap or a deletion replaces or drops the whole segment (and
// its readEnds). A truncation drops the entries (segment.forgetReadEnds),
// under the Log's write lock. Reads record and look up entries under the
// read lock, concurrently, so each slot is atomic words: where the offset
// relative to the segment's base (high 32 bits; it fits: a segment's
// offsets span at most MaxInt32, as the offset index's) and position+1
// (low 32; segment files stay below 2 GiB; 0 is an empty slot), and
// sizes, position+1 and the batch's size. The size of the batch at a
// position is the same whichever slot or read wrote it, so a size word
// is trusted whenever its position matches, with no ordering between
// the two words needed.
type readEnds struct {
	next  atomic.Uint32
	at    [readEndsKept]atomic.Uint64 // offset<<32 | pos+1
	sizes [readEndsKept]atomic.Uint64 // pos+1<<32 | size
}

// readEndsKept: one entry per consumer group reading the partition at a
// different place, a few groups at once. 72 bytes per segment read.
const readEndsKept = 4

// record remembers that the batch at pos has base offset offset and size
// bytes (0: unknown), in a segment based at base.
func (r *readEnds) record(base, offset, pos, size int64) {
	rel := offset - base
	if rel < 0 || rel > math.MaxInt32 || pos < 0 || pos >= math.MaxUint32 || size < 0 || size > math.MaxUint32 {
		return
	}
	v := uint64(rel)<<32 | uint64(pos+1)
	sz := uint64(pos+1)<<32 | uint64(size)
	for i := range r.at {
		if r.at[i].Load() == v {
			if size > 0 && r.sizes[i].Load() != sz {
				r.sizes[i].Store(sz)
			}
			return
		}
	}
	i := r.next.Add(1) % readEndsKept
	r.sizes[i].Store(sz)
	r.at[i].Store(v)
}

// find returns the position of the batch whose base offset is target,
// and its size if known (else 0), if an entry holds it below segSize.
func (r *readEnds) find(base, target, segSize int64) (pos, size int64, ok bool) {
	rel := target - base
	if rel < 0 || rel > math.MaxInt32 {
		return 0, 0, false
	}
	for i := range r.at {
		v := r.at[i].Load()
		if v>>32 != uint64(rel) || v&math.MaxUint32 == 0 {
			continue
		}
		pos1 := v & math.MaxUint32
		if pos := int64(pos1) - 1; pos < segSize {
			if size := r.sizeAt(i, pos1); pos+size <= segSize {
				return pos, size, true
			}
			return pos, 0, true
		}
	}
	return 0, 0, false
}

// sizeAt returns the size remembered for the batch at position pos1-1, 0
// if none: record writes it in the same slot as its position, so slot i
// is looked at first; another slot may hold it after a race between two
// records.
func (r *readEnds) sizeAt(i int, pos1 uint64) int64 {
	if sz := r.sizes[i].Load(); sz>>32 == pos1 {
		return int64(sz & math.MaxUint32)
	}
	for j := range r.sizes {
		if sz := r.sizes[j].Load(); j != i && sz>>32 == pos1 {
			return int64(sz & math.MaxUint32)
		}
	}
	return 0
}

// recordReadEnd remembers where a read of s ended (readEnds.record): its
// readEnds is made by the first read that ends within the segment, so
// that segments nobody reads (sealed, or of idle partitions) carry none.
func (s *segment) recordReadEnd(offset, pos, size int64) {
	r := s.ends.Load()
	if r == nil {
		r = new(readEnds)
		if !s.ends.CompareAndSwap(nil, r) {
			r = s.ends.Load()
		}
	}
	r.record(s.baseOffset, offset, pos, size)
}

// findReadEnd looks target up in s's read ends (readEnds.find).
func (s *segment) findReadEnd(target int64) (pos, size int64, ok bool) {
	r := s.ends.Load()
	if r == nil {
		return 0, 0, false
	}
	return r.find(s.baseOffset, target, s.size)
}

// forgetReadEnds drops the read ends (a truncation: bytes from the cut on
// will be others). Under the Log's write lock, so no read races it.
func (s *segment) forgetReadEnds() { s.ends.Store(nil) }
