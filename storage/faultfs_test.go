package storage

import (
	"bytes"
	"errors"
	"math"
	"syscall"
	"testing"

	"github.com/strait/strait/recordbatch"
	"github.com/strait/strait/storage/compress"
	"github.com/twmb/franz-go/pkg/kerr"
)

// openLogWith opens the log at dir on fsys (a FaultFS, a StrictFS), failing t on error.
func openLogWith(t *testing.T, dir string, cfg LogConfig, fsys FS) *Log {
	t.Helper()
	l, err := Open(dir, cfg, Options{FS: fsys})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestFullDiskAppendFailsWithoutLosingData(t *testing.T) {
	dir := t.TempDir()
	fsys := NewFaultFS(nil)
	cfg := testConfig()
	cfg.IndexIntervalBytes = 100
	l := openLogWith(t, dir, cfg, fsys)
	stored := appendBatches(t, l, compress.Gzip, 10, testEpoch.UnixMilli())
	leo := l.LogEndOffset()

	batch := simpleBatch(t, compress.None, 4, testEpoch.UnixMilli())
	fsys.SetWriteBudget(int64(len(batch) / 2)) // a torn write, then ENOSPC
	_, err := l.AppendAsLeader(batch, 0)
	if kerrCode(err) != kerr.KafkaStorageError.Code || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("append on a full disk: %v", err)
	}
	if l.LogEndOffset() != leo {
		t.Fatalf("failed append moved LEO to %d", l.LogEndOffset())
	}
	res, err := l.Read(0, math.MaxInt64, leo, false)
	if err != nil || !bytes.Equal(readSlices(t, res), bytes.Join(stored, nil)) {
		t.Fatalf("reads after a failed append: %v", err)
	}

	// Space again: the next append takes the same offsets.
	fsys.SetWriteBudget(-1)
	recordbatch.Batch(batch).SetBaseOffset(0)
	info := mustAppend(t, l, batch)
	if info.FirstOffset != leo {
		t.Fatalf("append after disk full at %d, want %d", info.FirstOffset, leo)
	}
	stored = append(stored, batch)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l2 := openTestLog(t, dir, cfg, nil)
	defer l2.Close()
	verifyLog(t, l2, stored)
}

func TestFailedIndexWriteRollsBackAppend(t *testing.T) {
	fsys := NewFaultFS(nil)
	cfg := testConfig()
	cfg.IndexIntervalBytes = 1 // every batch after the first gets an index entry
	l := openLogWith(t, t.TempDir(), cfg, fsys)
	defer l.Close()
	stored := appendBatches(t, l, compress.None, 3, testEpoch.UnixMilli())
	batch := simpleBatch(t, compress.None, 2, testEpoch.UnixMilli())
	fsys.SetWriteBudget(int64(len(batch)) + 3) // the log write fits, the index entry does not
	if _, err := l.AppendAsLeader(batch, 0); kerrCode(err) != kerr.KafkaStorageError.Code {
		t.Fatalf("append with a failing index write: %v", err)
	}
	fsys.SetWriteBudget(-1)
	if n := l.active().offsetIndex.n; n != 2 {
		t.Fatalf("%d index entries after rollback, want 2", n)
	}
	verifyLog(t, l, stored)
}

func TestFailedRollKeepsLogUsable(t *testing.T) {
	dir := t.TempDir()
	fsys := NewFaultFS(nil)
	cfg := testConfig()
	cfg.SegmentBytes = 1000
	l := openLogWith(t, dir, cfg, fsys)
	var stored [][]byte
	for l.active().size < 900 {
		stored = append(stored, appendBatches(t, l, compress.None, 1, testEpoch.UnixMilli())...)
	}
	// The new segment's files come first: should they not be made, the
	// append fails and the old segment takes appends again.
	fsys.FailCreates(true)
	if _, err := l.AppendAsLeader(simpleBatch(t, compress.None, 5, testEpoch.UnixMilli()), 7); kerrCode(err) != kerr.KafkaStorageError.Code {
		t.Fatalf("append needing a roll on a failing disk: %v", err)
	}
	fsys.FailCreates(false)
	if len(l.segments) != 1 {
		t.Fatalf("%d segments after a failed roll", len(l.segments))
	}
	// A roll fsyncs nothing, so failing fsyncs fail no rolling append: the
	// flush after the roll fails in the background and leaves the recovery
	// point behind (TestFailedRollFlushLeavesRecoveryPoint).
	fsys.FailSyncs(true)
	stored = append(stored, mustAppendStored(t, l, simpleBatch(t, compress.None, 5, testEpoch.UnixMilli())))
	l.flushes.Wait()
	fsys.FailSyncs(false)
	if len(l.segments) != 2 || l.recoveryPoint.Load() != 0 {
		t.Fatalf("%d segments, recovery point %d; want a roll, the recovery point not moved", len(l.segments), l.recoveryPoint.Load())
	}
	stored = append(stored, appendBatches(t, l, compress.None, 5, testEpoch.UnixMilli())...)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l2 := openTestLog(t, dir, cfg, nil)
	defer l2.Close()
	verifyLog(t, l2, stored)
}
