package storage

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strait/strait/storage/compress"
)

// logFDs counts the descriptors of dir's segment log files.
func logFDs(t *testing.T, dir string) int {
	t.Helper()
	under, _ := fdsUnder(t, dir)
	n := 0
	for _, p := range under {
		if strings.Contains(p, ".log") {
			n++
		}
	}
	return n
}

// TestFileCacheBoundsSealedSegments: with a FileCache of 2, a log of many
// segments holds at most 2 sealed segments' log files open besides the
// active one, through appends, reads of every segment and a restart; a
// file pinned by a read result stays open and readable while the cache
// evicts around it, and is closed once released and evicted.
func TestFileCacheBoundsSealedSegments(t *testing.T) {
	dir := t.TempDir()
	cache := NewFileCache(2)
	cfg := recoveryConfig()
	l, err := Open(dir, cfg, Options{FileCache: cache})
	if err != nil {
		t.Fatal(err)
	}
	appendBatches(t, l, compress.None, 300, testEpoch.UnixMilli())
	l.flushes.Wait()
	if len(l.segments) < 6 {
		t.Fatalf("%d segments; the test needs at least 6", len(l.segments))
	}
	if n := logFDs(t, dir); n > 3 {
		t.Fatalf("%d segment log descriptors after appends to %d segments, want at most 3", n, len(l.segments))
	}
	leo := l.LogEndOffset()
	l.UpdateHighWatermark(leo)

	// Pin the first segment's file, then read every other segment.
	pinned, err := l.Read(0, 1, leo, true)
	if err != nil || len(pinned.Slices) != 1 {
		t.Fatalf("read at 0: %v, %d slices", err, len(pinned.Slices))
	}
	want := make([]byte, pinned.Slices[0].Len)
	if _, err := pinned.Slices[0].File.ReadAt(want, pinned.Slices[0].Pos); err != nil {
		t.Fatal(err)
	}
	for _, s := range l.segments[1:] {
		res, err := l.Read(s.baseOffset, 1, leo, true)
		if err != nil || res.Size == 0 {
			t.Fatalf("read of segment %d: %v, %d bytes", s.baseOffset, err, res.Size)
		}
		res.Release()
		if n := logFDs(t, dir); n > 4 {
			under, _ := fdsUnder(t, dir)
			t.Fatalf("%d segment log descriptors while reading segment %d, want at most 4 (2 cached, 1 pinned, the active one): %q", n, s.baseOffset, under)
		}
	}
	got := make([]byte, len(want))
	if _, err := pinned.Slices[0].File.ReadAt(got, pinned.Slices[0].Pos); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("the pinned file after evictions: %v, same bytes %v", err, bytes.Equal(got, want))
	}
	if l.segments[0].log.OS() == nil {
		t.Fatal("the pinned segment's file was closed")
	}
	pinned.Release()
	for _, s := range l.segments[len(l.segments)-3 : len(l.segments)-1] {
		res, err := l.Read(s.baseOffset, 1, leo, true)
		if err != nil {
			t.Fatal(err)
		}
		res.Release()
	}
	if l.segments[0].log.OS() != nil {
		t.Fatal("the first segment's file is still open once released and least recently used")
	}
	if n := logFDs(t, dir); n > 3 {
		t.Fatalf("%d segment log descriptors after the reads, want at most 3", n)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if n := logFDs(t, dir); n != 0 {
		t.Fatalf("%d segment log descriptors after Close", n)
	}

	l2, err := Open(dir, cfg, Options{FileCache: cache})
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	if n := logFDs(t, dir); n > 3 {
		t.Fatalf("%d segment log descriptors after a restart, want at most 3", n)
	}
	res, err := l2.Read(0, math.MaxInt64, leo, true)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Release()
	if res.Size == 0 || len(res.Slices) != len(l2.segments) {
		t.Fatalf("reading the whole log after a restart: %d bytes in %d slices of %d segments", res.Size, len(res.Slices), len(l2.segments))
	}
}

// TestFileCacheDeletedSegmentPinned: a segment deleted by retention while
// a read result pins it stays readable until released, then its file is
// closed.
func TestFileCacheDeletedSegmentPinned(t *testing.T) {
	dir := t.TempDir()
	cfg := recoveryConfig()
	l, err := Open(dir, cfg, Options{FileCache: NewFileCache(1)})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	appendBatches(t, l, compress.None, 100, testEpoch.UnixMilli())
	l.flushes.Wait()
	if len(l.segments) < 3 {
		t.Fatalf("%d segments; the test needs at least 3", len(l.segments))
	}
	leo := l.LogEndOffset()
	l.UpdateHighWatermark(leo)
	// Evict the first segment's file, then pin it by a read.
	for _, s := range l.segments[1 : len(l.segments)-1] {
		res, err := l.Read(s.baseOffset, 1, leo, true)
		if err != nil {
			t.Fatal(err)
		}
		res.Release()
	}
	first := l.segments[0]
	if first.log.OS() != nil {
		t.Fatal("the first segment's file is open; the cache of 1 should have closed it")
	}
	res, err := l.Read(0, 1, leo, true)
	if err != nil || len(res.Slices) != 1 {
		t.Fatalf("read at 0: %v", err)
	}
	if _, err := l.DeleteRecordsBefore(l.segments[1].baseOffset); err != nil {
		t.Fatal(err)
	}
	if n, err := l.DeleteOldSegments(testEpoch); err != nil || n != 1 {
		t.Fatalf("deleted %d segments (%v)", n, err)
	}
	b := make([]byte, res.Slices[0].Len)
	if _, err := res.Slices[0].File.ReadAt(b, res.Slices[0].Pos); err != nil {
		t.Fatalf("reading a pinned, deleted segment: %v", err)
	}
	res.Release()
	if first.log.OS() != nil {
		t.Fatal("the deleted segment's file is open after the release")
	}
}

// TestReleaseIdleActive: once a partition has had no append for the idle
// time, its active segment's descriptor goes to the cache too, so idle
// partitions hold at most the cache's bound between them; the next append
// opens it again and keeps it.
func TestReleaseIdleActive(t *testing.T) {
	root := t.TempDir()
	cache := NewFileCache(1)
	var logs []*Log
	for _, name := range []string{"a-0", "b-0", "c-0"} {
		l, err := Open(root+"/"+name, testConfig(), Options{FileCache: cache})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		mustAppend(t, l, simpleBatch(t, compress.None, 3, testEpoch.UnixMilli()))
		logs = append(logs, l)
	}
	if n := logFDs(t, root); n != 3 {
		t.Fatalf("%d segment log descriptors for 3 busy partitions, want 3", n)
	}
	for _, l := range logs {
		l.ReleaseIdleActive(testEpoch, time.Minute) // notes the log end
		l.ReleaseIdleActive(testEpoch.Add(30*time.Second), time.Minute)
	}
	if n := logFDs(t, root); n != 3 {
		t.Fatalf("%d segment log descriptors before the idle time passed, want 3", n)
	}
	for _, l := range logs {
		l.ReleaseIdleActive(testEpoch.Add(time.Minute), time.Minute)
	}
	if n := logFDs(t, root); n != 1 {
		t.Fatalf("%d segment log descriptors for 3 idle partitions and a cache of 1, want 1", n)
	}
	a := logs[0]
	if a.active().log.OS() != nil {
		t.Fatal("the first idle partition's file is open; the cache of 1 should have closed it")
	}
	mustAppend(t, a, simpleBatch(t, compress.None, 2, testEpoch.UnixMilli()))
	if !a.active().log.kept() || a.active().log.OS() == nil {
		t.Fatal("an append did not open and keep the active segment's file")
	}
	a.UpdateHighWatermark(a.LogEndOffset())
	res, err := a.Read(0, math.MaxInt32, a.LogEndOffset(), true)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Release()
	if hs := splitBatches(t, readSlices(t, res)); len(hs) != 2 || hs[1].BaseOffset != 3 {
		t.Fatalf("read back %d batches after reopening, want 2 (the second at 3)", len(hs))
	}
}

// TestFileCacheConcurrentReads: readers of every segment at once, through
// a cache of 1 that closes files under them all the time, and appends
// rolling new segments meanwhile, all read the bytes that were written.
func TestFileCacheConcurrentReads(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(dir, recoveryConfig(), Options{FileCache: NewFileCache(1)})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	stored := appendBatches(t, l, compress.None, 150, testEpoch.UnixMilli())
	leo := l.LogEndOffset()
	l.UpdateHighWatermark(leo)
	var offsets []int64
	want := map[int64][]byte{}
	for _, b := range stored {
		h := parseBatchHeader(b)
		offsets = append(offsets, h.BaseOffset)
		want[h.BaseOffset] = b
	}
	errs := make(chan error, 5)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 300 {
				off := offsets[(i*7+g*31)%len(offsets)]
				res, err := l.Read(off, 1, leo, true)
				if err != nil {
					errs <- err
					return
				}
				b := make([]byte, res.Slices[0].Len)
				_, err = res.Slices[0].File.ReadAt(b, res.Slices[0].Pos)
				res.Release()
				if err != nil {
					errs <- fmt.Errorf("reading at %d: %w", off, err)
					return
				}
				if !bytes.Equal(b, want[off]) {
					errs <- fmt.Errorf("batch at %d read back different", off)
					return
				}
			}
		})
	}
	wg.Go(func() {
		for range 50 {
			if _, err := l.AppendAsLeader(simpleBatch(t, compress.None, 5, testEpoch.UnixMilli()), 7); err != nil {
				errs <- err
				return
			}
		}
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// TestReleaseIdleActiveUnmapsIndexes: an idle partition's active indexes
// are unmapped with its descriptor (vm.max_map_count); while so, lookups
// by offset and by timestamp pread them, a flush makes their entries
// durable, the appends that store entries map them again, and after a close and reopen
// every entry is there.
func TestReleaseIdleActiveUnmapsIndexes(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig()
	cfg.IndexIntervalBytes = 1 // an entry per batch
	l, err := Open(dir, cfg, Options{FileCache: NewFileCache(1)})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { l.Close() }()
	for i := range 10 {
		mustAppend(t, l, simpleBatch(t, compress.None, 2, testEpoch.UnixMilli()+int64(i)))
	}
	l.UpdateHighWatermark(l.LogEndOffset())
	if n := len(mappingsUnder(t, dir)); n != 2 {
		t.Fatalf("%d index files mapped while busy, want 2", n)
	}
	l.ReleaseIdleActive(testEpoch, time.Minute)
	if _, due := l.ReleaseIdleActive(testEpoch.Add(time.Minute), time.Minute); due {
		t.Fatal("still something to release after the idle time")
	}
	if m := mappingsUnder(t, dir); len(m) != 0 {
		t.Fatalf("index files mapped after the idle release: %v", m)
	}
	if n := logFDs(t, dir); n != 1 { // the cache of 1 holds it
		t.Fatalf("%d log descriptors", n)
	}
	check := func(what string) {
		t.Helper()
		res, err := l.Read(13, math.MaxInt32, l.LogEndOffset(), true)
		if err != nil {
			t.Fatalf("%s: read: %v", what, err)
		}
		hs := splitBatches(t, readSlices(t, res))
		res.Release()
		if len(hs) == 0 || hs[0].BaseOffset != 12 {
			t.Fatalf("%s: read at 13 starts at %+v, want the batch at 12", what, hs)
		}
		off, _, found, err := l.OffsetForTimestamp(testEpoch.UnixMilli() + 7)
		if err != nil || !found || off != 13 { // the second record of the batch at 12 is stamped +7
			t.Fatalf("%s: offset for timestamp +7 = %d, %v, %v; want 13", what, off, found, err)
		}
	}
	check("parked")
	if err := l.flush(); err != nil {
		t.Fatalf("flush of parked indexes: %v", err)
	}
	// The entries are stored (and the indexes mapped) indexPendingEntries
	// at a time.
	for i := range indexPendingEntries {
		mustAppend(t, l, simpleBatch(t, compress.None, 2, testEpoch.UnixMilli()+10+int64(i)))
	}
	if n := len(mappingsUnder(t, dir)); n != 2 {
		t.Fatalf("%d index files mapped after %d appends, want 2", n, indexPendingEntries)
	}
	if _, due := l.ReleaseIdleActive(testEpoch.Add(2*time.Minute), time.Minute); !due {
		t.Fatal("no release due after an append mapped the indexes again")
	}
	l.UpdateHighWatermark(l.LogEndOffset())
	check("mapped again")
	entries := l.active().offsetIndex.n
	if entries < 10 {
		t.Fatalf("%d offset index entries for 11 batches", entries)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l, err = Open(dir, cfg, Options{FileCache: NewFileCache(1)})
	if err != nil {
		t.Fatal(err)
	}
	l.UpdateHighWatermark(l.LogEndOffset())
	check("reopened")
	if got := l.active().offsetIndex.n; got != entries {
		t.Fatalf("offset index has %d entries after reopening, want %d", got, entries)
	}
}
