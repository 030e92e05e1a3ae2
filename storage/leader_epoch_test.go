package storage

import (
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/strait/strait/storage/compress"
	"github.com/twmb/franz-go/pkg/kerr"
)

func newTestEpochCache(t *testing.T, entries ...EpochEntry) *leaderEpochCache {
	t.Helper()
	c, err := loadLeaderEpochCache(OSFS{}, t.TempDir(), slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if err := c.assign(e.Epoch, e.StartOffset); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.persistLocked(syncAll); err != nil {
		t.Fatal(err)
	}
	return c
}

func checkEpochs(t *testing.T, got []EpochEntry, want ...EpochEntry) {
	t.Helper()
	if len(got) == 0 && len(want) == 0 {
		return
	}
	if !slices.Equal(got, want) {
		t.Fatalf("epoch entries %v, want %v", got, want)
	}
}

func ee(epoch int32, start int64) EpochEntry { return EpochEntry{Epoch: epoch, StartOffset: start} }

// TestEpochCacheAssign follows Kafka's LeaderEpochFileCacheTest on assign.
func TestEpochCacheAssign(t *testing.T) {
	for _, tc := range []struct {
		name   string
		assign []EpochEntry
		want   []EpochEntry
	}{
		{"adds epoch and start offset", []EpochEntry{ee(2, 10)}, []EpochEntry{ee(2, 10)}},
		{"same epoch and offset once", []EpochEntry{ee(2, 6), ee(2, 6)}, []EpochEntry{ee(2, 6)}},
		{"start of an epoch is never moved up", []EpochEntry{ee(2, 6), ee(2, 7), ee(2, 8)}, []EpochEntry{ee(2, 6)}},
		{"epochs need not start at zero", []EpochEntry{ee(2, 6), ee(3, 8)}, []EpochEntry{ee(2, 6), ee(3, 8)}},
		{"a new epoch at the same offset replaces the previous", []EpochEntry{ee(2, 6), ee(3, 6)}, []EpochEntry{ee(3, 6)}},
		{"start offsets increase: a later epoch at a lower offset truncates", []EpochEntry{ee(2, 6), ee(3, 8), ee(4, 7)}, []EpochEntry{ee(2, 6), ee(4, 7)}},
		{"latest epoch with an earlier start truncates", []EpochEntry{ee(5, 11), ee(6, 12), ee(7, 13), ee(7, 12)}, []EpochEntry{ee(5, 11), ee(7, 12)}},
		{"older epoch removes the newer ones", []EpochEntry{ee(2, 6), ee(3, 8), ee(4, 11), ee(3, 12)}, []EpochEntry{ee(2, 6), ee(3, 12)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newTestEpochCache(t, tc.assign...)
			checkEpochs(t, c.entries, tc.want...)
			// What is cached is what is on disk once written.
			c2, err := loadLeaderEpochCache(OSFS{}, c.dir, slog.Default())
			if err != nil {
				t.Fatal(err)
			}
			checkEpochs(t, c2.entries, tc.want...)
		})
	}
	c := newTestEpochCache(t)
	if err := c.assign(-1, 5); kerrCode(err) != kerr.InvalidRequest.Code {
		t.Fatalf("assign of epoch -1: %v", err)
	}
	if err := c.assign(1, -5); kerrCode(err) != kerr.InvalidRequest.Code {
		t.Fatalf("assign of offset -5: %v", err)
	}
}

// TestEpochCacheEndOffsetFor follows Kafka's LeaderEpochFileCacheTest on
// endOffsetFor.
func TestEpochCacheEndOffsetFor(t *testing.T) {
	const leo = 20
	for _, tc := range []struct {
		name      string
		entries   []EpochEntry
		requested int32
		epoch     int32
		end       int64
	}{
		{"empty cache", nil, 0, -1, -1},
		{"empty cache, undefined epoch", nil, -1, -1, -1},
		{"undefined epoch", []EpochEntry{ee(2, 6)}, -1, -1, -1},
		{"latest epoch gives the log end", []EpochEntry{ee(2, 5), ee(3, 6), ee(4, 7)}, 4, 4, leo},
		{"only epoch gives the log end", []EpochEntry{ee(2, 6)}, 2, 2, leo},
		{"previous epoch ends where the next starts", []EpochEntry{ee(1, 5), ee(2, 7)}, 1, 1, 7},
		{"epoch between two known ones", []EpochEntry{ee(0, 10), ee(2, 13), ee(4, 17)}, 1, 0, 13},
		{"epoch below the latest", []EpochEntry{ee(0, 10), ee(2, 13), ee(4, 17)}, 2, 2, 17},
		{"gap below the latest", []EpochEntry{ee(0, 10), ee(2, 13), ee(4, 17)}, 3, 2, 17},
		{"epoch below every known one", []EpochEntry{ee(5, 256), ee(6, 257)}, 4, 4, 256},
		{"epoch zero below every known one", []EpochEntry{ee(5, 256)}, 0, 0, 256},
		{"epoch above every known one", []EpochEntry{ee(2, 100)}, 3, -1, -1},
		{"largest epoch", []EpochEntry{ee(2, 100)}, 1<<31 - 1, -1, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newTestEpochCache(t, tc.entries...)
			epoch, end := c.endOffsetFor(tc.requested, leo)
			if epoch != tc.epoch || end != tc.end {
				t.Fatalf("endOffsetFor(%d) = (%d, %d), want (%d, %d)", tc.requested, epoch, end, tc.epoch, tc.end)
			}
		})
	}
}

// TestEpochCacheTruncation follows Kafka's LeaderEpochFileCacheTest on
// truncateFromStart, truncateFromEnd and clear.
func TestEpochCacheTruncation(t *testing.T) {
	base := []EpochEntry{ee(2, 6), ee(3, 8), ee(4, 11)}
	for _, tc := range []struct {
		name string
		op   func(c *leaderEpochCache) error
		want []EpochEntry
	}{
		{"from start between epochs", func(c *leaderEpochCache) error { c.truncateFromStart(9); return nil }, []EpochEntry{ee(3, 9), ee(4, 11)}},
		{"from start too early", func(c *leaderEpochCache) error { c.truncateFromStart(1); return nil }, base},
		{"from start at the first offset", func(c *leaderEpochCache) error { c.truncateFromStart(6); return nil }, base},
		{"from start at the latest epoch", func(c *leaderEpochCache) error { c.truncateFromStart(11); return nil }, []EpochEntry{ee(4, 11)}},
		{"from start past the latest epoch", func(c *leaderEpochCache) error { c.truncateFromStart(15); return nil }, []EpochEntry{ee(4, 15)}},
		{"from start at an epoch boundary", func(c *leaderEpochCache) error { c.truncateFromStart(8); return nil }, []EpochEntry{ee(3, 8), ee(4, 11)}},
		{"from end undefined", func(c *leaderEpochCache) error { c.truncateFromEnd(-1); return nil }, base},
		{"from end past the latest", func(c *leaderEpochCache) error { c.truncateFromEnd(12); return nil }, base},
		{"from end at an epoch boundary", func(c *leaderEpochCache) error { c.truncateFromEnd(11); return nil }, []EpochEntry{ee(2, 6), ee(3, 8)}},
		{"from end between epochs", func(c *leaderEpochCache) error { c.truncateFromEnd(9); return nil }, []EpochEntry{ee(2, 6), ee(3, 8)}},
		{"from end at the first", func(c *leaderEpochCache) error { c.truncateFromEnd(6); return nil }, nil},
		{"from end at zero", func(c *leaderEpochCache) error { c.truncateFromEnd(0); return nil }, nil},
		{"clear", func(c *leaderEpochCache) error { return c.clear() }, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newTestEpochCache(t, base...)
			if err := tc.op(c); err != nil {
				t.Fatal(err)
			}
			checkEpochs(t, c.entries, tc.want...)
			if err := c.persistLocked(syncAll); err != nil {
				t.Fatal(err)
			}
			c2, err := loadLeaderEpochCache(OSFS{}, c.dir, slog.Default())
			if err != nil {
				t.Fatal(err)
			}
			checkEpochs(t, c2.entries, tc.want...)
		})
	}
	// An empty cache stays empty.
	c := newTestEpochCache(t)
	for _, op := range []func() error{func() error { c.truncateFromStart(5); return nil }, func() error { c.truncateFromEnd(5); return nil }, c.clear} {
		if err := op(); err != nil {
			t.Fatal(err)
		}
		checkEpochs(t, c.entries)
	}
}

func TestEpochCheckpointFileFormat(t *testing.T) {
	c := newTestEpochCache(t, ee(0, 0), ee(2, 5), ee(5, 8))
	b, err := os.ReadFile(filepath.Join(c.dir, leaderEpochFile))
	if err != nil {
		t.Fatal(err)
	}
	if want := "0\n3\n0 0\n2 5\n5 8\n"; string(b) != want {
		t.Fatalf("checkpoint file %q, want %q", b, want)
	}
	if _, err := os.Stat(filepath.Join(c.dir, leaderEpochFile+checkpointTmp)); !os.IsNotExist(err) {
		t.Fatalf("temporary file left: %v", err)
	}
	// Kafka's reader splits on any white space; so does ours.
	if err := os.WriteFile(filepath.Join(c.dir, leaderEpochFile), []byte("0\n2\n1  10\n3\t20\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c2, err := loadLeaderEpochCache(OSFS{}, c.dir, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	checkEpochs(t, c2.entries, ee(1, 10), ee(3, 20))
	for _, bad := range []string{"1\n1\n1 10\n", "0\n2\n1 10\n", "0\n1\n1\n", "0\n1\nx 10\n", "0\n1\n1 -3\n", ""} {
		if err := os.WriteFile(filepath.Join(c.dir, leaderEpochFile), []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		c3, err := loadLeaderEpochCache(OSFS{}, c.dir, slog.Default())
		if err != nil || len(c3.entries) != 0 {
			t.Fatalf("malformed checkpoint %q: %v %v, want an empty cache", bad, c3, err)
		}
	}
}

// epochLog appends batches at epochs 0, 0, 2, 5 (offsets 0-2, 3-4, 5-7, 8)
// and starts epoch 6 at the log end, 9.
func epochLog(t *testing.T, l *Log) {
	t.Helper()
	for _, b := range []struct{ n, epoch int }{{3, 0}, {2, 0}, {3, 2}, {1, 5}} {
		if _, err := l.AppendAsLeader(simpleBatch(t, compress.None, b.n, testEpoch.UnixMilli()), int32(b.epoch)); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.AssignEpochStartOffset(6, l.LogEndOffset()); err != nil {
		t.Fatal(err)
	}
	l.UpdateHighWatermark(l.LogEndOffset())
}

func TestLeaderEpochsOfLog(t *testing.T) {
	dir := t.TempDir()
	l := openTestLog(t, dir, testConfig(), nil)
	if _, ok := l.LatestEpoch(); ok {
		t.Fatal("new log has a latest epoch")
	}
	if e, o := l.EndOffsetForEpoch(0); e != -1 || o != -1 {
		t.Fatalf("empty cache: (%d, %d)", e, o)
	}
	epochLog(t, l)
	checkEpochs(t, l.epochEntries(), ee(0, 0), ee(2, 5), ee(5, 8), ee(6, 9))
	if e, ok := l.LatestEpoch(); !ok || e != 6 {
		t.Fatalf("latest epoch %d %v", e, ok)
	}
	for _, c := range []struct {
		requested, epoch int32
		end              int64
	}{{0, 0, 5}, {1, 0, 5}, {2, 2, 8}, {3, 2, 8}, {5, 5, 9}, {6, 6, 9}, {7, -1, -1}, {-1, -1, -1}} {
		if e, o := l.EndOffsetForEpoch(c.requested); e != c.epoch || o != c.end {
			t.Errorf("EndOffsetForEpoch(%d) = (%d, %d), want (%d, %d)", c.requested, e, o, c.epoch, c.end)
		}
	}
	// The current epoch ends at the log end offset as it moves.
	mustAppend(t, l, simpleBatch(t, compress.None, 2, testEpoch.UnixMilli())) // epoch 7
	checkEpochs(t, l.epochEntries(), ee(0, 0), ee(2, 5), ee(5, 8), ee(7, 9))
	if _, err := l.AppendAsLeader(simpleBatch(t, compress.None, 1, testEpoch.UnixMilli()), 7); err != nil {
		t.Fatal(err)
	}
	if e, o := l.EndOffsetForEpoch(7); e != 7 || o != 12 {
		t.Fatalf("EndOffsetForEpoch(7) = (%d, %d), want (7, 12)", e, o)
	}
	// Markers and coordinator appends record their epoch too.
	if _, err := l.AppendMarker(TxnMarker{ProducerID: 9, ProducerEpoch: 0, Commit: true}, 8); err != nil {
		t.Fatal(err)
	}
	checkEpochs(t, l.epochEntries(), ee(0, 0), ee(2, 5), ee(5, 8), ee(7, 9), ee(8, 12))
	if err := l.AssignEpochStartOffset(-1, 3); kerrCode(err) != kerr.InvalidRequest.Code {
		t.Fatalf("assign of epoch -1: %v", err)
	}
	// A batch without a leader epoch records nothing.
	if _, err := l.AppendAsLeader(simpleBatch(t, compress.None, 1, testEpoch.UnixMilli()), -1); err != nil {
		t.Fatal(err)
	}
	checkEpochs(t, l.epochEntries(), ee(0, 0), ee(2, 5), ee(5, 8), ee(7, 9), ee(8, 12))
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if e, o := l.EndOffsetForEpoch(8); e != 8 || o != 14 {
		t.Fatalf("EndOffsetForEpoch after close = (%d, %d)", e, o)
	}
	if err := l.AssignEpochStartOffset(9, 20); kerrCode(err) != kerr.KafkaStorageError.Code {
		t.Fatalf("assign after close: %v", err)
	}
}

func TestLeaderEpochCheckpointSurvivesReopenAndCrash(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig()
	l := openTestLog(t, dir, cfg, nil)
	epochLog(t, l)
	want := []EpochEntry{ee(0, 0), ee(2, 5), ee(5, 8), ee(6, 9)}
	checkEpochs(t, l.epochEntries(), want...)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// Reopened: the entry at the log end (epoch 6 never wrote) goes, as in
	// Kafka's LogLoader.
	l = openTestLog(t, dir, cfg, nil)
	checkEpochs(t, l.epochEntries(), want[:3]...)
	if err := l.AssignEpochStartOffset(6, l.LogEndOffset()); err != nil {
		t.Fatal(err)
	}
	if _, err := l.AppendAsLeader(simpleBatch(t, compress.None, 2, testEpoch.UnixMilli()), 6); err != nil {
		t.Fatal(err)
	}
	crash(l)
	l = openTestLog(t, dir, cfg, nil)
	checkEpochs(t, l.epochEntries(), want...)
	if e, o := l.EndOffsetForEpoch(5); e != 5 || o != 9 {
		t.Fatalf("EndOffsetForEpoch(5) after a crash = (%d, %d)", e, o)
	}
	// Records lost in a crash (a torn tail) take their epochs with them.
	if _, err := l.AppendAsLeader(simpleBatch(t, compress.None, 2, testEpoch.UnixMilli()), 9); err != nil {
		t.Fatal(err)
	}
	crash(l)
	logFile := segPath(dir, 0, logFileSuffix)
	if err := os.Truncate(logFile, fileSize(t, logFile)-5); err != nil {
		t.Fatal(err)
	}
	l = openTestLog(t, dir, cfg, nil)
	if l.LogEndOffset() != 11 {
		t.Fatalf("log end %d after a torn tail, want 11", l.LogEndOffset())
	}
	checkEpochs(t, l.epochEntries(), want...)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// No checkpoint: an empty cache.
	if err := os.Remove(filepath.Join(dir, leaderEpochFile)); err != nil {
		t.Fatal(err)
	}
	l = openTestLog(t, dir, cfg, nil)
	defer l.Close()
	checkEpochs(t, l.epochEntries())
	if _, ok := l.LatestEpoch(); ok {
		t.Fatal("latest epoch without a checkpoint")
	}
}

// TestLeaderEpochsFollowLogStart: retention and DeleteRecords move the log
// start offset, and the first epoch then starts there (truncateFromStart).
func TestLeaderEpochsFollowLogStart(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig()
	cfg.SegmentBytes = 300
	cfg.RetentionBytes = -1
	l := openTestLog(t, dir, cfg, nil)
	epochLog(t, l)
	if _, err := l.DeleteRecordsBefore(6); err != nil {
		t.Fatal(err)
	}
	checkEpochs(t, l.epochEntries(), ee(2, 6), ee(5, 8), ee(6, 9))
	for _, c := range []struct {
		requested, epoch int32
		end              int64
	}{{0, 0, 6}, {1, 1, 6}, {2, 2, 8}} {
		if e, o := l.EndOffsetForEpoch(c.requested); e != c.epoch || o != c.end {
			t.Errorf("EndOffsetForEpoch(%d) = (%d, %d), want (%d, %d)", c.requested, e, o, c.epoch, c.end)
		}
	}
	// Retention deleting whole segments (one batch each here).
	for range 4 {
		if _, err := l.AppendAsLeader(simpleBatch(t, compress.None, 5, testEpoch.UnixMilli()), 6); err != nil {
			t.Fatal(err)
		}
	}
	l.UpdateHighWatermark(l.LogEndOffset())
	cfg.RetentionBytes = 200
	l.SetConfig(cfg)
	if n, err := l.DeleteOldSegments(testEpoch); err != nil || n == 0 {
		t.Fatalf("retention deleted %d segments: %v", n, err)
	}
	lso := l.LogStartOffset()
	if lso <= 9 {
		t.Fatalf("log start %d, want it in epoch 6", lso)
	}
	checkEpochs(t, l.epochEntries(), ee(6, lso))
	crash(l)
	l = openTestLog(t, dir, cfg, nil)
	defer l.Close()
	checkEpochs(t, l.epochEntries(), ee(6, lso))
}
