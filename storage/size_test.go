package storage

import (
	"testing"

	"github.com/strait/strait/storage/compress"
)

// Size counts what the segments hold, not their files' length: with
// preallocate the active segment's file is segment.bytes long from the
// start (Kafka's UnifiedLog.size is the same sum of written bytes).
func TestSizeCountsWrittenBytes(t *testing.T) {
	cfg := testConfig()
	cfg.Preallocate, cfg.SegmentBytes = true, 1<<20
	dir := t.TempDir()
	clock := &testClock{testEpoch}
	l := openTestLog(t, dir, cfg, clock)
	defer l.Close()
	if got := l.Size(); got != 0 {
		t.Fatalf("empty log: size %d", got)
	}
	var want int64
	for range 3 {
		b := simpleBatch(t, compress.None, 4, testEpoch.UnixMilli())
		want += int64(len(b))
		mustAppend(t, l, b)
	}
	l.mu.Lock()
	_, err := l.rollLocked(clock.t)
	l.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	b := simpleBatch(t, compress.None, 2, testEpoch.UnixMilli())
	want += int64(len(b))
	mustAppend(t, l, b)
	if got := fileSize(t, segPath(dir, 12, ".log")); got != 1<<20 {
		t.Fatalf("active segment file %d bytes, want preallocated %d", got, 1<<20)
	}
	if got := l.Size(); got != want {
		t.Fatalf("size %d, want the %d bytes written", got, want)
	}
}
