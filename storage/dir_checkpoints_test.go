package storage

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/strait/strait/storage/compress"
)

func openDirCP(t *testing.T, logDir string) *DirCheckpoints {
	t.Helper()
	c, err := OpenDirCheckpoints(nil, logDir, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func openCPLog(t *testing.T, c *DirCheckpoints, name string) *Log {
	t.Helper()
	l, err := Open(filepath.Join(c.Dir(), name), testConfig(), Options{Checkpoints: c})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	return l
}

func readDirFile(t *testing.T, logDir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(logDir, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestDirCheckpointsRoundTrip: a log opened with per-directory checkpoints
// writes no per-partition recovery-point, log-start or high-watermark file;
// DeleteRecords reaches log-start-offset-checkpoint at once; after a clean
// close and one WriteAll the three files hold Kafka's format, and a new
// broker start reads the offsets back.
func TestDirCheckpointsRoundTrip(t *testing.T) {
	logDir := t.TempDir()
	c := openDirCP(t, logDir)
	a := openCPLog(t, c, "orders-0")
	b := openCPLog(t, c, "orders-1")
	for range 3 {
		mustAppend(t, a, simpleBatch(t, compress.None, 5, testEpoch.UnixMilli()))
	}
	mustAppend(t, b, simpleBatch(t, compress.None, 2, testEpoch.UnixMilli()))
	a.UpdateHighWatermark(15)
	b.UpdateHighWatermark(1)
	if _, err := a.DeleteRecordsBefore(7); err != nil {
		t.Fatal(err)
	}
	if got, want := readDirFile(t, logDir, logStartOffsetFile), "0\n2\norders 0 7\norders 1 0\n"; got != want {
		t.Fatalf("log-start-offset-checkpoint after DeleteRecords: %q, want %q", got, want)
	}
	for _, l := range []*Log{a, b} {
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.WriteAll(); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		recoveryPointFile:     "0\n2\norders 0 15\norders 1 2\n",
		logStartOffsetFile:    "0\n2\norders 0 7\norders 1 0\n",
		ReplicationOffsetFile: "0\n2\norders 0 15\norders 1 1\n",
	} {
		if got := readDirFile(t, logDir, name); got != want {
			t.Fatalf("%s: %q, want %q", name, got, want)
		}
	}
	for _, p := range []string{"orders-0", "orders-1"} {
		for _, f := range legacyFiles {
			if _, err := os.Stat(filepath.Join(logDir, p, f)); !os.IsNotExist(err) {
				t.Fatalf("%s/%s exists (err %v)", p, f, err)
			}
		}
	}

	c2 := openDirCP(t, logDir)
	a2 := openCPLog(t, c2, "orders-0")
	defer a2.Close()
	if a2.LogStartOffset() != 7 || a2.HighWatermark() != 15 || a2.LogEndOffset() != 15 {
		t.Fatalf("reopened: log start %d, high watermark %d, end %d; want 7, 15, 15",
			a2.LogStartOffset(), a2.HighWatermark(), a2.LogEndOffset())
	}
}

// TestDirCheckpointsMigrate: per-partition files written by an older
// version are moved into the per-directory ones, then removed; the offsets
// survive.
func TestDirCheckpointsMigrate(t *testing.T) {
	logDir := t.TempDir()
	dir := filepath.Join(logDir, "t-3")
	l := openTestLog(t, dir, testConfig(), nil)
	mustAppend(t, l, simpleBatch(t, compress.None, 10, testEpoch.UnixMilli()))
	l.UpdateHighWatermark(8)
	if _, err := l.DeleteRecordsBefore(4); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	for _, f := range legacyFiles {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Fatalf("the per-partition %s was not written: %v", f, err)
		}
	}
	c := openDirCP(t, logDir)
	for name, want := range map[string]string{
		recoveryPointFile:     "0\n1\nt 3 10\n",
		logStartOffsetFile:    "0\n1\nt 3 4\n",
		ReplicationOffsetFile: "0\n1\nt 3 8\n",
	} {
		if got := readDirFile(t, logDir, name); got != want {
			t.Fatalf("%s: %q, want %q", name, got, want)
		}
	}
	for _, f := range legacyFiles {
		if _, err := os.Stat(filepath.Join(dir, f)); !os.IsNotExist(err) {
			t.Fatalf("the per-partition %s is still there (err %v)", f, err)
		}
	}
	l2 := openCPLog(t, c, "t-3")
	defer l2.Close()
	if l2.LogStartOffset() != 4 || l2.HighWatermark() != 8 {
		t.Fatalf("after migration: log start %d, high watermark %d; want 4, 8", l2.LogStartOffset(), l2.HighWatermark())
	}
}

// TestDirCheckpointsTruncationWritesLowerRecoveryPoint: a truncation below
// the recovery point the file holds writes the file at once: after a crash
// the offsets written since the truncation must be recovered, not trusted.
func TestDirCheckpointsTruncationWritesLowerRecoveryPoint(t *testing.T) {
	logDir := t.TempDir()
	c := openDirCP(t, logDir)
	l := openCPLog(t, c, "f-0")
	mustAppend(t, l, simpleBatch(t, compress.None, 5, testEpoch.UnixMilli()))
	mustAppend(t, l, simpleBatch(t, compress.None, 5, testEpoch.UnixMilli()))
	if err := l.flush(); err != nil {
		t.Fatal(err)
	}
	if err := c.WriteRecoveryPoints(); err != nil {
		t.Fatal(err)
	}
	if got, want := readDirFile(t, logDir, recoveryPointFile), "0\n1\nf 0 10\n"; got != want {
		t.Fatalf("recovery points: %q, want %q", got, want)
	}
	if err := l.TruncateTo(5); err != nil {
		t.Fatal(err)
	}
	if got, want := readDirFile(t, logDir, recoveryPointFile), "0\n1\nf 0 5\n"; got != want {
		t.Fatalf("recovery points right after truncating to 5: %q, want %q", got, want)
	}
	crash(l)
}

// TestDirCheckpointsDeleteForgets: a deleted log's offsets leave the files
// at once, so a partition created again under its name starts afresh.
func TestDirCheckpointsDeleteForgets(t *testing.T) {
	logDir := t.TempDir()
	c := openDirCP(t, logDir)
	l := openCPLog(t, c, "d-0")
	mustAppend(t, l, simpleBatch(t, compress.None, 5, testEpoch.UnixMilli()))
	if _, err := l.DeleteRecordsBefore(0); err != nil {
		t.Fatal(err)
	}
	l.UpdateHighWatermark(5)
	if _, err := l.DeleteRecordsBefore(3); err != nil {
		t.Fatal(err)
	}
	if err := l.Delete(); err != nil {
		t.Fatal(err)
	}
	for _, name := range dirKindFiles {
		if got := readDirFile(t, logDir, name); got != "0\n0\n" {
			t.Fatalf("%s after the deletion: %q, want no entries", name, got)
		}
	}
	l2 := openCPLog(t, c, "d-0")
	defer l2.Close()
	if l2.LogStartOffset() != 0 || l2.LogEndOffset() != 0 || l2.HighWatermark() != 0 {
		t.Fatalf("re-created log: start %d end %d hw %d, want 0 0 0", l2.LogStartOffset(), l2.LogEndOffset(), l2.HighWatermark())
	}
}

// TestDirCheckpointsHeldForgets: deletions while forgets are held leave
// the files as they were (a crash then finds the deleted partitions'
// directories gone and drops their entries on load); the last release
// writes them once, without the deleted partitions; a release with no
// deletion meanwhile writes nothing.
func TestDirCheckpointsHeldForgets(t *testing.T) {
	logDir := t.TempDir()
	c := openDirCP(t, logDir)
	var logs []*Log
	for _, name := range []string{"h-0", "h-1", "h-2"} {
		l := openCPLog(t, c, name)
		mustAppend(t, l, simpleBatch(t, compress.None, 5, testEpoch.UnixMilli()))
		l.UpdateHighWatermark(5)
		logs = append(logs, l)
	}
	defer logs[2].Close()
	if err := c.WriteAll(); err != nil {
		t.Fatal(err)
	}
	if before := readDirFile(t, logDir, ReplicationOffsetFile); countEntries(t, before) != 3 {
		t.Fatalf("high watermarks before: %q", before)
	}
	outer, inner := c.HoldForgets(), c.HoldForgets()
	for _, l := range logs[:2] {
		if err := l.Delete(); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range dirKindFiles {
		if got, want := readDirFile(t, logDir, name), 3; countEntries(t, got) != want {
			t.Fatalf("%s while held: %q, want %d entries", name, got, want)
		}
	}
	if err := inner(); err != nil {
		t.Fatal(err)
	}
	if err := inner(); err != nil { // twice: harmless
		t.Fatal(err)
	}
	if got := readDirFile(t, logDir, ReplicationOffsetFile); countEntries(t, got) != 3 {
		t.Fatalf("after the inner release: %q, want the 3 entries still", got)
	}
	if err := outer(); err != nil {
		t.Fatal(err)
	}
	for _, name := range dirKindFiles {
		got := readDirFile(t, logDir, name)
		if countEntries(t, got) != 1 {
			t.Fatalf("%s after the release: %q, want h-2 alone", name, got)
		}
	}
	// A crash while held: the files still list a deleted partition, whose
	// directory is gone, so a reload drops it.
	release := c.HoldForgets()
	if err := logs[2].Delete(); err != nil {
		t.Fatal(err)
	}
	c2 := openDirCP(t, logDir)
	if _, ok := c2.loaded(TopicPartition{Topic: "h", Partition: 2}, highWatermarkKind); ok {
		t.Fatal("a reload kept the entry of a deleted partition")
	}
	if err := release(); err != nil {
		t.Fatal(err)
	}
	// Nothing forgotten meanwhile: no write.
	if err := os.Remove(filepath.Join(logDir, ReplicationOffsetFile)); err != nil {
		t.Fatal(err)
	}
	if err := c.HoldForgets()(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(logDir, ReplicationOffsetFile)); !os.IsNotExist(err) {
		t.Fatalf("a release with no deletion wrote the file: %v", err)
	}
}

// countEntries is the entry count a checkpoint file states (its second line).
func countEntries(t *testing.T, file string) int {
	t.Helper()
	var version, n int
	if _, err := fmt.Sscanf(file, "%d\n%d\n", &version, &n); err != nil {
		t.Fatalf("checkpoint %q: %v", file, err)
	}
	return n
}

// TestDirCheckpointsPeriodicWriteSkipsIdle: a periodic write with no value
// changed since the last one gathers nothing (an idle broker's checkpoint
// ticks cost nothing per partition); a high watermark moved, an append
// flushed, a log start moved are all written by the next one.
func TestDirCheckpointsPeriodicWriteSkipsIdle(t *testing.T) {
	logDir := t.TempDir()
	c := openDirCP(t, logDir)
	a := openCPLog(t, c, "idle-0")
	defer a.Close()
	mustAppend(t, a, simpleBatch(t, compress.None, 5, testEpoch.UnixMilli()))
	a.UpdateHighWatermark(3)
	write := func() {
		t.Helper()
		for _, w := range []func() error{c.WriteHighWatermarks, c.WriteRecoveryPoints, c.WriteLogStartOffsets} {
			if err := w(); err != nil {
				t.Fatal(err)
			}
		}
	}
	write()
	if got, want := readDirFile(t, logDir, ReplicationOffsetFile), "0\n1\nidle 0 3\n"; got != want {
		t.Fatalf("replication-offset-checkpoint %q, want %q", got, want)
	}
	if allocs := testing.AllocsPerRun(20, write); allocs != 0 {
		t.Fatalf("a periodic write with nothing changed allocated %v times (gathered the partitions)", allocs)
	}
	a.UpdateHighWatermark(5)
	if err := a.flush(); err != nil {
		t.Fatal(err)
	}
	if _, err := a.DeleteRecordsBefore(2); err != nil {
		t.Fatal(err)
	}
	write()
	for name, want := range map[string]string{
		ReplicationOffsetFile: "0\n1\nidle 0 5\n",
		recoveryPointFile:     "0\n1\nidle 0 5\n",
		logStartOffsetFile:    "0\n1\nidle 0 2\n",
	} {
		if got := readDirFile(t, logDir, name); got != want {
			t.Fatalf("%s: %q, want %q", name, got, want)
		}
	}
}
