package storage

import (
	"bytes"
	"fmt"
	"math"
	"path/filepath"
	"testing"

	"github.com/strait/strait/storage/compress"
)

// TestReadWithinFileBound: with the files held by read results at the
// cache's total bound, a read of a log whose file is open is served, a
// read that would have to open a file is declined (no slices, no error,
// the offsets filled) while a plain Read still opens it, and once a
// result is released the declined read is served.
func TestReadWithinFileBound(t *testing.T) {
	root := t.TempDir()
	const total = 2
	cache := NewFileCacheBounds(1, total)
	var ls []*Log
	var want [][]byte
	for i := range 3 {
		l, err := Open(filepath.Join(root, fmt.Sprintf("t-%d", i)), testConfig(), Options{FileCache: cache})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		b := simpleBatch(t, compress.None, 2, testEpoch.UnixMilli())
		mustAppend(t, l, b)
		l.UpdateHighWatermark(l.LogEndOffset())
		ls = append(ls, l)
		want = append(want, b)
	}
	read := func(i int) (ReadResult, error) {
		return ls[i].ReadWithinFileBound(0, math.MaxInt32, ls[i].LogEndOffset(), true)
	}
	a, err := read(0)
	if err != nil || a.Declined || !bytes.Equal(readSlices(t, a), want[0]) {
		t.Fatalf("first read: %v, declined %v", err, a.Declined)
	}
	b, err := read(1)
	if err != nil || b.Declined || !bytes.Equal(readSlices(t, b), want[1]) {
		t.Fatalf("second read: %v, declined %v", err, b.Declined)
	}
	if n := cache.Held(); n != total {
		t.Fatalf("%d files held, want %d", n, total)
	}
	// The third log's file goes at the next eviction: the cache holds one
	// file more than its bound, the other two pinned.
	for range 3 {
		if ls[2].active().log.OS() == nil {
			break
		}
		cache.trim()
	}
	if ls[2].active().log.OS() != nil {
		t.Fatal("the unpinned file past the total bound was not closed")
	}

	c, err := read(2)
	if err != nil || !c.Declined || len(c.Slices) != 0 || len(c.pins) != 0 {
		t.Fatalf("read needing an open at the bound: %v, declined %v, %d slices", err, c.Declined, len(c.Slices))
	}
	if c.LogEndOffset != ls[2].LogEndOffset() || c.HighWatermark != c.LogEndOffset || c.EndOffset != 0 {
		t.Fatalf("declined read's offsets: %+v", c)
	}
	if ls[2].active().log.OS() != nil {
		t.Fatal("a declined read opened the file")
	}
	// What a declined fetch waits on (HeldBelowBound) stays open until a
	// held file is released.
	belowBound := cache.HeldBelowBound()
	if closed(belowBound) {
		t.Fatal("HeldBelowBound closed with the held files at the bound")
	}
	// A file another read holds adds nothing: served at the bound.
	a2, err := read(0)
	if err != nil || a2.Declined || !bytes.Equal(readSlices(t, a2), want[0]) {
		t.Fatalf("read of an open file at the bound: %v, declined %v", err, a2.Declined)
	}
	a2.Release()
	if closed(belowBound) || closed(cache.HeldBelowBound()) {
		t.Fatal("HeldBelowBound closed by the release of a file another read still holds")
	}
	// Read copies and releases at once: it opens whatever the bound.
	p, err := ls[2].Read(0, math.MaxInt32, ls[2].LogEndOffset(), true)
	if err != nil || !bytes.Equal(readSlices(t, p), want[2]) {
		t.Fatalf("plain read at the bound: %v", err)
	}
	p.Release()
	// Open (as a read of batch headers leaves it) but held by no read:
	// still declined at the bound (holding it would keep the cache from
	// closing it).
	sf := ls[2].active().log
	if _, err := sf.acquire(); err != nil {
		t.Fatal(err)
	}
	c, err = read(2)
	sf.release()
	if err != nil || !c.Declined || len(c.Slices) != 0 {
		t.Fatalf("read of an open file no read holds, at the bound: %v, declined %v", err, c.Declined)
	}

	b.Release()
	if n := cache.Held(); n != 1 {
		t.Fatalf("%d files held after a release, want 1", n)
	}
	if !closed(belowBound) || !closed(cache.HeldBelowBound()) {
		t.Fatal("HeldBelowBound not closed with the held files below the bound")
	}
	for range 3 {
		if ls[2].active().log.OS() == nil {
			break
		}
		cache.trim()
	}
	c, err = read(2)
	if err != nil || c.Declined || !bytes.Equal(readSlices(t, c), want[2]) {
		t.Fatalf("read after a release: %v, declined %v", err, c.Declined)
	}
	a.Release()
	a.Release() // harmless
	c.Release()
	if n := cache.Held(); n != 0 {
		t.Fatalf("%d files held after every release", n)
	}
}

// readSequentially reads l from 0 to its high watermark in reads of at
// most maxBytes, each starting at the previous one's end offset, and
// returns the bytes and the offsets the reads started at.
func readSequentially(t testing.TB, l *Log, maxBytes int64) ([]byte, []int64) {
	t.Helper()
	var out []byte
	var starts []int64
	for off, hw := int64(0), l.HighWatermark(); off < hw; {
		if len(starts) > 100000 {
			t.Fatalf("no end after %d reads, at offset %d", len(starts), off)
		}
		starts = append(starts, off)
		res, err := l.Read(off, maxBytes, hw, true)
		if err != nil || res.EndOffset <= off {
			t.Fatalf("read at %d: %v, end offset %d", off, err, res.EndOffset)
		}
		out = append(out, readSlices(t, res)...)
		res.Release()
		off = res.EndOffset
	}
	return out, starts
}

// TestReadEndsSequentialReads: a reader going through a log of small
// batches, each read starting where the last ended, gets every batch
// once and finds each start without reading a header; after a truncation
// below remembered ends and appends of other batch sizes, reads at those
// offsets agree with the headers again, as they do after compaction
// replaced the segments.
func TestReadEndsSequentialReads(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytes = 64 << 10
	fsys := &countingFS{FS: OSFS{}}
	l, err := Open(t.TempDir(), cfg, Options{FS: fsys})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var all []byte
	for i := range 2000 {
		b := simpleBatch(t, compress.None, 1+i%3, testEpoch.UnixMilli())
		mustAppend(t, l, b)
		all = append(all, b...)
	}
	if len(l.segments) < 3 {
		t.Fatalf("%d segments; the test needs several", len(l.segments))
	}
	l.UpdateHighWatermark(l.LogEndOffset())
	const maxBytes = 1000
	got, starts := readSequentially(t, l, maxBytes)
	if !bytes.Equal(got, all) {
		t.Fatal("sequential reads returned other bytes than appended")
	}
	if len(starts) < 100 {
		t.Fatalf("%d reads; the test needs many", len(starts))
	}
	// Reading again, each read (but the first) starts where the last
	// ended: its start is found without reading the file.
	first, err := l.Read(0, maxBytes, l.HighWatermark(), true)
	if err != nil {
		t.Fatal(err)
	}
	first.Release()
	for i, off := range starts[1:] {
		l.mu.RLock()
		seg := l.segments[l.segmentFor(off)]
		before := fsys.reads.Load()
		at, found, err := seg.findBatchPos(off)
		pos, size := at.pos, at.size
		n := fsys.reads.Load() - before
		wantPos, wantH, wantFound, werr := seg.findBatch(off)
		l.mu.RUnlock()
		if n != 0 {
			t.Fatalf("finding the start of the read at %d took %d header reads", off, n)
		}
		if err != nil || werr != nil || !found || !wantFound || pos != wantPos {
			t.Fatalf("offset %d: (%d, %v, %v), headers say (%d, %v, %v)", off, pos, found, err, wantPos, wantFound, werr)
		}
		if size != wantH.Size() {
			t.Fatalf("offset %d: the remembered read end gives size %d, the header %d", off, size, wantH.Size())
		}
		res, err := l.Read(off, maxBytes, l.HighWatermark(), true)
		if err != nil || (i+2 < len(starts) && res.EndOffset != starts[i+2]) {
			t.Fatalf("read at %d: %v, end offset %d", off, err, res.EndOffset)
		}
		res.Release()
	}
	got, starts2 := readSequentially(t, l, maxBytes)
	if !bytes.Equal(got, all) || len(starts2) != len(starts) {
		t.Fatal("second pass differs")
	}

	// Truncate below the last segment's remembered ends, then append
	// batches of other sizes over them.
	l.mu.RLock()
	last := l.active()
	var ends []int64
	for off := last.baseOffset; off < last.nextOffset; off++ {
		if _, _, ok := last.findReadEnd(off); ok {
			ends = append(ends, off)
		}
	}
	l.mu.RUnlock()
	if len(ends) == 0 {
		t.Fatal("no read end in the active segment")
	}
	cut := ends[len(ends)/2] - 1 // inside the active segment, below its later ends
	if err := l.TruncateTo(cut); err != nil {
		t.Fatal(err)
	}
	for range 40 {
		mustAppend(t, l, simpleBatch(t, compress.None, 5, testEpoch.UnixMilli()))
	}
	l.UpdateHighWatermark(l.LogEndOffset())
	checkAgainstHeaders := func(when string) {
		t.Helper()
		if err := findBatchPosAgrees(l); err != nil {
			t.Fatalf("%s: %v", when, err)
		}
	}
	checkAgainstHeaders("after a truncation")
	got, _ = readSequentially(t, l, maxBytes)
	checkAgainstHeaders("after reads of the truncated log")
	if hs := splitBatches(t, got); hs[len(hs)-1].NextOffset() != l.LogEndOffset() {
		t.Fatalf("sequential reads after the truncation end at %d, log end %d", hs[len(hs)-1].NextOffset(), l.LogEndOffset())
	}
}

// TestReadEndsAfterCompaction: reads remembered before compaction swaps
// the segments agree with the headers after it.
func TestReadEndsAfterCompaction(t *testing.T) {
	cfg := compactConfig()
	clock := &testClock{testEpoch}
	l := openTestLog(t, t.TempDir(), cfg, clock)
	defer l.Close()
	keyedLog(t, l, compress.None, 60, 4, 10, testEpoch.UnixMilli())
	roll(t, l)
	l.UpdateHighWatermark(l.LogEndOffset())
	readSequentially(t, l, 300)
	c := testCleaner(t, l)
	if _, ok := cleanOnce(t, c, clock.t); !ok {
		t.Fatal("nothing cleaned")
	}
	if err := findBatchPosAgrees(l); err != nil {
		t.Fatal(err)
	}
}

// findBatchPosAgrees checks that findBatchPos, which answers from what it
// remembers, agrees with walking the headers at every offset of l.
func findBatchPosAgrees(l *Log) error {
	l.mu.RLock()
	defer l.mu.RUnlock()
	for _, seg := range l.segments {
		for off := seg.baseOffset; off < seg.nextOffset; off++ {
			wantPos, wantH, wantFound, werr := seg.findBatch(off)
			got, gotFound, err := seg.findBatchPos(off)
			gotPos, gotSize := got.pos, got.size
			if err != nil || werr != nil || gotFound != wantFound || (wantFound && gotPos != wantPos) {
				return fmt.Errorf("offset %d: (%d, %v, %v), headers say (%d, %v, %v)", off, gotPos, gotFound, err, wantPos, wantFound, werr)
			}
			if wantFound && gotSize != 0 && gotSize != wantH.Size() {
				return fmt.Errorf("offset %d: batch at %d remembered as %d bytes, its header says %d", off, gotPos, gotSize, wantH.Size())
			}
		}
	}
	return nil
}

// TestReadBelowTheFirstBatchReadsNothing: a fetch whose response is nearly
// full reads each remaining partition with a byte limit below its next
// batch. Starting where a read ended, such a read returns nothing (the
// fetch offset as its end) without reading the file; obliged to return a
// batch (KIP-74) it returns exactly that batch. From the log start, only
// the first such read reads a header.
func TestReadBelowTheFirstBatchReadsNothing(t *testing.T) {
	fsys := &countingFS{FS: OSFS{}}
	l, err := Open(t.TempDir(), testConfig(), Options{FS: fsys})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var batches [][]byte
	for i := range 20 {
		b := simpleBatch(t, compress.None, 1+i%4, testEpoch.UnixMilli())
		mustAppend(t, l, b)
		batches = append(batches, b)
	}
	hw := l.LogEndOffset()
	l.UpdateHighWatermark(hw)
	// Reads of two batches at a time, each leaving its end remembered;
	// at each end, the reads below the next batch.
	off, next, checked := int64(0), 0, 0
	for off < hw && next < len(batches) {
		n := int64(len(batches[next]))
		if next+1 < len(batches) {
			n += int64(len(batches[next+1]))
		}
		res, err := l.Read(off, n, hw, true)
		if err != nil || res.Size != n {
			t.Fatalf("read at %d: %v, %d bytes, want %d", off, err, res.Size, n)
		}
		res.Release()
		next += 2
		off = res.EndOffset
		if off >= hw {
			break
		}
		size := int64(len(batches[next]))
		before := fsys.reads.Load()
		res, err = l.ReadWithinFileBound(off, size-1, hw, false)
		if n := fsys.reads.Load() - before; n != 0 {
			t.Fatalf("a read at %d below its first batch read the file %d times", off, n)
		}
		if err != nil || len(res.Slices) != 0 || res.Size != 0 || res.EndOffset != off {
			t.Fatalf("read at %d below its first batch: %v, %d slices, end offset %d", off, err, len(res.Slices), res.EndOffset)
		}
		res.Release()
		res, err = l.ReadWithinFileBound(off, size-1, hw, true)
		if err != nil || !bytes.Equal(readSlices(t, res), batches[next]) {
			t.Fatalf("obliged read at %d: %v, not the batch there", off, err)
		}
		res.Release()
		checked++
	}
	if checked < 5 {
		t.Fatalf("%d read ends checked; the test needs several", checked)
	}

	// A read from the log start that nothing fits: the first reads the
	// header, the next ones nothing.
	for i := range 3 {
		before := fsys.reads.Load()
		res, err := l.ReadWithinFileBound(0, int64(len(batches[0]))-1, hw, false)
		n := fsys.reads.Load() - before
		if err != nil || len(res.Slices) != 0 || res.EndOffset != 0 {
			t.Fatalf("read %d at 0 below its first batch: %v, %d slices, end offset %d", i, err, len(res.Slices), res.EndOffset)
		}
		res.Release()
		if i > 0 && n != 0 {
			t.Fatalf("read %d at 0 below its first batch read the file %d times", i, n)
		}
	}

	// The same from within the log, at a batch no read ended at and not
	// among the last ones (a consumer's first fetch from a committed
	// offset): the first read looks the start up in the index, the next
	// ones read nothing. Batch 3 starts at offset 1+2+3.
	const mid, midBatch = 6, 3
	for i := range 3 {
		before := fsys.reads.Load()
		res, err := l.ReadWithinFileBound(mid, int64(len(batches[midBatch]))-1, hw, false)
		n := fsys.reads.Load() - before
		if err != nil || len(res.Slices) != 0 || res.EndOffset != mid {
			t.Fatalf("read %d at %d below its first batch: %v, %d slices, end offset %d", i, mid, err, len(res.Slices), res.EndOffset)
		}
		res.Release()
		if i == 0 && n == 0 {
			t.Fatalf("the first read at %d found its start without the file: the case is not the one meant", mid)
		}
		if i > 0 && n != 0 {
			t.Fatalf("read %d at %d below its first batch read the file %d times", i, mid, n)
		}
	}
	res, err := l.ReadWithinFileBound(mid, int64(len(batches[midBatch]))-1, hw, true)
	if err != nil || !bytes.Equal(readSlices(t, res), batches[midBatch]) {
		t.Fatalf("obliged read at %d: %v, not the batch there", mid, err)
	}
	res.Release()
}

// closed reports whether ch is closed.
func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
