package storage

import (
	"bytes"
	"math"
	"os"
	"testing"

	"github.com/strait/strait/recordbatch"
	"github.com/strait/strait/storage/compress"
)

func recoveryConfig() LogConfig {
	cfg := testConfig()
	cfg.SegmentBytes = 4096
	cfg.IndexIntervalBytes = 300
	return cfg
}

// buildSegmentedLog appends enough batches for several segments.
func buildSegmentedLog(t *testing.T, dir string) (*Log, [][]byte) {
	t.Helper()
	l := openTestLog(t, dir, recoveryConfig(), nil)
	stored := appendBatches(t, l, compress.None, 150, testEpoch.UnixMilli())
	if len(l.segments) < 4 {
		t.Fatalf("only %d segments", len(l.segments))
	}
	// The rolls' flushes done, so that the recovery point is at the last
	// roll whatever the timing, as in a log that ran a while.
	l.flushes.Wait()
	return l, stored
}

// verifyLog checks that the log holds exactly want (whole batches, byte
// for byte), that every batch is found by offset, and that appends
// continue at the right offset and read back.
func verifyLog(t *testing.T, l *Log, want [][]byte) {
	t.Helper()
	var leo int64
	if len(want) > 0 {
		h := parseBatchHeader(want[len(want)-1])
		leo = h.NextOffset()
	}
	if l.LogEndOffset() != leo {
		t.Fatalf("LEO %d, want %d", l.LogEndOffset(), leo)
	}
	res, err := l.Read(0, math.MaxInt64, leo, false)
	if err != nil {
		t.Fatal(err)
	}
	if got := readSlices(t, res); !bytes.Equal(got, bytes.Join(want, nil)) {
		t.Fatalf("log holds %d bytes, want %d", len(got), len(bytes.Join(want, nil)))
	}
	for _, b := range want {
		h := parseBatchHeader(b)
		res, err := l.Read(h.LastOffset(), 1, leo, true)
		if err != nil {
			t.Fatal(err)
		}
		if got := readSlices(t, res); !bytes.Equal(got, b) {
			t.Fatalf("read at %d returned another batch", h.LastOffset())
		}
	}
	info := mustAppend(t, l, simpleBatch(t, compress.None, 3, testEpoch.UnixMilli()))
	if info.FirstOffset != leo {
		t.Fatalf("append after recovery at %d, want %d", info.FirstOffset, leo)
	}
	res, err = l.Read(leo, math.MaxInt64, leo+3, false)
	if err != nil {
		t.Fatal(err)
	}
	if hs := splitBatches(t, readSlices(t, res)); len(hs) != 1 || hs[0].BaseOffset != leo || hs[0].RecordCount != 3 {
		t.Fatalf("appended batch reads back as %+v", hs)
	}
}

// batchesBefore returns the prefix of stored whose batches end at or before
// file position pos of the segment with the given base offset.
func segmentBatchPositions(stored [][]byte, base int64, segs []*segment) (first int, positions []int64) {
	first = -1
	var pos int64
	for i, b := range stored {
		h := parseBatchHeader(b)
		if h.BaseOffset < base {
			continue
		}
		// stop at the next segment
		for _, s := range segs {
			if s.baseOffset > base && h.BaseOffset >= s.baseOffset {
				return first, positions
			}
		}
		if first < 0 {
			first = i
		}
		positions = append(positions, pos)
		pos += int64(len(b))
	}
	return first, positions
}

func TestRecoveryAfterCrashWithoutDamage(t *testing.T) {
	dir := t.TempDir()
	l, stored := buildSegmentedLog(t, dir)
	crash(l)
	l2 := openTestLog(t, dir, recoveryConfig(), nil)
	defer l2.Close()
	verifyLog(t, l2, stored)
}

func TestRecoveryTornTail(t *testing.T) {
	dir := t.TempDir()
	l, stored := buildSegmentedLog(t, dir)
	active := l.active()
	path := segPath(dir, active.baseOffset, logFileSuffix)
	size := active.size
	crash(l)
	last := stored[len(stored)-1]
	if err := os.Truncate(path, size-int64(len(last))/2); err != nil {
		t.Fatal(err)
	}
	l2 := openTestLog(t, dir, recoveryConfig(), nil)
	defer l2.Close()
	verifyLog(t, l2, stored[:len(stored)-1])
}

func TestRecoveryZeroedTail(t *testing.T) {
	dir := t.TempDir()
	l, stored := buildSegmentedLog(t, dir)
	active := l.active()
	path := segPath(dir, active.baseOffset, logFileSuffix)
	crash(l)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(make([]byte, 5000))
	f.Close()
	l2 := openTestLog(t, dir, recoveryConfig(), nil)
	defer l2.Close()
	if got := fileSize(t, path); got != active.size {
		t.Fatalf("zeroed tail not cut: %d bytes, want %d", got, active.size)
	}
	verifyLog(t, l2, stored)
}

func TestRecoveryBitFlipInActiveSegment(t *testing.T) {
	dir := t.TempDir()
	l, stored := buildSegmentedLog(t, dir)
	active := l.active()
	first, positions := segmentBatchPositions(stored, active.baseOffset, l.segments)
	if len(positions) < 3 {
		t.Fatalf("active segment has %d batches", len(positions))
	}
	k := len(positions) / 2
	crash(l)
	flipByte(t, segPath(dir, active.baseOffset, logFileSuffix), positions[k]+recordbatch.HeaderSize+2)
	l2 := openTestLog(t, dir, recoveryConfig(), nil)
	defer l2.Close()
	verifyLog(t, l2, stored[:first+k])
}

func TestRecoveryBitFlipMidLogDropsLaterSegments(t *testing.T) {
	dir := t.TempDir()
	l, stored := buildSegmentedLog(t, dir)
	seg := l.segments[1]
	first, positions := segmentBatchPositions(stored, seg.baseOffset, l.segments)
	k := len(positions) / 2
	nseg := len(l.segments)
	crash(l)
	// Without a recovery point every segment is re-validated (with one,
	// flushed segments are trusted, as in Kafka).
	if err := os.Remove(dir + "/" + recoveryPointFile); err != nil {
		t.Fatal(err)
	}
	flipByte(t, segPath(dir, seg.baseOffset, logFileSuffix), positions[k]+recordbatch.PosCRC+1)
	l2 := openTestLog(t, dir, recoveryConfig(), nil)
	defer l2.Close()
	if len(l2.segments) != 2 {
		t.Fatalf("%d segments after recovery, want 2 of %d", len(l2.segments), nseg)
	}
	for _, s := range []string{logFileSuffix, indexFileSuffix, timeIndexFileSuffix} {
		if _, err := os.Stat(segPath(dir, l.segments[2].baseOffset, s)); !os.IsNotExist(err) {
			t.Fatalf("later segment file %s survived", s)
		}
	}
	verifyLog(t, l2, stored[:first+k])
}

// TestRecoveryLostTailMidLogDropsLaterSegments: a power loss can keep a
// later segment's directory entry (any fsync of the directory makes it
// durable) while an earlier segment loses its unsynced tail, cut cleanly at
// a batch boundary. The log must not come back with a hole in its offsets:
// the later segments go, as after a corrupt tail.
func TestRecoveryLostTailMidLogDropsLaterSegments(t *testing.T) {
	dir := t.TempDir()
	l, stored := buildSegmentedLog(t, dir)
	seg := l.segments[1]
	first, positions := segmentBatchPositions(stored, seg.baseOffset, l.segments)
	k := len(positions) / 2
	nseg := len(l.segments)
	crash(l)
	if err := os.Remove(dir + "/" + recoveryPointFile); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(segPath(dir, seg.baseOffset, logFileSuffix), positions[k]); err != nil {
		t.Fatal(err)
	}
	l2 := openTestLog(t, dir, recoveryConfig(), nil)
	defer l2.Close()
	if len(l2.segments) != 2 {
		t.Fatalf("%d segments after recovery, want 2 of %d", len(l2.segments), nseg)
	}
	if _, err := os.Stat(segPath(dir, l.segments[2].baseOffset, logFileSuffix)); !os.IsNotExist(err) {
		t.Fatal("a segment after the hole survived")
	}
	verifyLog(t, l2, stored[:first+k])
}

func TestRecoveryRebuildsMissingIndexes(t *testing.T) {
	dir := t.TempDir()
	l, stored := buildSegmentedLog(t, dir)
	segs := append([]*segment(nil), l.segments...)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	paths := []string{
		segPath(dir, segs[1].baseOffset, indexFileSuffix),
		segPath(dir, segs[2].baseOffset, timeIndexFileSuffix),
		segPath(dir, segs[len(segs)-1].baseOffset, indexFileSuffix),
	}
	orig := readFiles(t, paths)
	for _, p := range paths {
		os.Remove(p)
	}
	l2 := checkRebuilt(t, openTestLog(t, dir, recoveryConfig(), nil), paths, orig)
	verifyLog(t, l2, stored)
	l2.Close()
}

func TestRecoveryRebuildsTruncatedIndexes(t *testing.T) {
	dir := t.TempDir()
	l, stored := buildSegmentedLog(t, dir)
	segs := append([]*segment(nil), l.segments...)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	cuts := map[string]int64{
		segPath(dir, segs[0].baseOffset, indexFileSuffix):               3,  // mid-entry
		segPath(dir, segs[1].baseOffset, indexFileSuffix):               8,  // one whole entry
		segPath(dir, segs[2].baseOffset, timeIndexFileSuffix):           12, // one whole entry
		segPath(dir, segs[len(segs)-1].baseOffset, timeIndexFileSuffix): 5,
	}
	var paths []string
	for p := range cuts {
		paths = append(paths, p)
	}
	orig := readFiles(t, paths)
	for p, cut := range cuts {
		if err := os.Truncate(p, int64(len(orig[p]))-cut); err != nil {
			t.Fatal(err)
		}
	}
	l2 := checkRebuilt(t, openTestLog(t, dir, recoveryConfig(), nil), paths, orig)
	verifyLog(t, l2, stored)
	l2.Close()
}

func TestRecoveryOfCorruptIndexEntry(t *testing.T) {
	dir := t.TempDir()
	l, stored := buildSegmentedLog(t, dir)
	base := l.segments[1].baseOffset
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	p := segPath(dir, base, indexFileSuffix)
	orig := readFiles(t, []string{p})
	b := append([]byte(nil), orig[p]...)
	b[len(b)-1] ^= 0x10 // last entry's position now points mid-batch
	os.WriteFile(p, b, 0o644)
	l2 := checkRebuilt(t, openTestLog(t, dir, recoveryConfig(), nil), []string{p}, orig)
	verifyLog(t, l2, stored)
	l2.Close()
}

func flipByte(t *testing.T, path string, pos int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var b [1]byte
	f.ReadAt(b[:], pos)
	b[0] ^= 0x01
	if _, err := f.WriteAt(b[:], pos); err != nil {
		t.Fatal(err)
	}
}

func readFiles(t *testing.T, paths []string) map[string][]byte {
	t.Helper()
	m := map[string][]byte{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		m[p] = b
	}
	return m
}

// checkRebuilt closes the log (trimming indexes) and compares the index
// files with the originals, then reopens the log.
func checkRebuilt(t *testing.T, l *Log, paths []string, orig map[string][]byte) *Log {
	t.Helper()
	dir, cfg := l.Dir(), *l.config()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatalf("index not rebuilt: %v", err)
		}
		if !bytes.Equal(b, orig[p]) {
			t.Fatalf("rebuilt %s differs: %d bytes, original %d", p, len(b), len(orig[p]))
		}
	}
	return openTestLog(t, dir, cfg, nil)
}
