package storage

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/strait/strait/storage/compress"
	"github.com/twmb/franz-go/pkg/kerr"
)

func readHWFile(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, highWatermarkFile))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestHighWatermarkCheckpoint(t *testing.T) {
	cfg := testConfig()
	dir := t.TempDir()
	l := openTestLog(t, dir, cfg, nil)
	appendBatches(t, l, compress.None, 10, testEpoch.UnixMilli()) // 30 records
	if l.HighWatermark() != 0 {
		t.Fatalf("hw %d before any update", l.HighWatermark())
	}
	l.UpdateHighWatermark(12)
	if err := l.CheckpointHighWatermark(); err != nil {
		t.Fatal(err)
	}
	if got := readHWFile(t, dir); got != "0\n12\n" {
		t.Fatalf("checkpoint %q", got)
	}
	// A crash: the checkpoint is what survives.
	l.UpdateHighWatermark(20)
	crash(l)
	l = openTestLog(t, dir, cfg, nil)
	if l.HighWatermark() != 12 || l.LogEndOffset() != 30 {
		t.Fatalf("after a crash hw %d, log end %d; want 12, 30", l.HighWatermark(), l.LogEndOffset())
	}
	// Flush and Close checkpoint it too.
	l.UpdateHighWatermark(25)
	if err := l.flush(); err != nil {
		t.Fatal(err)
	}
	if got := readHWFile(t, dir); got != "0\n25\n" {
		t.Fatalf("checkpoint after flush %q", got)
	}
	l.UpdateHighWatermark(27)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.CheckpointHighWatermark(); kerrCode(err) != kerr.KafkaStorageError.Code {
		t.Fatalf("checkpoint of a closed log: %v", err)
	}
	l = openTestLog(t, dir, cfg, nil)
	if l.HighWatermark() != 27 {
		t.Fatalf("hw %d after close, want 27", l.HighWatermark())
	}
	l.UpdateHighWatermark(30)
	if err := l.CheckpointHighWatermark(); err != nil {
		t.Fatal(err)
	}
	crash(l)
	// Recovery cut the log below the checkpoint: the hw is the log end.
	logFile := segPath(dir, 0, logFileSuffix)
	if err := os.Truncate(logFile, fileSize(t, logFile)-3); err != nil {
		t.Fatal(err)
	}
	l = openTestLog(t, dir, cfg, nil)
	if l.HighWatermark() != l.LogEndOffset() || l.LogEndOffset() >= 30 {
		t.Fatalf("hw %d, log end %d after a torn tail", l.HighWatermark(), l.LogEndOffset())
	}
	// Below the log start offset: the log start.
	if _, err := l.DeleteRecordsBefore(l.HighWatermark()); err != nil {
		t.Fatal(err)
	}
	lso := l.LogStartOffset()
	if err := writeCheckpoint(OSFS{}, dir, highWatermarkFile, 3); err != nil {
		t.Fatal(err)
	}
	crash(l)
	l = openTestLog(t, dir, cfg, nil)
	if l.HighWatermark() != lso {
		t.Fatalf("hw %d, want the log start %d", l.HighWatermark(), lso)
	}
	crash(l)
	// Missing or malformed: the log end offset, as before checkpoints.
	for _, content := range []string{"", "0\nx\n"} {
		if content == "" {
			if err := os.Remove(filepath.Join(dir, highWatermarkFile)); err != nil {
				t.Fatal(err)
			}
		} else if err := os.WriteFile(filepath.Join(dir, highWatermarkFile), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		l = openTestLog(t, dir, cfg, nil)
		if l.HighWatermark() != l.LogEndOffset() {
			t.Fatalf("checkpoint %q: hw %d, log end %d", content, l.HighWatermark(), l.LogEndOffset())
		}
		crash(l)
	}
}

// TestHighWatermarkCheckpointConcurrent: checkpoints race with appends,
// high watermark updates and Close without errors or torn files (-race).
func TestHighWatermarkCheckpointConcurrent(t *testing.T) {
	dir := t.TempDir()
	l := openTestLog(t, dir, testConfig(), nil)
	var wg sync.WaitGroup
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 30 {
				if err := l.CheckpointHighWatermark(); err != nil && kerrCode(err) != kerr.KafkaStorageError.Code {
					t.Error(err)
				}
			}
		}()
	}
	for range 30 {
		mustAppend(t, l, simpleBatch(t, compress.None, 1, testEpoch.UnixMilli()))
		l.UpdateHighWatermark(l.LogEndOffset())
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if got := readHWFile(t, dir); got != "0\n30\n" {
		t.Fatalf("checkpoint %q after close", got)
	}
}

// TestHighWatermarkCheckpointSkipsUnchanged: the periodic checkpoint of a
// high watermark the file already holds writes and fsyncs nothing (with
// fsyncs failing, it still succeeds); a changed one is written again.
func TestHighWatermarkCheckpointSkipsUnchanged(t *testing.T) {
	fs := NewFaultFS(nil)
	dir := t.TempDir()
	l, err := Open(dir, testConfig(), Options{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	appendBatches(t, l, compress.None, 4, testEpoch.UnixMilli())
	l.UpdateHighWatermark(5)
	if err := l.CheckpointHighWatermark(); err != nil {
		t.Fatal(err)
	}
	fs.FailSyncs(true)
	if err := l.CheckpointHighWatermark(); err != nil {
		t.Fatalf("unchanged high watermark written again: %v", err)
	}
	l.UpdateHighWatermark(7)
	if err := l.CheckpointHighWatermark(); kerrCode(err) != kerr.KafkaStorageError.Code {
		t.Fatalf("changed high watermark: %v, want the injected fsync failure", err)
	}
	fs.FailSyncs(false)
	if err := l.CheckpointHighWatermark(); err != nil {
		t.Fatal(err)
	}
	if got := readHWFile(t, dir); got != "0\n7\n" {
		t.Fatalf("checkpoint %q", got)
	}
}
