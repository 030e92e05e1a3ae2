package replication

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/strait/strait/storage"
)

func openTestLog(t *testing.T, dir string) *storage.Log {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	l, err := storage.Open(dir, storage.DefaultLogConfig(), storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// copyAll copies src into dst until dst reaches src's log end offset (a
// bounded number of rounds).
func copyAll(t *testing.T, m *Manager, src, dst *storage.Log) {
	t.Helper()
	var buf []byte
	for range 100 {
		if _, err := m.copyInto(src, dst, &buf); err != nil {
			t.Fatal(err)
		}
		if dst.LogEndOffset() == src.LogEndOffset() {
			return
		}
	}
	t.Fatalf("future log at %d after 100 copies, current at %d", dst.LogEndOffset(), src.LogEndOffset())
}

// A future log follows its current log as a follower follows its leader:
// batch by batch (one batch a copy at the smallest chunk), truncated back
// where the current log was truncated and rewritten under a new leader
// epoch, and started at the current log start offset when the records
// below it are gone.
func TestFutureLogCatchesUpAndReconciles(t *testing.T) {
	dir := t.TempDir()
	m := &Manager{cfg: Config{FetchMaxBytes: 1}}
	src := openTestLog(t, filepath.Join(dir, "a", "t-0"))
	dst := openTestLog(t, filepath.Join(dir, "b", "t-0.x-future"))
	for range 3 {
		if _, err := src.AppendAsLeader(testBatch(5), 0); err != nil {
			t.Fatal(err)
		}
	}
	var buf []byte
	if n, err := m.copyInto(src, dst, &buf); err != nil || n == 0 || dst.LogEndOffset() != 5 {
		t.Fatalf("first copy: %d bytes, %v, future log end %d, want one batch (5)", n, err, dst.LogEndOffset())
	}
	copyAll(t, m, src, dst)

	// The current log loses its last batch and gets another at epoch 1.
	if err := src.TruncateTo(10); err != nil {
		t.Fatal(err)
	}
	if _, err := src.AppendAsLeader(testBatch(7), 1); err != nil {
		t.Fatal(err)
	}
	copyAll(t, m, src, dst)
	if e, end := dst.EndOffsetForEpoch(0); e != 0 || end != 10 {
		t.Fatalf("future log: epoch 0 ends at %d (epoch %d), want 10", end, e)
	}
	if e, ok := dst.LatestEpoch(); !ok || e != 1 || dst.LogEndOffset() != 17 {
		t.Fatalf("future log: latest epoch %d, log end %d, want 1 and 17", e, dst.LogEndOffset())
	}
	if src.Size() != dst.Size() {
		t.Fatalf("sizes differ: current %d, future %d", src.Size(), dst.Size())
	}

	// Records deleted below 12: a new future log starts at the batch
	// holding 12, with its log start offset at 12.
	src.UpdateHighWatermark(src.LogEndOffset())
	if _, err := src.DeleteRecordsBefore(12); err != nil {
		t.Fatal(err)
	}
	dst2 := openTestLog(t, filepath.Join(dir, "b", "t-0.y-future"))
	copyAll(t, m, src, dst2)
	if dst2.LogStartOffset() != 12 || dst2.LogEndOffset() != 17 {
		t.Fatalf("future log after DeleteRecords: [%d, %d), want [12, 17)", dst2.LogStartOffset(), dst2.LogEndOffset())
	}
}
