//go:build !race

package storage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/strait/strait/recordbatch"
	"github.com/strait/strait/storage/compress"
)

// These bounds measure the heap, which the race detector's shadow memory
// and slowdown distort; the behaviour they go with is tested under -race
// in clean_stream_test.go.

// cleanAll runs the cleaner until no log needs cleaning (at most 8 times)
// and returns the bytes allocated meanwhile: runtime.MemStats.TotalAlloc
// only grows, so its delta bounds how far the heap can have grown, whatever
// the collector did in between.
func cleanAll(t *testing.T, c *Cleaner) (allocated uint64, results []CleanResult) {
	t.Helper()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := 0; i < 8; i++ {
		res, cleaned, err := c.runOnce(testEpoch)
		if err != nil {
			t.Fatalf("clean: %v", err)
		}
		if !cleaned {
			break
		}
		results = append(results, res)
	}
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc, results
}

// Issue 17, row "a 56 KiB zstd batch on a compacted topic holding two
// 900 MiB values": the cleaner decompressed whole batches (5.2 GiB, kept).
// Here two 300 MiB values in one zstd batch of a few KiB; a later record
// supersedes one, so the batch is mapped, walked and rewritten with the
// other 300 MiB value streaming through the recompressor. The cleaning
// allocates under 32 MiB in all (the zstd decoder's 4 MiB window and
// encoder, the 1 MiB offset map, 64 KiB windows and I/O buffers), not the
// values' 600 MiB; another compacted log is cleaned by the same cleaner.
func TestCleanerMemoryBoundedByWindowNotValues(t *testing.T) {
	const value = 300 << 20
	root := t.TempDir()
	clock := &testClock{testEpoch}
	cfg := compactConfig()
	cfg.SegmentBytes = 1 << 20
	huge := openTestLog(t, filepath.Join(root, "huge-0"), cfg, clock)
	defer huge.Close()
	payload := append(zeroValueRecord(t, []byte("big-a"), 0, value), zeroValueRecord(t, []byte("big-b"), 1, value)...)
	batch := withPayload(t, compress.Zstd, 2, payload)
	t.Logf("batch of %d bytes holding two %d MiB values", len(batch), value>>20)
	mustAppend(t, huge, batch)
	mustAppend(t, huge, keyedBatch(t, compress.None, testEpoch.UnixMilli(), rec("big-a", "small")))
	roll(t, huge)
	huge.UpdateHighWatermark(huge.LogEndOffset())

	other := openTestLog(t, filepath.Join(root, "other-0"), compactConfig(), clock)
	defer other.Close()
	orig := keyedLog(t, other, compress.LZ4, 30, 4, 5, testEpoch.UnixMilli())
	other.UpdateHighWatermark(other.LogEndOffset())

	c := testCleaner(t, huge, other)
	started := time.Now()
	allocated, results := cleanAll(t, c)
	t.Logf("cleaning allocated %d bytes (%.1f MiB) in %v", allocated, float64(allocated)/(1<<20), time.Since(started).Round(time.Millisecond))
	if len(results) != 2 {
		t.Fatalf("cleaned %d logs, want 2: %+v", len(results), results)
	}
	if allocated > 32<<20 {
		t.Fatalf("cleaning two %d MiB values allocated %d bytes, want under 32 MiB", value>>20, allocated)
	}
	checkCompacted(t, orig, allRecords(readLog(t, other)), other.cleanerCheckpoint.Load())

	// big-b survives whole: the rewritten batch holds just its record, the
	// same bytes as produced.
	res, err := huge.Read(0, math.MaxInt64, huge.LogEndOffset(), true)
	if err != nil {
		t.Fatal(err)
	}
	b := readSlices(t, res)
	first, _, ok := recordbatch.Split(b)
	if !ok {
		t.Fatal("no batch")
	}
	h := parseBatchHeader(first)
	if h.BaseOffset != 0 || h.RecordCount != 1 || h.codec() != compress.Zstd || recordbatch.Batch(first).ComputeCRC() != h.CRC {
		t.Fatalf("rewritten batch %+v", h.Header)
	}
	r, err := compress.NewReader(compress.Zstd, first[recordbatch.HeaderSize:])
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var head []byte
	head = append(head, 0, 0, 2) // attributes, timestamp delta 0, offset delta 1
	head = binary.AppendVarint(head, 5)
	head = append(head, "big-b"...)
	head = binary.AppendVarint(head, value)
	want := append(binary.AppendVarint(nil, int64(len(head))+value+1), head...)
	got := make([]byte, len(want))
	if _, err := io.ReadFull(r, got); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("record head %x (%v), want %x", got, err, want)
	}
	if n, err := io.Copy(zeroSink{t}, io.LimitReader(r, value)); n != value || err != nil {
		t.Fatalf("value: %d bytes (%v)", n, err)
	}
	if rest, err := io.ReadAll(r); err != nil || !bytes.Equal(rest, []byte{0}) {
		t.Fatalf("after the value: %x (%v), want the header count 0", rest, err)
	}
}

type zeroSink struct{ t *testing.T }

func (z zeroSink) Write(p []byte) (int, error) {
	for _, c := range p {
		if c != 0 {
			z.t.Fatal("value byte not zero")
		}
	}
	return len(p), nil
}

// A zstd bomb (128 records of 8 MiB values: 1 GiB in a batch of about
// 100 KiB) on a log whose cap is 16 MiB: the cleaner gives the partition
// up having decompressed the cap and allocated less than it (the records
// stream; no buffer grows with them), and cleans the other log.
func TestCleanerBombOverCapBounded(t *testing.T) {
	root := t.TempDir()
	clock := &testClock{testEpoch}
	cfg := compactConfig()
	cfg.SegmentBytes = 1 << 20
	bomb := openTestLog(t, filepath.Join(root, "bomb-0"), cfg, clock)
	defer bomb.Close()
	// A follower stores the batch without decompressing it.
	var payload []byte
	for i := 0; i < 128; i++ {
		payload = append(payload, zeroValueRecord(t, fmt.Appendf(nil, "k%d", i), i, 8<<20)...)
	}
	batch := withPayload(t, compress.Zstd, 128, payload)
	if _, err := bomb.AppendAsFollower(batch); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, bomb, keyedBatch(t, compress.None, testEpoch.UnixMilli(), rec("k", "v")))
	roll(t, bomb)
	bomb.UpdateHighWatermark(bomb.LogEndOffset())
	cfg.MaxDecompressedBatchBytes = 16 << 20
	bomb.SetConfig(cfg)

	other := openTestLog(t, filepath.Join(root, "other-0"), compactConfig(), clock)
	defer other.Close()
	keyedLog(t, other, compress.Gzip, 30, 4, 5, testEpoch.UnixMilli())
	other.UpdateHighWatermark(other.LogEndOffset())

	c := testCleaner(t, bomb, other)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, _, errBomb := c.runOnce(testEpoch) // the filthiest first: the bomb's log
	runtime.ReadMemStats(&after)
	if !errors.Is(errBomb, errDecompressedTooLarge) || !bomb.uncleanable.Load() {
		t.Fatalf("bomb: %v, uncleanable %v", errBomb, bomb.uncleanable.Load())
	}
	allocated := after.TotalAlloc - before.TotalAlloc
	t.Logf("1 GiB bomb given up at the 16 MiB cap: %d bytes (%.1f MiB) allocated: %v", allocated, float64(allocated)/(1<<20), errBomb)
	if allocated > 16<<20 {
		t.Fatalf("the bomb cost %d bytes, over the 16 MiB cap", allocated)
	}
	if res, cleaned, err := c.runOnce(testEpoch); !cleaned || err != nil || res.Dir != other.dir {
		t.Fatalf("next cleaning: %+v %v %v, want the other log", res, cleaned, err)
	}
}
