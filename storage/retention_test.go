package storage

import (
	"math"
	"os"
	"testing"
	"time"

	"github.com/strait/strait/storage/compress"
	"github.com/twmb/franz-go/pkg/kerr"
)

func TestRetentionByTime(t *testing.T) {
	cfg := recoveryConfig()
	cfg.RetentionMs = 1000
	dir := t.TempDir()
	l := openTestLog(t, dir, cfg, nil)
	defer l.Close()
	old := testEpoch.UnixMilli()
	appendBatches(t, l, compress.None, 60, old) // timestamps old .. old+590
	oldSegs := len(l.segments)
	for len(l.segments) == oldSegs { // new timestamps until the next roll
		appendBatches(t, l, compress.None, 1, old+100000)
	}
	appendBatches(t, l, compress.None, 5, old+100000)
	firstNew := l.segments[oldSegs].baseOffset // the segment holding both old and new timestamps

	// Nothing is below the high watermark: nothing goes.
	l.UpdateHighWatermark(0)
	if n, _ := l.DeleteOldSegments(time.UnixMilli(old + 50000)); n != 0 {
		t.Fatalf("deleted %d segments above the high watermark", n)
	}
	l.UpdateHighWatermark(l.LogEndOffset())
	n, err := l.DeleteOldSegments(time.UnixMilli(old + 50000))
	if err != nil || n != oldSegs-1 {
		t.Fatalf("deleted %d segments (%v), want %d", n, err, oldSegs-1)
	}
	if l.LogStartOffset() != l.segments[0].baseOffset || l.segments[0].baseOffset >= firstNew {
		t.Fatalf("log start %d, first segment %d", l.LogStartOffset(), l.segments[0].baseOffset)
	}
	if _, err := os.Stat(segPath(dir, 0, logFileSuffix)); !os.IsNotExist(err) {
		t.Fatal("deleted segment file still there")
	}
	if _, err := l.Read(0, 100, l.LogEndOffset(), true); kerrCode(err) != kerr.OffsetOutOfRange.Code {
		t.Fatalf("read below the new log start: %v", err)
	}
	// Once every record has expired, the active segment goes too, as in
	// Kafka: rolled, then deleted, leaving an empty segment at the log end.
	leo := l.LogEndOffset()
	n, _ = l.DeleteOldSegments(time.UnixMilli(old + 10000000))
	if len(l.segments) != 1 || n == 0 || l.segments[0].size != 0 || l.segments[0].baseOffset != leo {
		t.Fatalf("%d segments left (%d deleted), first at %d size %d, want one empty at %d",
			len(l.segments), n, l.segments[0].baseOffset, l.segments[0].size, leo)
	}
	if l.LogStartOffset() != leo || l.LogEndOffset() != leo {
		t.Fatalf("log start %d end %d after deleting everything, want both %d", l.LogStartOffset(), l.LogEndOffset(), leo)
	}
	// The empty active segment is never deleted.
	if n, _ := l.DeleteOldSegments(time.UnixMilli(old + 20000000)); n != 0 {
		t.Fatalf("deleted %d segments of an empty log", n)
	}
	appendBatches(t, l, compress.None, 1, old+100000)
	if got := l.segments[0].baseOffset; got != leo || l.LogEndOffset() <= leo {
		t.Fatalf("append after full expiry: segment at %d, log end %d", got, l.LogEndOffset())
	}
	// Log start offset survives a restart.
	lso := l.LogStartOffset()
	l.Close()
	l2 := openTestLog(t, dir, cfg, nil)
	defer l2.Close()
	if l2.LogStartOffset() != lso {
		t.Fatalf("log start after reopen %d, want %d", l2.LogStartOffset(), lso)
	}
}

func TestRetentionBySize(t *testing.T) {
	cfg := recoveryConfig()
	cfg.RetentionMs = -1
	l := openTestLog(t, t.TempDir(), cfg, nil)
	defer l.Close()
	appendBatches(t, l, compress.None, 150, testEpoch.UnixMilli())
	l.UpdateHighWatermark(l.LogEndOffset())
	var total int64
	for _, s := range l.segments {
		total += s.size
	}
	cfg.RetentionBytes = total - l.segments[0].size - l.segments[1].size
	l.SetConfig(cfg)
	n, err := l.DeleteOldSegments(testEpoch)
	if err != nil || n != 2 {
		t.Fatalf("deleted %d (%v), want 2", n, err)
	}
	if n, _ := l.DeleteOldSegments(testEpoch); n != 0 {
		t.Fatalf("second pass deleted %d", n)
	}
	cfg.Compact, cfg.Delete = true, false // cleanup.policy=compact
	cfg.RetentionBytes = 0
	l.SetConfig(cfg)
	if n, _ := l.DeleteOldSegments(testEpoch); n != 0 {
		t.Fatalf("size retention applied to a compacted topic: %d", n)
	}
	cfg.Delete = true // cleanup.policy=compact,delete
	l.SetConfig(cfg)
	if n, _ := l.DeleteOldSegments(testEpoch); n == 0 || len(l.segments) != 1 {
		t.Fatalf("compact,delete: deleted %d, %d segments left; want all but the active one", n, len(l.segments))
	}
}

func TestDeleteRecordsBefore(t *testing.T) {
	dir := t.TempDir()
	cfg := recoveryConfig()
	l := openTestLog(t, dir, cfg, nil)
	appendBatches(t, l, compress.None, 150, testEpoch.UnixMilli())
	hw := l.segments[3].baseOffset + 1
	l.UpdateHighWatermark(hw)
	if _, err := l.DeleteRecordsBefore(hw + 1); kerrCode(err) != kerr.OffsetOutOfRange.Code {
		t.Fatalf("delete above HW: %v", err)
	}
	target := l.segments[2].baseOffset + 3
	low, err := l.DeleteRecordsBefore(target)
	if err != nil || low != target || l.LogStartOffset() != target {
		t.Fatalf("low watermark %d (%v), want %d", low, err, target)
	}
	if _, err := l.Read(target-1, 100, hw, true); kerrCode(err) != kerr.OffsetOutOfRange.Code {
		t.Fatalf("read below log start: %v", err)
	}
	res, err := l.Read(target, math.MaxInt64, hw, true)
	if err != nil || res.Size == 0 {
		t.Fatalf("read at log start: %v", err)
	}
	// Moving back is a no-op.
	if low, _ := l.DeleteRecordsBefore(1); low != target {
		t.Fatalf("low watermark moved back to %d", low)
	}
	if n, _ := l.DeleteOldSegments(testEpoch); n != 2 {
		t.Fatalf("segments below the log start not deleted: %d", n)
	}
	if l.LogStartOffset() != target {
		t.Fatalf("segment deletion moved the log start to %d", l.LogStartOffset())
	}
	// Records before the log start are not found by timestamp.
	if o, _, ok, _ := l.OffsetForTimestamp(0); !ok || o != target {
		t.Fatalf("OffsetForTimestamp(0) = %d, want %d", o, target)
	}
	l.Close()
	l2 := openTestLog(t, dir, cfg, nil)
	defer l2.Close()
	if l2.LogStartOffset() != target {
		t.Fatalf("log start after reopen %d, want %d", l2.LogStartOffset(), target)
	}
}

func TestDeletedSegmentStaysReadableDuringDelay(t *testing.T) {
	cfg := recoveryConfig()
	cfg.FileDeleteDelayMs = 60000
	cfg.RetentionMs = -1
	dir := t.TempDir()
	l := openTestLog(t, dir, cfg, nil)
	defer l.Close()
	stored := appendBatches(t, l, compress.None, 150, testEpoch.UnixMilli())
	l.UpdateHighWatermark(l.LogEndOffset())
	res, err := l.Read(0, 1<<20, l.LogEndOffset(), true) // a fetch in flight
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.DeleteRecordsBefore(l.segments[1].baseOffset); err != nil {
		t.Fatal(err)
	}
	if n, _ := l.DeleteOldSegments(testEpoch); n != 1 {
		t.Fatalf("deleted %d segments, want 1", n)
	}
	if _, err := os.Stat(segPath(dir, 0, logFileSuffix) + deletedFileSuffix); err != nil {
		t.Fatalf("segment not renamed .deleted: %v", err)
	}
	got := readSlices(t, res)
	if hs := splitBatches(t, got); len(hs) == 0 || hs[0].BaseOffset != 0 || len(got) < len(stored[0]) {
		t.Fatal("in-flight slice of a deleted segment no longer readable")
	}
}
