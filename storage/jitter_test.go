package storage

import (
	"testing"

	"github.com/strait/strait/storage/compress"
)

// segment.jitter.ms: each segment draws its jitter below
// min(segment.jitter.ms, segment.ms) when opened, and rolls once segment.ms
// less that jitter has passed, as Kafka's LogSegment.shouldRoll.
func TestSegmentJitterRollsEarly(t *testing.T) {
	var bounds []int64
	draw := int64(300)
	old := segmentJitter
	segmentJitter = func(bound int64) int64 { bounds = append(bounds, bound); return draw }
	defer func() { segmentJitter = old }()

	cfg := testConfig()
	cfg.SegmentMs, cfg.SegmentJitterMs = 1000, 5000
	l := openTestLog(t, t.TempDir(), cfg, &testClock{testEpoch})
	defer l.Close()
	if l.active().rollJitterMs != 300 || len(bounds) != 1 || bounds[0] != 1000 {
		t.Fatalf("jitter %d drawn below %v, want 300 below [1000]", l.active().rollJitterMs, bounds)
	}
	ts := testEpoch.UnixMilli()
	mustAppend(t, l, simpleBatch(t, compress.None, 1, ts))
	mustAppend(t, l, simpleBatch(t, compress.None, 1, ts+700)) // segment.ms - jitter: no roll
	if len(l.segments) != 1 {
		t.Fatalf("rolled before segment.ms - jitter: %d segments", len(l.segments))
	}
	draw = 0 // the next segment's
	mustAppend(t, l, simpleBatch(t, compress.None, 1, ts+701))
	if len(l.segments) != 2 || l.active().baseOffset != 2 || l.active().rollJitterMs != 0 {
		t.Fatalf("no jittered roll: %d segments, active jitter %d", len(l.segments), l.active().rollJitterMs)
	}
	// The new segment drew 0: it waits the whole segment.ms.
	mustAppend(t, l, simpleBatch(t, compress.None, 1, ts+701+1000))
	if len(l.segments) != 2 {
		t.Fatalf("the second segment rolled early: %d segments", len(l.segments))
	}

	// Without segment.jitter.ms nothing is drawn.
	cfg.SegmentJitterMs = 0
	bounds = nil
	l2 := openTestLog(t, t.TempDir(), cfg, &testClock{testEpoch})
	defer l2.Close()
	if l2.active().rollJitterMs != 0 || len(bounds) != 0 {
		t.Fatalf("jitter %d without segment.jitter.ms", l2.active().rollJitterMs)
	}
}

// The real draw stays below its bound and varies between segments.
func TestRandomSegmentJitterBounds(t *testing.T) {
	cfg := LogConfig{SegmentMs: 1 << 40, SegmentJitterMs: 1000}
	seen := map[int64]bool{}
	for i := 0; i < 200; i++ {
		j := cfg.randomSegmentJitter()
		if j < 0 || j >= 1000 {
			t.Fatalf("jitter %d outside [0, 1000)", j)
		}
		seen[j] = true
	}
	if len(seen) < 2 {
		t.Fatalf("200 draws gave %d distinct values", len(seen))
	}
}
