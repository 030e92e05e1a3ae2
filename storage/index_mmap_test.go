//go:build linux

package storage

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"unsafe"

	"github.com/strait/strait/storage/compress"
	"github.com/twmb/franz-go/pkg/kerr"
	"golang.org/x/sys/unix"
)

// Tests of the mmap path of index files (index.go): OSFS files only, which
// the FaultFS tests do not reach.

// mappingsUnder returns the files under dir mapped into this process, with
// how many mappings each (a removed file keeps its name plus " (deleted)").
func mappingsUnder(t testing.TB, dir string) map[string]int {
	t.Helper()
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 {
			continue
		}
		if p := strings.Join(fields[5:], " "); strings.HasPrefix(p, dir+"/") {
			out[p]++
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// fdsUnder returns the files under dir this process holds descriptors of,
// and how many descriptors the process holds in all.
func fdsUnder(t testing.TB, dir string) (under []string, total int) {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
		if err != nil {
			continue // the descriptor ReadDir used, closed since
		}
		total++
		if strings.HasPrefix(target, dir+"/") {
			under = append(under, target)
		}
	}
	return under, total
}

func offsetEntry(rel, pos int32) []byte {
	var e [offsetIndexEntrySize]byte
	binary.BigEndian.PutUint32(e[:], uint32(rel))
	binary.BigEndian.PutUint32(e[4:], uint32(pos))
	return e[:]
}

func openMmapIndex(t *testing.T, path string, maxBytes int32, fresh, active bool) *indexFile {
	t.Helper()
	ix, err := openIndexFile(OSFS{}, path, offsetIndexEntrySize, maxBytes, fresh, active)
	if err != nil {
		t.Fatal(err)
	}
	if !ix.useMmap || ix.file != nil {
		t.Fatalf("OSFS index not on the mmap path")
	}
	return ix
}

func TestIndexMmapHoldsNoDescriptor(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.index")
	ix := openMmapIndex(t, path, 1<<20, true, true)
	for i := range 1000 {
		if err := ix.append(offsetEntry(int32(i*2), int32(i*100)), true); err != nil {
			t.Fatal(err)
		}
	}
	if fds, _ := fdsUnder(t, dir); len(fds) != 0 {
		t.Fatalf("active index holds descriptors: %v", fds)
	}
	if m := mappingsUnder(t, dir); m[path] != 1 {
		t.Fatalf("active index mappings %v", m)
	}
	if fileSize(t, path) != 1<<20 {
		t.Fatalf("active index not preallocated: %d bytes", fileSize(t, path))
	}
	if ix.reserved < 8000 || ix.reserved >= 1<<20 {
		t.Fatalf("%d bytes reserved for 8000 bytes of entries", ix.reserved)
	}
	if err := ix.sync(); err != nil {
		t.Fatal(err)
	}
	if err := ix.seal(); err != nil {
		t.Fatal(err)
	}
	if fileSize(t, path) != 8000 {
		t.Fatalf("sealed index %d bytes, want 8000", fileSize(t, path))
	}
	if m := mappingsUnder(t, dir); len(m) != 0 {
		t.Fatalf("sealed index mapped before any search: %v", m)
	}
	oi := &offsetIndex{indexFile: ix, baseOffset: 100}
	o, p, err := oi.lookup(100 + 777)
	if err != nil || o != 100+776 || p != 388*100 {
		t.Fatalf("lookup = %d, %d, %v", o, p, err)
	}
	if m := mappingsUnder(t, dir); m[path] != 1 {
		t.Fatalf("sealed index not mapped after a search: %v", m)
	}
	if fds, _ := fdsUnder(t, dir); len(fds) != 0 {
		t.Fatalf("sealed index holds descriptors: %v", fds)
	}
	if err := ix.close(); err != nil {
		t.Fatal(err)
	}
	if m := mappingsUnder(t, dir); len(m) != 0 {
		t.Fatalf("closed index still mapped: %v", m)
	}
	if _, err := ix.search(func([]byte) bool { return true }); !errors.Is(err, errIndexClosed) {
		t.Fatalf("search of a closed index: %v", err)
	}
}

// Stores into the mapping reach the file without a sync or seal: a process
// killed after the append that stored them (indexPendingEntries at a time)
// leaves the entries in the page cache; those still pending are lost, as
// the log's unflushed tail is to a power loss (recovery rebuilds both).
func TestIndexMmapEntriesSurviveUncleanStop(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.index")
	ix := openMmapIndex(t, path, 4096, true, true)
	var want []byte
	for i := range indexPendingEntries + 5 {
		e := offsetEntry(int32(i), int32(i*10))
		if i < indexPendingEntries {
			want = append(want, e...)
		}
		if err := ix.append(e, true); err != nil {
			t.Fatal(err)
		}
	}
	if o, p, _ := (&offsetIndex{indexFile: ix}).lookup(indexPendingEntries + 4); o != indexPendingEntries+4 || p != (indexPendingEntries+4)*10 {
		t.Fatalf("lookup of a pending entry: %d %d", o, p)
	}
	ix.close() // no seal: the file stays preallocated, as after a crash
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(raw) != 4096 || !bytes.Equal(raw[:len(want)], want) || bytes.ContainsFunc(raw[len(want):], func(r rune) bool { return r != 0 }) {
		t.Fatalf("file after an unclean stop: %d bytes, entries %x", len(raw), raw[:len(want)])
	}
	ix2 := openMmapIndex(t, path, 4096, false, true)
	defer ix2.close()
	if ix2.n != 4096/8 {
		t.Fatalf("reopened untrimmed index has %d entries", ix2.n)
	}
	for i := range 20 {
		var buf [8]byte
		e, err := ix2.read(i, buf[:])
		if err != nil || !bytes.Equal(e, want[i*8:i*8+8]) {
			t.Fatalf("entry %d after reopen: %x, %v", i, e, err)
		}
	}
}

// A log killed without Close rebuilds its active segment's indexes at
// Open: the same entries as before.
func TestLogIndexesAfterCrash(t *testing.T) {
	dir := t.TempDir()
	cfg := recoveryConfig()
	l := openTestLog(t, dir, cfg, nil)
	stored := appendBatches(t, l, compress.None, 120, testEpoch.UnixMilli())
	entries := func(l *Log) (out [][2]int64) {
		for _, s := range l.segments {
			for i := range s.offsetIndex.n {
				o, p, err := s.offsetIndex.at(i)
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, [2]int64{o, p})
			}
			for i := range s.timeIndex.n {
				ts, o, err := s.timeIndex.at(i)
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, [2]int64{ts, o})
			}
		}
		return out
	}
	before := entries(l)
	activeBase := l.active().baseOffset
	crash(l)
	if got := fileSize(t, segPath(dir, activeBase, indexFileSuffix)); got != int64(cfg.SegmentIndexBytes/8*8) {
		t.Fatalf("active index after a crash: %d bytes", got)
	}
	l2 := openTestLog(t, dir, cfg, nil)
	defer l2.Close()
	verifyLog(t, l2, stored)
	// Closing appended the final time-index entry Kafka's close does; the
	// crashed log never got it, so compare offset-index entries and the
	// time-index entries both have.
	after := entries(l2)
	if len(after) < len(before) {
		t.Fatalf("%d index entries after a crash, %d before", len(after), len(before))
	}
	for i := range before {
		if before[i] != after[i] {
			t.Fatalf("index entry %d: %v before the crash, %v after", i, before[i], after[i])
		}
	}
}

func TestSealedIndexLookupAfterReopen(t *testing.T) {
	dir := t.TempDir()
	cfg := recoveryConfig()
	l := openTestLog(t, dir, cfg, nil)
	stored := appendBatches(t, l, compress.None, 150, testEpoch.UnixMilli())
	l.Close()

	l = openTestLog(t, dir, cfg, nil)
	defer l.Close()
	if len(l.segments) < 4 {
		t.Fatalf("%d segments", len(l.segments))
	}
	act := l.active()
	m := mappingsUnder(t, dir)
	if len(m) != 0 {
		t.Fatalf("mappings after Open %v, want none (an active index is mapped by its first append)", m)
	}
	if !act.offsetIndex.parked() || !act.timeIndex.parked() {
		t.Fatal("the active segment's indexes are not parked after Open")
	}

	if fds, _ := fdsUnder(t, dir); len(fds) != len(l.segments) {
		t.Fatalf("%d descriptors for %d segments: %v", len(fds), len(l.segments), fds)
	}

	// Concurrent reads map the sealed indexes (the race detector watches).
	leo := l.LogEndOffset()
	l.UpdateHighWatermark(leo)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Go(func() {
			for off := int64(g); off < leo; off += 7 {
				res, err := l.Read(off, 1, leo, true)
				if err != nil {
					errs <- err
					return
				}
				if len(res.Slices) != 1 {
					errs <- fmt.Errorf("read at %d: %d slices", off, len(res.Slices))
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	m = mappingsUnder(t, dir)
	for _, s := range l.segments {
		want := min(s.offsetIndex.n, 1)
		if s == act {
			want = 0 // parked: searched with pread until an append maps it
		}
		if m[segPath(dir, s.baseOffset, indexFileSuffix)] != want {
			t.Fatalf("segment %d offset index (%d entries, active %v, mapped %v) mapped %d times after reads, want %d", s.baseOffset, s.offsetIndex.n, s.offsetIndex.active, s.offsetIndex.mm != nil, m[segPath(dir, s.baseOffset, indexFileSuffix)], want)
		}
		if s != act && m[segPath(dir, s.baseOffset, timeIndexFileSuffix)] != 0 {
			t.Fatalf("sealed time index %d mapped without a time search", s.baseOffset)
		}
	}
	// A time search maps the time index of the segment it searches.
	first := l.segments[0]
	ts := first.maxTimestamp
	if o, _, ok, err := l.OffsetForTimestamp(ts); err != nil || !ok || o < first.baseOffset {
		t.Fatalf("OffsetForTimestamp(%d) = %d, %v, %v", ts, o, ok, err)
	}
	if mappingsUnder(t, dir)[segPath(dir, first.baseOffset, timeIndexFileSuffix)] != 1 {
		t.Fatal("time index not mapped after a time search")
	}
	if fds, _ := fdsUnder(t, dir); len(fds) != len(l.segments) {
		t.Fatalf("%d descriptors for %d segments after reads", len(fds), len(l.segments))
	}
	verifyLog(t, l, stored)
	// Appends past index.interval.bytes map the active indexes again.
	appendBatches(t, l, compress.None, 5, testEpoch.UnixMilli()+1e6)
	if act := l.active(); !act.offsetIndex.mappedActive() || !act.timeIndex.mappedActive() {
		t.Fatalf("active indexes not mapped after appends (offset index %d entries, time index %d)", act.offsetIndex.n, act.timeIndex.n)
	}
}

func TestIndexMmapTruncateEntries(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.index")
	ix := openMmapIndex(t, path, 4096, true, true)
	defer ix.close()
	oi := &offsetIndex{indexFile: ix}
	for i := range 10 {
		if err := oi.appendEntry(int64(i*10), int64(i*100)); err != nil {
			t.Fatal(err)
		}
	}
	// Pending entries (not stored yet) are cut in memory.
	if err := ix.truncateEntries(8); err != nil {
		t.Fatal(err)
	}
	if o, p, ok, err := oi.last(); !ok || err != nil || o != 70 || p != 700 {
		t.Fatalf("last after cutting pending entries: %d %d %v %v", o, p, ok, err)
	}
	if raw, _ := os.ReadFile(path); !bytes.Equal(raw[:80], make([]byte, 80)) {
		t.Fatalf("pending entries in the file: %x", raw[:80])
	}
	if err := ix.sync(); err != nil { // stores the 8
		t.Fatal(err)
	}
	// Active: the dropped entries are zeroed, the file stays preallocated.
	if err := ix.truncateEntries(4); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(path)
	if len(raw) != 4096 || !bytes.Equal(raw[32:80], make([]byte, 48)) || !bytes.Equal(raw[24:32], offsetEntry(30, 300)) {
		t.Fatalf("active index after truncateEntries(4): %d bytes, %x", len(raw), raw[:80])
	}
	if o, p, ok, err := oi.last(); !ok || err != nil || o != 30 || p != 300 {
		t.Fatalf("last after truncation: %d %d %v %v", o, p, ok, err)
	}
	if err := oi.appendEntry(45, 450); err != nil {
		t.Fatal(err)
	}
	if o, p, _ := oi.lookup(1000); o != 45 || p != 450 {
		t.Fatalf("lookup after append %d %d", o, p)
	}
	if err := ix.sync(); err != nil {
		t.Fatal(err)
	}

	// Sealed and mapped: the mapping goes, the file is cut.
	if err := ix.seal(); err != nil {
		t.Fatal(err)
	}
	if o, _, _ := oi.lookup(25); o != 20 {
		t.Fatalf("sealed lookup(25) = %d", o)
	}
	if mappingsUnder(t, dir)[path] != 1 {
		t.Fatal("sealed index not mapped after a lookup")
	}
	if err := ix.truncateEntries(2); err != nil {
		t.Fatal(err)
	}
	if fileSize(t, path) != 16 || len(mappingsUnder(t, dir)) != 0 {
		t.Fatalf("sealed index after truncateEntries(2): %d bytes, mappings %v", fileSize(t, path), mappingsUnder(t, dir))
	}
	if o, p, ok, err := oi.last(); !ok || err != nil || o != 10 || p != 100 {
		t.Fatalf("last after sealed truncation: %d %d %v %v", o, p, ok, err)
	}
	if o, _, _ := oi.lookup(1000); o != 10 {
		t.Fatalf("lookup after sealed truncation %d", o)
	}

	// Reactivated: preallocated and writable again.
	if err := ix.activate(); err != nil {
		t.Fatal(err)
	}
	if fileSize(t, path) != 4096 {
		t.Fatalf("reactivated index %d bytes", fileSize(t, path))
	}
	if err := oi.appendEntry(50, 500); err != nil {
		t.Fatal(err)
	}
	if o, p, _ := oi.lookup(1000); o != 50 || p != 500 || ix.n != 3 {
		t.Fatalf("after reactivation: lookup %d %d, %d entries", o, p, ix.n)
	}
	if err := ix.truncateEntries(0); err != nil {
		t.Fatal(err)
	}
	if _, _, ok, _ := oi.last(); ok {
		t.Fatal("last entry of an emptied index")
	}
}

func TestIndexMmapBadSizeIsCorrupt(t *testing.T) {
	dir := t.TempDir()
	for _, size := range []int{3, 13, 4097} {
		for _, active := range []bool{false, true} {
			path := filepath.Join(dir, fmt.Sprintf("%d-%v.index", size, active))
			if err := os.WriteFile(path, make([]byte, size), 0o644); err != nil {
				t.Fatal(err)
			}
			ix, err := openIndexFile(OSFS{}, path, offsetIndexEntrySize, 4096, false, active)
			if !errors.Is(err, errCorruptIndex) {
				t.Fatalf("%d-byte index (active %v): %v", size, active, err)
			}
			if ix != nil {
				t.Fatal("index returned with an error")
			}
			if fileSize(t, path) != int64(size) {
				t.Fatalf("corrupt index resized to %d", fileSize(t, path))
			}
		}
	}
	if fds, _ := fdsUnder(t, dir); len(fds) != 0 {
		t.Fatalf("descriptors left open: %v", fds)
	}
	if m := mappingsUnder(t, dir); len(m) != 0 {
		t.Fatalf("mappings left: %v", m)
	}
}

// Deleting segments whose indexes are mapped unmaps them when the files
// are removed (after file.delete.delay.ms), as does deleting the log.
func TestDeleteSegmentWithMappedIndex(t *testing.T) {
	dir := t.TempDir()
	cfg := recoveryConfig()
	cfg.RetentionMs = -1
	l := openTestLog(t, dir, cfg, nil)
	appendBatches(t, l, compress.None, 150, testEpoch.UnixMilli())
	leo := l.LogEndOffset()
	l.UpdateHighWatermark(leo)
	for off := int64(0); off < leo; off += 3 {
		res, err := l.Read(off, 1, leo, true)
		if err != nil {
			t.Fatal(err)
		}
		res.Release() // else the files stay open past their deletion, as they must for sendfile
		if _, _, _, err := l.OffsetForTimestamp(testEpoch.UnixMilli() + off); err != nil {
			t.Fatal(err)
		}
	}
	gone := l.segments[:2:2]
	for _, s := range gone {
		if mappingsUnder(t, dir)[segPath(dir, s.baseOffset, indexFileSuffix)] != 1 {
			t.Fatalf("segment %d's index not mapped after reads", s.baseOffset)
		}
	}
	if _, err := l.DeleteRecordsBefore(l.segments[2].baseOffset); err != nil {
		t.Fatal(err)
	}
	if n, err := l.DeleteOldSegments(testEpoch); err != nil || n != 2 {
		t.Fatalf("deleted %d segments (%v)", n, err)
	}
	for p := range mappingsUnder(t, dir) {
		for _, s := range gone {
			if strings.HasPrefix(filepath.Base(p), segmentName(s.baseOffset, "")) {
				t.Fatalf("deleted segment still mapped: %s", p)
			}
		}
	}
	for _, s := range gone {
		for _, suffix := range segmentFileSuffixes {
			if _, err := os.Stat(segPath(dir, s.baseOffset, suffix) + deletedFileSuffix); !os.IsNotExist(err) {
				t.Fatalf("deleted segment file left: %v", err)
			}
		}
	}
	// The rolls' background flushes open checkpoint files of their own.
	l.flushes.Wait()
	if fds, _ := fdsUnder(t, dir); len(fds) != len(l.segments) {
		t.Fatalf("%d descriptors for %d segments: %q", len(fds), len(l.segments), fds)
	}
	res, err := l.Read(l.LogStartOffset(), math.MaxInt64, leo, true)
	if err != nil || res.Size == 0 {
		t.Fatalf("read after deletion: %v", err)
	}
	res.Release()

	if err := l.Delete(); err != nil {
		t.Fatal(err)
	}
	parent := filepath.Dir(dir)
	for p := range mappingsUnder(t, parent) {
		if strings.HasPrefix(p, dir) {
			t.Fatalf("deleted log still mapped: %s", p)
		}
	}
	if fds, _ := fdsUnder(t, parent); len(fds) != 0 {
		t.Fatalf("deleted log holds descriptors: %v", fds)
	}
}

// Opening many partitions costs one descriptor per segment (its .log):
// indexes, transaction indexes, checkpoints, snapshots and the leader
// epoch file hold none between uses.
func TestManyLogsOneDescriptorPerSegment(t *testing.T) {
	root := t.TempDir()
	cfg := recoveryConfig()
	const partitions = 200
	_, baseline := fdsUnder(t, root)
	open := func() []*Log {
		logs := make([]*Log, partitions)
		for i := range logs {
			logs[i] = openTestLog(t, filepath.Join(root, fmt.Sprintf("t-%d", i)), cfg, producerClock())
		}
		return logs
	}
	check := func(logs []*Log, when string) {
		t.Helper()
		segments := 0
		for _, l := range logs {
			segments += len(l.segments)
		}
		fds, total := fdsUnder(t, root)
		for _, p := range fds {
			if !strings.HasSuffix(p, logFileSuffix) {
				t.Fatalf("%s: descriptor of %s held", when, p)
			}
		}
		if len(fds) != segments {
			t.Fatalf("%s: %d descriptors under the log directories for %d segments", when, len(fds), segments)
		}
		if total-baseline > segments+10 {
			t.Fatalf("%s: the process holds %d descriptors more than before opening %d segments", when, total-baseline, segments)
		}
		if m := mappingsUnder(t, root); len(m) > 2*partitions+segments {
			t.Fatalf("%s: %d files mapped", when, len(m))
		}
		t.Logf("%s: %d partitions, %d segments, %d descriptors under them, %d in the process", when, partitions, segments, len(fds), total)
	}

	logs := open()
	for i, l := range logs {
		appendBatches(t, l, compress.None, 40, testEpoch.UnixMilli())
		if i%10 == 0 { // an aborted transaction: a .txnindex
			appendTxn(t, l, 100, 0, 0, 2)
			appendMarker(t, l, 100, 0, false)
			if len(l.segments[len(l.segments)-1].txnIndex.entries) != 1 {
				t.Fatal("no aborted transaction indexed")
			}
		}
		l.UpdateHighWatermark(l.LogEndOffset())
		if err := l.flush(); err != nil {
			t.Fatal(err)
		}
		l.flushes.Wait() // a roll's flush opens the sealed index to fsync it
	}
	check(logs, "after appends")
	for _, l := range logs {
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if fds, _ := fdsUnder(t, root); len(fds) != 0 {
		t.Fatalf("closed logs hold descriptors: %v", fds)
	}
	if m := mappingsUnder(t, root); len(m) != 0 {
		t.Fatalf("closed logs hold mappings: %v", m)
	}

	logs = open()
	check(logs, "after reopening")
	for _, l := range logs {
		leo := l.LogEndOffset()
		for off := int64(0); off < leo; off += 5 {
			if _, err := l.Read(off, 1, leo, true); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := l.AbortedTransactions(0, leo); err != nil {
			t.Fatal(err)
		}
	}
	check(logs, "after reads")
	for _, l := range logs {
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// The mmap path's disk failures, injected below FaultFS's reach: a full
// disk when blocks are reserved fails the roll or the append with an
// error (not SIGBUS), and a failing msync fails the flush.
func TestIndexMmapReserveAndSyncFailures(t *testing.T) {
	enospc := func(*os.File, int64, int64) error { return syscall.ENOSPC }
	realFallocate, realMsync := fallocate, msync
	t.Cleanup(func() { fallocate, msync = realFallocate, realMsync })

	dir := t.TempDir()
	cfg := testConfig()
	cfg.SegmentBytes = 1000
	cfg.IndexIntervalBytes = 1
	l := openTestLog(t, dir, cfg, nil)
	var stored [][]byte
	for l.active().size < 900 {
		stored = append(stored, appendBatches(t, l, compress.None, 1, testEpoch.UnixMilli())...)
	}
	fallocate = enospc
	if _, err := l.AppendAsLeader(simpleBatch(t, compress.None, 5, testEpoch.UnixMilli()), 0); kerrCode(err) != kerr.KafkaStorageError.Code || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("append needing a roll on a full disk: %v", err)
	}
	if len(l.segments) != 1 || !l.active().offsetIndex.active {
		t.Fatalf("failed roll: %d segments, active index %v", len(l.segments), l.active().offsetIndex.active)
	}
	fallocate = realFallocate
	stored = append(stored, appendBatches(t, l, compress.None, 1, testEpoch.UnixMilli())...)
	if len(l.segments) != 2 {
		t.Fatalf("%d segments, want a roll once the disk has room", len(l.segments))
	}

	// Entries past the reserved blocks need a reservation when they are
	// stored (indexPendingEntries at a time); a full disk fails the append
	// that stores them and rolls it back. (Equal timestamps: only the
	// offset index grows.)
	cfg.SegmentBytes = 1 << 20
	l.SetConfig(cfg)
	l.mu.Lock()
	_, err := l.rollLocked(testEpoch)
	l.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	oi := l.active().offsetIndex
	// Up to the append whose store needs blocks past the reserved ones.
	for i := 0; len(oi.pending)/offsetIndexEntrySize != indexPendingEntries-1 || (oi.n+1)*offsetIndexEntrySize <= oi.reserved; i++ {
		if i == 10000 {
			t.Fatalf("no store past the reserved blocks after %d appends: %d entries, %d bytes reserved", i, oi.n, oi.reserved)
		}
		stored = append(stored, mustAppendStored(t, l, simpleBatch(t, compress.None, 1, testEpoch.UnixMilli())))
	}
	n, leo := oi.n, l.LogEndOffset()
	fallocate = enospc
	if _, err := l.AppendAsLeader(simpleBatch(t, compress.None, 1, testEpoch.UnixMilli()), 0); kerrCode(err) != kerr.KafkaStorageError.Code || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("append needing index blocks on a full disk: %v", err)
	}
	if oi.n != n || l.LogEndOffset() != leo {
		t.Fatalf("failed append left %d index entries (want %d), LEO %d (want %d)", oi.n, n, l.LogEndOffset(), leo)
	}
	fallocate = realFallocate
	stored = append(stored, mustAppendStored(t, l, simpleBatch(t, compress.None, 1, testEpoch.UnixMilli())))
	if len(oi.pending) != 0 || oi.stored()*offsetIndexEntrySize > oi.reserved {
		t.Fatalf("after the disk has room: %d pending bytes, %d entries stored, %d bytes reserved", len(oi.pending), oi.stored(), oi.reserved)
	}

	msync = func([]byte) error { return syscall.EIO }
	if err := l.flush(); kerrCode(err) != kerr.KafkaStorageError.Code || !errors.Is(err, syscall.EIO) {
		t.Fatalf("flush with a failing msync: %v", err)
	}
	msync = realMsync
	if err := l.flush(); err != nil {
		t.Fatal(err)
	}
	stored = append(stored, appendBatches(t, l, compress.None, 2, testEpoch.UnixMilli())...)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l2 := openTestLog(t, dir, cfg, nil)
	defer l2.Close()
	verifyLog(t, l2, stored)
}

func mustAppendStored(t *testing.T, l *Log, b []byte) []byte {
	t.Helper()
	mustAppend(t, l, b)
	return b // updated in place
}

// A sealed index reactivated on a full disk (a roll whose seal failed, a
// truncation) takes appends again, failing to store them until there is
// room.
func TestIndexMmapReactivateOnFullDisk(t *testing.T) {
	realFallocate := fallocate
	t.Cleanup(func() { fallocate = realFallocate })
	path := filepath.Join(t.TempDir(), "x.index")
	ix := openMmapIndex(t, path, 4096, true, true)
	defer ix.close()
	if err := ix.append(offsetEntry(1, 10), true); err != nil {
		t.Fatal(err)
	}
	if err := ix.seal(); err != nil {
		t.Fatal(err)
	}
	fallocate = func(*os.File, int64, int64) error { return syscall.ENOSPC }
	if err := ix.activate(); err != nil {
		t.Fatalf("reactivation on a full disk: %v", err)
	}
	if err := ix.append(offsetEntry(2, 20), true); err != nil || ix.n != 2 {
		t.Fatalf("append (pending) on a full disk: %v, %d entries", err, ix.n)
	}
	if err := ix.sync(); !errors.Is(err, syscall.ENOSPC) || ix.n != 2 {
		t.Fatalf("storing on a full disk: %v, %d entries", err, ix.n)
	}
	fallocate = realFallocate
	if err := ix.sync(); err != nil || ix.n != 2 || len(ix.pending) != 0 {
		t.Fatalf("storing once there is room: %v, %d entries, %d pending bytes", err, ix.n, len(ix.pending))
	}
	ix2, err := openIndexFile(OSFS{}, path+"2", offsetIndexEntrySize, 4096, true, true)
	if err != nil {
		t.Fatal(err)
	}
	ix2.close()
	fallocate = func(*os.File, int64, int64) error { return syscall.ENOSPC }
	if _, err := openIndexFile(OSFS{}, path+"3", offsetIndexEntrySize, 4096, true, true); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("new active index on a full disk: %v", err)
	}
}

// syncCountFS counts fsyncs (files and directories) and checkpoint writes.
type syncCountFS struct {
	OSFS
	mu    sync.Mutex
	syncs []string
}

type syncCountFile struct {
	File
	fs   *syncCountFS
	name string
}

func (f *syncCountFile) Sync() error {
	f.fs.note(f.name)
	return f.File.Sync()
}

func (c *syncCountFS) note(name string) {
	c.mu.Lock()
	c.syncs = append(c.syncs, filepath.Base(name))
	c.mu.Unlock()
}

func (c *syncCountFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	f, err := c.OSFS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &syncCountFile{File: f, fs: c, name: name}, nil
}

func (c *syncCountFS) SyncDir(p string) error {
	c.note(p + "/")
	return c.OSFS.SyncDir(p)
}

// Opening a new log fsyncs nothing and writes no checkpoint: creating
// 10,000 partitions at once would otherwise wait for 30,000 fsyncs. A
// crash before the first checkpoint then recovers the whole log.
func TestOpenNewLogWithoutFsync(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "p-0")
	fsys := &syncCountFS{}
	cfg := recoveryConfig()
	l, err := Open(dir, cfg, Options{FS: fsys})
	if err != nil {
		t.Fatal(err)
	}
	if len(fsys.syncs) != 0 {
		t.Fatalf("opening a new log fsynced %v", fsys.syncs)
	}
	if _, err := os.Stat(filepath.Join(dir, recoveryPointFile)); !os.IsNotExist(err) {
		t.Fatalf("recovery point checkpoint of a new log: %v", err)
	}
	var stored [][]byte
	for range 5 { // no roll
		stored = append(stored, mustAppendStored(t, l, simpleBatch(t, compress.None, 2, testEpoch.UnixMilli())))
	}
	crash(l)
	l = openTestLog(t, dir, cfg, nil)
	verifyLog(t, l, stored)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := readCheckpoint(OSFS{}, dir, recoveryPointFile); !ok || err != nil {
		t.Fatalf("recovery point checkpoint after a reopen and close: %v %v", ok, err)
	}

	// A log starting at a log start offset (its checkpoint left by an
	// earlier life) behaves alike.
	dir2 := filepath.Join(filepath.Dir(dir), "p-1")
	if err := os.MkdirAll(dir2, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := writeCheckpoint(OSFS{}, dir2, logStartOffsetFile, 500); err != nil {
		t.Fatal(err)
	}
	l = openTestLog(t, dir2, cfg, nil)
	if l.LogStartOffset() != 500 || l.LogEndOffset() != 500 {
		t.Fatalf("log start %d, end %d", l.LogStartOffset(), l.LogEndOffset())
	}
	info := mustAppend(t, l, simpleBatch(t, compress.None, 2, testEpoch.UnixMilli()))
	crash(l)
	l = openTestLog(t, dir2, cfg, nil)
	defer l.Close()
	if info.FirstOffset != 500 || l.LogEndOffset() != 502 {
		t.Fatalf("appended at %d, log end after a crash %d", info.FirstOffset, l.LogEndOffset())
	}
}

// A store into an active index faults in its page only, not a read-around
// of the preallocated file (read_ahead_kb: 8 MiB on some disks), which at
// 10,000 partitions made every index append a major fault of milliseconds.
func TestActiveIndexFaultsInOnePage(t *testing.T) {
	ix := openMmapIndex(t, filepath.Join(t.TempDir(), "x.index"), 10<<20, true, true)
	defer ix.close()
	if err := ix.append(offsetEntry(1, 1), true); err != nil {
		t.Fatal(err)
	}
	if err := ix.append(offsetEntry(2, 2), true); err != nil {
		t.Fatal(err)
	}
	vec := make([]byte, (len(ix.mm)+pageSize-1)/pageSize)
	if _, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&ix.mm[0])), uintptr(len(ix.mm)), uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
		t.Fatal(errno)
	}
	resident := 0
	for _, v := range vec {
		resident += int(v & 1)
	}
	if resident > 4 {
		t.Fatalf("%d pages of a 10 MiB active index resident after two appends", resident)
	}
}

// TestIndexMmapFaults: mapping goes through the FS, so a FaultFS that maps
// its files can fail it. Opening an active index whose mapping fails is an
// error (the log does not open), not a panic; a sealed index whose mapping
// fails is searched with pread; reactivating one is an error.
func TestIndexMmapFaults(t *testing.T) {
	dir := t.TempDir()
	fsys := NewFaultFS(nil)
	fsys.MapFiles(true)
	path := filepath.Join(dir, "00000000000000000000.index")

	ix, err := openIndexFile(fsys, path, offsetIndexEntrySize, 4096, true, true)
	if err != nil {
		t.Fatal(err)
	}
	if !ix.useMmap || ix.mm == nil {
		t.Fatalf("a FaultFS with MapFiles: useMmap %v, mapped %v", ix.useMmap, ix.mm != nil)
	}
	var e [offsetIndexEntrySize]byte
	for i := range 3 {
		binary.BigEndian.PutUint32(e[0:4], uint32(i*10))
		binary.BigEndian.PutUint32(e[4:8], uint32(i*100))
		if err := ix.append(e[:], true); err != nil {
			t.Fatal(err)
		}
	}
	if err := ix.seal(); err != nil {
		t.Fatal(err)
	}
	if err := ix.close(); err != nil {
		t.Fatal(err)
	}

	fsys.FailMmaps(true)
	if _, err := openIndexFile(fsys, path+".new", offsetIndexEntrySize, 4096, true, true); !errors.Is(err, ErrInjected) {
		t.Fatalf("creating an active index whose mapping fails: %v, want the injected error", err)
	}
	// A loaded active index is mapped by the first append that stores
	// entries (indexPendingEntries), which fails and adds none.
	loaded, err := openIndexFile(fsys, path, offsetIndexEntrySize, 4096, false, true)
	if err != nil {
		t.Fatalf("opening a loaded active index (parked, unmapped): %v", err)
	}
	for range indexPendingEntries - 1 {
		if err := loaded.append(e[:], true); err != nil {
			t.Fatalf("pending append to a loaded active index: %v", err)
		}
	}
	if err := loaded.append(e[:], true); !errors.Is(err, ErrInjected) || loaded.n != 3+indexPendingEntries-1 {
		t.Fatalf("first storing append to a loaded active index whose mapping fails: %v, %d entries; want the injected error", err, loaded.n)
	}
	loaded.close()
	sealed, err := openIndexFile(fsys, path, offsetIndexEntrySize, 4096, false, false)
	if err != nil {
		t.Fatal(err)
	}
	defer sealed.close()
	i, err := sealed.search(func(e []byte) bool { return binary.BigEndian.Uint32(e) > 10 })
	if err != nil || i != 2 {
		t.Fatalf("searching a sealed index whose mapping fails: %d, %v; want 2 (pread)", i, err)
	}
	if err := sealed.activate(); !errors.Is(err, ErrInjected) {
		t.Fatalf("activating a sealed index whose mapping fails: %v, want the injected error", err)
	}

	// A whole log on such an FS: Open reports the failure.
	logDir := t.TempDir()
	if _, err := Open(logDir, testConfig(), Options{FS: fsys}); !errors.Is(err, ErrInjected) {
		t.Fatalf("opening a log whose index mapping fails: %v, want the injected error", err)
	}
	fsys.FailMmaps(false)
	l, err := Open(logDir, testConfig(), Options{FS: fsys})
	if err != nil {
		t.Fatal(err)
	}
	if !l.active().offsetIndex.useMmap {
		t.Fatal("the log's index is not on the mmap path")
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestCloseWritesFinalTimeEntryOfParkedIndex: a log reopened and appended
// to without reaching index.interval.bytes keeps its active indexes parked;
// Close writes the final time-index entry through a descriptor (no mapping)
// and the next open finds it.
func TestCloseWritesFinalTimeEntryOfParkedIndex(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig()
	l := openTestLog(t, dir, cfg, nil)
	mustAppend(t, l, simpleBatch(t, compress.None, 2, testEpoch.UnixMilli()))
	l.Close()
	l = openTestLog(t, dir, cfg, nil)
	ts := testEpoch.UnixMilli() + 5000
	info := mustAppend(t, l, simpleBatch(t, compress.None, 3, ts))
	if !l.active().timeIndex.parked() {
		t.Fatal("time index mapped by an append that added no index entry")
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openTestLog(t, dir, cfg, nil)
	gotTs, gotOff, ok, err := l.active().timeIndex.loadLast()
	l.Close()
	if err != nil || !ok || gotTs != ts+2 || gotOff != info.LastOffset {
		t.Fatalf("last time-index entry (%d, %d, %v, %v), want (%d, %d)", gotTs, gotOff, ok, err, ts+2, info.LastOffset)
	}
}

// TestIndexPendingEntries: an active index stores its entries
// indexPendingEntries at a time; searches find the pending ones, mapped or
// parked (pread for the stored ones), and trim stores them (with pwrite
// when parked), so that the sealed file holds every entry.
func TestIndexPendingEntries(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.index")
	ix := openMmapIndex(t, path, 4096, true, true)
	defer ix.close()
	oi := &offsetIndex{indexFile: ix}
	const total = indexPendingEntries + 8
	for i := range total {
		if err := oi.appendEntry(int64(i*10), int64(i*100)); err != nil {
			t.Fatal(err)
		}
	}
	if ix.stored() != indexPendingEntries || len(ix.pending) != 8*offsetIndexEntrySize {
		t.Fatalf("%d entries stored, %d pending bytes; want %d and %d", ix.stored(), len(ix.pending), indexPendingEntries, 8*offsetIndexEntrySize)
	}
	lookups := func(what string) {
		t.Helper()
		for _, i := range []int{0, indexPendingEntries - 1, indexPendingEntries, total - 1} {
			if o, p, err := oi.lookup(int64(i*10 + 5)); err != nil || o != int64(i*10) || p != int64(i*100) {
				t.Fatalf("%s: lookup(%d) = %d, %d, %v", what, i*10+5, o, p, err)
			}
		}
		if o, p, err := oi.at(indexPendingEntries + 1); err != nil || o != (indexPendingEntries+1)*10 || p != (indexPendingEntries+1)*100 {
			t.Fatalf("%s: entry %d = %d, %d, %v", what, indexPendingEntries+1, o, p, err)
		}
	}
	lookups("mapped")
	if err := ix.park(); err != nil { // stores the pending entries, unmaps
		t.Fatal(err)
	}
	if !ix.parked() || ix.pending != nil {
		t.Fatalf("after park: parked %v, %d pending bytes", ix.parked(), len(ix.pending))
	}
	if err := oi.appendEntry(total*10, total*100); err != nil { // pending, stays parked
		t.Fatal(err)
	}
	if !ix.parked() {
		t.Fatal("a pending append mapped the parked index")
	}
	lookups("parked")
	if o, _, err := oi.lookup(total * 10); err != nil || o != total*10 {
		t.Fatalf("parked: lookup of the pending entry = %d, %v", o, err)
	}
	if err := ix.trim(); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(raw) != (total+1)*offsetIndexEntrySize {
		t.Fatalf("trimmed file %d bytes, want %d", len(raw), (total+1)*offsetIndexEntrySize)
	}
	for i := range total + 1 {
		if e := raw[i*offsetIndexEntrySize : (i+1)*offsetIndexEntrySize]; !bytes.Equal(e, offsetEntry(int32(i*10), int32(i*100))) {
			t.Fatalf("entry %d in the file: %x", i, e)
		}
	}
}
