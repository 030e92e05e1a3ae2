package storage

import (
	"math"
	"testing"

	"github.com/strait/strait/storage/compress"
)

// preallocate: a new segment's log file is segment.bytes long from the
// start, its size 0; a roll and a clean close trim the file to the
// batches, and after a crash recovery cuts the zero tail, as Kafka's
// FileRecords with preallocate and LogSegment.recover.
func TestPreallocateTrimsAndRecovers(t *testing.T) {
	cfg := testConfig()
	cfg.Preallocate, cfg.SegmentBytes = true, 1<<20
	dir := t.TempDir()
	clock := &testClock{testEpoch}
	l := openTestLog(t, dir, cfg, clock)
	if got := fileSize(t, segPath(dir, 0, ".log")); got != 1<<20 || l.active().size != 0 {
		t.Fatalf("new segment: file %d bytes, size %d; want %d and 0", got, l.active().size, 1<<20)
	}
	ts := testEpoch.UnixMilli()
	var sizes []int64
	for i := 0; i < 3; i++ {
		b := simpleBatch(t, compress.None, 4, ts)
		sizes = append(sizes, int64(len(b)))
		mustAppend(t, l, b)
	}
	if got := fileSize(t, segPath(dir, 0, ".log")); got != 1<<20 {
		t.Fatalf("appends changed the preallocated length: %d", got)
	}
	res, err := l.Read(0, math.MaxInt64, l.LogEndOffset(), true)
	if err != nil {
		t.Fatal(err)
	}
	if hs := splitBatches(t, readSlices(t, res)); len(hs) != 3 {
		t.Fatalf("read %d batches", len(hs))
	}

	// A roll trims the sealed segment and preallocates the next.
	l.mu.Lock()
	_, err = l.rollLocked(clock.t)
	l.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := fileSize(t, segPath(dir, 0, ".log")), sizes[0]+sizes[1]+sizes[2]; got != want {
		t.Fatalf("sealed segment file %d bytes, want %d", got, want)
	}
	if got := fileSize(t, segPath(dir, 12, ".log")); got != 1<<20 {
		t.Fatalf("rolled segment file %d bytes", got)
	}
	tail := simpleBatch(t, compress.None, 2, ts)
	mustAppend(t, l, simpleBatch(t, compress.None, 2, ts))

	// A clean close trims the active one.
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if got := fileSize(t, segPath(dir, 12, ".log")); got != int64(len(tail)) {
		t.Fatalf("closed active segment file %d bytes, want %d", got, len(tail))
	}
	l = openTestLog(t, dir, cfg, clock)
	if l.LogEndOffset() != 14 {
		t.Fatalf("log end %d after a clean reopen, want 14", l.LogEndOffset())
	}
	// Loaded segments are not preallocated again; a crash after a roll
	// leaves the new segment's zero tail, which recovery cuts.
	l.mu.Lock()
	_, err = l.rollLocked(clock.t)
	l.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, simpleBatch(t, compress.None, 2, ts))
	crash(l)
	if got := fileSize(t, segPath(dir, 14, ".log")); got != 1<<20 {
		t.Fatalf("crashed active segment file %d bytes, want the preallocated %d", got, 1<<20)
	}
	l = openTestLog(t, dir, cfg, clock)
	defer l.Close()
	if l.LogEndOffset() != 16 || l.active().size != int64(len(tail)) {
		t.Fatalf("after recovery: log end %d, active size %d", l.LogEndOffset(), l.active().size)
	}
	if got := fileSize(t, segPath(dir, 14, ".log")); got != int64(len(tail)) {
		t.Fatalf("recovery left the file %d bytes, want %d", got, len(tail))
	}
	mustAppend(t, l, simpleBatch(t, compress.None, 2, ts))
	res, err = l.Read(0, math.MaxInt64, l.LogEndOffset(), true)
	if err != nil {
		t.Fatal(err)
	}
	if hs := splitBatches(t, readSlices(t, res)); len(hs) != 6 || hs[5].NextOffset() != 18 {
		t.Fatalf("read %d batches after recovery", len(hs))
	}
}
