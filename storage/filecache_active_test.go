package storage

import (
	"bytes"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/strait/strait/storage/compress"
)

// readAllBatches reads l from offset 0 to its end and returns the bytes.
func readAllBatches(t *testing.T, l *Log) []byte {
	t.Helper()
	leo := l.LogEndOffset()
	l.UpdateHighWatermark(leo)
	res, err := l.Read(0, math.MaxInt32, leo, true)
	if err != nil {
		t.Fatalf("read %s: %v", l.Dir(), err)
	}
	defer res.Release()
	return readSlices(t, res)
}

// TestFileCacheBoundsActiveSegments: logs appended to in turn, more of
// them than the cache's total bound, hold at most the total bound of
// segment log descriptors between them (active files included) plus the
// files a read result pins, through rolls; every append succeeds and
// every batch reads back byte for byte.
func TestFileCacheBoundsActiveSegments(t *testing.T) {
	root := t.TempDir()
	const logs, sealed, total = 12, 2, 5
	cache := NewFileCacheBounds(sealed, total)
	cfg := recoveryConfig() // 4 KiB segments: several rolls per log
	ls := make([]*Log, logs)
	stored := make([][]byte, logs)
	for i := range ls {
		l, err := Open(filepath.Join(root, fmt.Sprintf("t-%d", i)), cfg, Options{FileCache: cache})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		ls[i] = l
	}
	check := func(what string, pinned int) {
		t.Helper()
		if n := cache.Open(); n > total+pinned {
			t.Fatalf("%s: the cache holds %d files open, bound %d + %d pinned", what, n, total, pinned)
		}
		if n := logFDs(t, root); n > total+pinned {
			under, _ := fdsUnder(t, root)
			t.Fatalf("%s: %d segment log descriptors, bound %d + %d pinned: %q", what, n, total, pinned, under)
		}
	}
	check("after opening", 0)
	for round := range 80 {
		for i, l := range ls {
			b := simpleBatch(t, compress.None, 1+(round+i)%5, testEpoch.UnixMilli()+int64(round))
			mustAppend(t, l, b)
			stored[i] = append(stored[i], b...) // b now carries its offsets
			l.flushes.Wait()                    // a roll's flush pins the sealed file while it runs
			check(fmt.Sprintf("round %d, log %d", round, i), 0)
		}
	}
	rolled, closedActive := 0, 0
	for _, l := range ls {
		rolled += len(l.segments) - 1
		if l.active().log.OS() == nil {
			closedActive++
		}
	}
	if rolled < logs || closedActive == 0 {
		t.Fatalf("%d rolls, %d active files closed: the test should roll every log and close active files", rolled, closedActive)
	}

	// A read result pins every segment of the first log while the others
	// take appends: those files stay open and readable.
	leo := ls[0].LogEndOffset()
	ls[0].UpdateHighWatermark(leo)
	res, err := ls[0].Read(0, math.MaxInt32, leo, true)
	if err != nil {
		t.Fatal(err)
	}
	pinned := len(res.Slices)
	for _, l := range ls[1:] {
		mustAppend(t, l, simpleBatch(t, compress.None, 2, testEpoch.UnixMilli()))
		check("appends while a read pins "+fmt.Sprint(pinned)+" files", pinned)
	}
	if got := readSlices(t, res); !bytes.Equal(got, stored[0]) {
		t.Fatal("the pinned files read back other bytes")
	}
	res.Release()
	for i, l := range ls[1:] {
		got := readAllBatches(t, l)
		if !bytes.HasPrefix(got, stored[i+1]) || len(splitBatches(t, got[len(stored[i+1]):])) != 1 {
			t.Fatalf("log %d: %d bytes read back, want its %d bytes and one more batch", i+1, len(got), len(stored[i+1]))
		}
	}
	check("after the reads", 0)
}

// TestEvictedActiveSegmentAppendsAndReads: a log whose active segment's
// file the cache closed serves a read (the slices a fetch sends from),
// keeps a pinned file open while other logs' appends evict, appends again,
// flushes, and keeps every batch through a close and reopen.
func TestEvictedActiveSegmentAppendsAndReads(t *testing.T) {
	root := t.TempDir()
	const total = 2
	cache := NewFileCacheBounds(1, total)
	open := func(name string, c *FileCache) *Log {
		l, err := Open(filepath.Join(root, name), testConfig(), Options{FileCache: c})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	a := open("a-0", cache)
	var others []*Log
	for _, name := range []string{"b-0", "c-0", "d-0"} {
		l := open(name, cache)
		defer l.Close()
		others = append(others, l)
	}
	n := 0
	// evictA appends to the other logs until the cache closes a's file.
	evictA := func(what string) {
		t.Helper()
		for i := 0; a.active().log.OS() != nil; i++ {
			if i == 30 {
				t.Fatalf("%s: a's active file still open after %d appends to other logs", what, i)
			}
			mustAppend(t, others[n%len(others)], simpleBatch(t, compress.None, 1, testEpoch.UnixMilli()))
			n++
		}
	}
	first := simpleBatch(t, compress.None, 3, testEpoch.UnixMilli())
	mustAppend(t, a, first)
	evictA("after the first append")

	leo := a.LogEndOffset()
	a.UpdateHighWatermark(leo)
	res, err := a.Read(1, math.MaxInt32, leo, true)
	if err != nil || len(res.Slices) != 1 {
		t.Fatalf("read of the evicted active segment: %v, %d slices", err, len(res.Slices))
	}
	for i := range 6 {
		mustAppend(t, others[i%len(others)], simpleBatch(t, compress.None, 1, testEpoch.UnixMilli()))
		if got := logFDs(t, root); got > total+1 {
			t.Fatalf("%d segment log descriptors, want at most %d and the pinned one", got, total)
		}
	}
	if a.active().log.OS() == nil {
		t.Fatal("a's pinned file was closed")
	}
	if got := readSlices(t, res); !bytes.Equal(got, first) {
		t.Fatal("the slices of the evicted active segment read back other bytes")
	}
	res.Release()
	if got := cache.Open(); got > total {
		t.Fatalf("the cache holds %d files after the unpin, bound %d", got, total)
	}

	evictA("after the read")
	second := simpleBatch(t, compress.None, 2, testEpoch.UnixMilli()+5)
	if info := mustAppend(t, a, second); info.FirstOffset != 3 {
		t.Fatalf("append after eviction at %d, want 3", info.FirstOffset)
	}
	evictA("after the second append")
	if err := a.flush(); err != nil {
		t.Fatalf("flush of an evicted active segment: %v", err)
	}
	want := append(append([]byte{}, first...), second...)
	if got := readAllBatches(t, a); !bytes.Equal(got, want) {
		t.Fatalf("read back %d bytes, want %d", len(got), len(want))
	}
	evictA("after the read of both batches")
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	a = open("a-0", NewFileCacheBounds(1, total))
	defer a.Close()
	if got := readAllBatches(t, a); !bytes.Equal(got, want) {
		t.Fatalf("after a reopen read back %d bytes, want %d", len(got), len(want))
	}
}

// TestFileCacheShedsOnEMFILE: when opening a segment's log file fails for
// want of descriptors, the cache closes some of its unpinned files and the
// open is tried again, so the append succeeds; a roll's new segment too.
func TestFileCacheShedsOnEMFILE(t *testing.T) {
	root := t.TempDir()
	fsys := NewFaultFS(nil)
	var failNext atomic.Int32 // opens of .log files to fail
	fsys.FailOpens(func(name string) error {
		if strings.HasSuffix(name, logFileSuffix) && failNext.Load() > 0 {
			failNext.Add(-1)
			return syscall.EMFILE
		}
		return nil
	})
	cache := NewFileCacheBounds(2, 3)
	cfg := recoveryConfig()
	var ls []*Log
	for i := range 5 {
		l, err := Open(filepath.Join(root, fmt.Sprintf("t-%d", i)), cfg, Options{FS: fsys, FileCache: cache})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		ls = append(ls, l)
	}
	stored := make([][]byte, len(ls))
	failed := 0
	for round := range 20 {
		for i, l := range ls {
			reopen := l.active().log.OS() == nil
			if reopen || round%7 == 0 { // a reopen, or a roll's create
				failNext.Store(1)
			}
			before := cache.Closes()
			b := simpleBatch(t, compress.None, 3, testEpoch.UnixMilli()+int64(round))
			mustAppend(t, l, b)
			stored[i] = append(stored[i], b...)
			l.flushes.Wait()
			if failNext.Load() == 0 {
				failed++
				if cache.Closes() == before {
					t.Fatalf("round %d, log %d: an open failed with EMFILE and the cache closed nothing", round, i)
				}
			}
			failNext.Store(0)
		}
	}
	if failed < len(ls) {
		t.Fatalf("only %d opens failed; the test should fail many", failed)
	}
	for i, l := range ls {
		if got := readAllBatches(t, l); !bytes.Equal(got, stored[i]) {
			t.Fatalf("log %d read back %d bytes, want %d", i, len(got), len(stored[i]))
		}
	}
}

func TestOpenFilesBound(t *testing.T) {
	for _, c := range []struct {
		limit uint64
		want  int
	}{
		{0, math.MaxInt}, {1 << 40, math.MaxInt},
		{20000, 15000}, {1 << 20, 786432}, {65536, 49152},
		{8192, 4096}, {4096, 2048}, {1024, 512}, {2, 1},
	} {
		if got := OpenFilesBound(c.limit); got != c.want {
			t.Errorf("OpenFilesBound(%d) = %d, want %d", c.limit, got, c.want)
		}
	}
}

// TestFileCachePinnedPastBound: reads pinning more files than the total
// bound (a fetch over many partitions) keep them all open and readable,
// appends to the logs meanwhile succeed, and once the reads are released
// the cache is back under its bound.
func TestFileCachePinnedPastBound(t *testing.T) {
	root := t.TempDir()
	const logs, total = 100, 4
	cache := NewFileCacheBounds(2, total)
	var ls []*Log
	var held []ReadResult
	want := make([][]byte, logs)
	for i := range logs {
		l, err := Open(filepath.Join(root, fmt.Sprintf("t-%d", i)), testConfig(), Options{FileCache: cache})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		ls = append(ls, l)
		want[i] = simpleBatch(t, compress.None, 2, testEpoch.UnixMilli())
		mustAppend(t, l, want[i])
	}
	for _, l := range ls {
		l.UpdateHighWatermark(l.LogEndOffset())
		res, err := l.Read(0, math.MaxInt32, l.LogEndOffset(), true)
		if err != nil || len(res.Slices) != 1 {
			t.Fatalf("read: %v, %d slices", err, len(res.Slices))
		}
		held = append(held, res)
	}
	if n := cache.Open(); n != logs {
		t.Fatalf("%d files open with %d pinned", n, logs)
	}
	for i, l := range ls {
		mustAppend(t, l, simpleBatch(t, compress.None, 1, testEpoch.UnixMilli()))
		if got := readSlices(t, held[i]); !bytes.Equal(got, want[i]) {
			t.Fatalf("log %d: the pinned slice read back other bytes", i)
		}
	}
	for i := range held {
		held[i].Release()
	}
	if n := cache.Open(); n > total {
		t.Fatalf("%d files open after the reads' release, bound %d", n, total)
	}
	if n := logFDs(t, root); n > total {
		t.Fatalf("%d segment log descriptors after the reads' release, bound %d", n, total)
	}
}
