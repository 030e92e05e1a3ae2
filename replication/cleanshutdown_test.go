package replication

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strait/strait/storage"
)

// restart starts a new Manager over e's log directories and metadata, as
// the broker's next start does, and makes it e's (the previous one must be
// closed, or be a crashed one's whose writes no longer count).
func (e *testEnv) restart(t *testing.T, cfg Config) {
	t.Helper()
	e.restartWith(t, cfg, nil)
}

// restartWith is restart with the new Manager logging to logger (nil:
// nowhere).
func (e *testEnv) restartWith(t *testing.T, cfg Config, logger *slog.Logger) {
	t.Helper()
	e.m = e.newManager(cfg, logger)
	if err := e.m.Start(); err != nil {
		t.Fatal(err)
	}
	m := e.m
	t.Cleanup(func() { _ = m.Close() })
}

// newManager is a Manager of cfg over e's metadata, ISR writer and broker
// client, logging to logger (nil: nowhere), not started.
func (e *testEnv) newManager(cfg Config, logger *slog.Logger) *Manager {
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return New(cfg, Deps{
		Metadata: e.meta, ISR: e.isr, Brokers: e.m.client,
		TopicConfig: func(map[string]string) (storage.LogConfig, int32, error) {
			return storage.DefaultLogConfig(), 2, nil
		},
		Logger: logger,
		Now:    e.clock.Now,
	})
}

// recovered is each hosted partition's RecoveredSegments, by name.
func recovered(m *Manager) map[string]int {
	out := map[string]int{}
	m.ForEach(func(p *Partition) { out[fmt.Sprintf("%s-%d", p.topic, p.index)] = p.Log().RecoveredSegments() })
	return out
}

func dirMarked(t *testing.T, dir string) bool {
	t.Helper()
	clean, _, err := storage.HadCleanShutdown(nil, dir)
	if err != nil {
		t.Fatal(err)
	}
	return clean
}

// partitionMarkers lists the partition directories of logDir holding
// their own clean-shutdown marker.
func partitionMarkers(t *testing.T, logDir string) []string {
	t.Helper()
	ents, err := os.ReadDir(logDir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if _, err := os.Stat(filepath.Join(logDir, e.Name(), storage.CleanShutdownFileName)); err == nil && e.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out
}

// TestCleanStopThenStartRecoversNothing: a clean stop writes one marker in
// the log directory (Kafka's format, with the broker epoch) and none per
// partition; the next start loads every log without recovery, and the
// marker is gone while the broker runs. Both ways of closing: each log
// fsynced, and many logs made durable by one syncfs.
func TestCleanStopThenStartRecoversNothing(t *testing.T) {
	for _, minLogs := range []int{1, 1000} {
		t.Run(fmt.Sprintf("syncfs_from_%d_logs", minLogs), func(t *testing.T) {
			var cfg Config
			e := newEnv(t, func(c *Config) { c.SyncFSMinLogs = minLogs; cfg = *c }, nil)
			e.topic("kept", []int32{1}, []int32{1}, []int32{1})
			for i := range 3 {
				produce(t, e.m.Partition("kept", int32(i)), 5+i)
			}
			if err := e.m.Close(); err != nil {
				t.Fatal(err)
			}
			body, err := os.ReadFile(filepath.Join(e.dir, storage.CleanShutdownFileName))
			if err != nil {
				t.Fatalf("no clean-shutdown marker in the log directory: %v", err)
			}
			if want := `{"version":0,"brokerEpoch":101}`; string(body) != want {
				t.Errorf("marker %q, want %q", body, want)
			}
			if got := partitionMarkers(t, e.dir); len(got) != 0 {
				t.Errorf("partition directories with their own marker: %v", got)
			}

			e.restart(t, cfg)
			if dirMarked(t, e.dir) {
				t.Error("the log directory's marker is still there while the broker runs")
			}
			got := recovered(e.m)
			if len(got) != 3 {
				t.Fatalf("hosted after restart: %v", got)
			}
			for name, n := range got {
				if n != 0 {
					t.Errorf("%s: %d segments recovered after a clean stop, want 0", name, n)
				}
			}
			for i := range 3 {
				if leo := e.m.Partition("kept", int32(i)).Log().LogEndOffset(); leo != int64(5+i) {
					t.Errorf("kept-%d: log end offset %d after restart, want %d", i, leo, 5+i)
				}
			}
			if err := e.m.Close(); err != nil {
				t.Fatal(err)
			}
			if !dirMarked(t, e.dir) {
				t.Error("no marker after the second clean stop")
			}
		})
	}
}

// TestCrashAfterStartRecovers: the marker read at start is removed durably
// before the logs are written: a power loss while the broker runs (its
// stop's writes kept nowhere) leaves no marker, and the next start
// recovers every log that holds records, keeping what was durable.
func TestCrashAfterStartRecovers(t *testing.T) {
	sfs := storage.NewStrictFS(nil)
	var cfg Config
	e := newEnv(t, func(c *Config) { c.FS = sfs; cfg = *c }, nil)
	e.topic("crashy", []int32{1}, []int32{1})
	for i := range 2 {
		produce(t, e.m.Partition("crashy", int32(i)), 4)
	}
	if err := e.m.Close(); err != nil {
		t.Fatal(err)
	}
	e.restart(t, cfg)
	for i := range 2 {
		produce(t, e.m.Partition("crashy", int32(i)), 3)
	}
	sfs.CutPower()
	if err := e.m.Close(); err != nil { // its fsyncs keep nothing now
		t.Fatal(err)
	}
	if _, err := sfs.Crash(); err != nil {
		t.Fatal(err)
	}
	if dirMarked(t, e.dir) {
		t.Fatal("a clean-shutdown marker survived a power loss of a running broker")
	}
	e.restart(t, cfg)
	for name, n := range recovered(e.m) {
		if n == 0 {
			t.Errorf("%s: not recovered after a crash", name)
		}
	}
	for i := range 2 {
		if leo := e.m.Partition("crashy", int32(i)).Log().LogEndOffset(); leo < 4 {
			t.Errorf("crashy-%d: log end offset %d after a crash, want the 4 records the clean stop made durable", i, leo)
		}
	}
}

// TestFailedLogCloseLeavesItsDirectoryUnmarked: a log that fails to close
// keeps its log directory from being marked clean; another log directory
// whose logs closed is marked.
func TestFailedLogCloseLeavesItsDirectoryUnmarked(t *testing.T) {
	ffs := storage.NewFaultFS(nil)
	base := t.TempDir()
	dirA, dirB := filepath.Join(base, "a"), filepath.Join(base, "b")
	e := newEnv(t, func(c *Config) { c.FS = ffs; c.LogDirs = []string{dirA, dirB} }, nil)
	e.topic("split", []int32{1}, []int32{1})
	in := map[string]bool{}
	for i := range 2 {
		p := e.m.Partition("split", int32(i))
		produce(t, p, 3)
		in[filepath.Clean(LogDirOf(p))] = true
	}
	if !in[dirA] || !in[dirB] {
		t.Fatalf("partitions not spread over both log dirs: %v", in)
	}
	// The producer-state snapshot each close writes fails in a.
	ffs.FailOpens(func(name string) error {
		if strings.HasPrefix(name, dirA+string(filepath.Separator)) && strings.HasSuffix(name, ".snapshot.tmp") {
			return storage.ErrInjected
		}
		return nil
	})
	err := e.m.Close()
	if !errors.Is(err, storage.ErrInjected) {
		t.Fatalf("Close: %v, want the injected failure", err)
	}
	ffs.FailOpens(nil)
	if dirMarked(t, dirA) {
		t.Error("the log directory of a log that failed to close is marked clean")
	}
	if !dirMarked(t, dirB) {
		t.Error("the log directory whose logs all closed is not marked clean")
	}
}

// TestUpgradeFromPartitionMarkers: a data directory written by a Strait
// that marked each partition directory: a partition's own marker counts as
// clean (no recovery) and goes; the next stop marks the log directory.
func TestUpgradeFromPartitionMarkers(t *testing.T) {
	var cfg Config
	e := newEnv(t, func(c *Config) { cfg = *c }, nil)
	e.topic("old", []int32{1}, []int32{1})
	for i := range 2 {
		produce(t, e.m.Partition("old", int32(i)), 6)
	}
	if err := e.m.Close(); err != nil {
		t.Fatal(err)
	}
	// The layout the previous version left: a marker per partition, none
	// in the log directory.
	if err := os.Remove(filepath.Join(e.dir, storage.CleanShutdownFileName)); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if err := os.WriteFile(filepath.Join(e.dir, fmt.Sprintf("old-%d", i), storage.CleanShutdownFileName), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	e.restart(t, cfg)
	for name, n := range recovered(e.m) {
		if n != 0 {
			t.Errorf("%s: %d segments recovered after an old version's clean stop, want 0", name, n)
		}
	}
	if got := partitionMarkers(t, e.dir); len(got) != 0 {
		t.Errorf("partition markers left while running: %v", got)
	}
	if err := e.m.Close(); err != nil {
		t.Fatal(err)
	}
	if !dirMarked(t, e.dir) {
		t.Error("the log directory is not marked after the upgraded broker's clean stop")
	}
}

// TestUnhostedPartitionAfterCrashRenamedStray: after a start without the
// marker, a partition directory no topic assigns here is renamed stray at
// the start (stray.go), so it no longer keeps the log dir from being
// marked at the next stop, with or without its own marker.
func TestUnhostedPartitionAfterCrashRenamedStray(t *testing.T) {
	for _, ownMarker := range []bool{false, true} {
		t.Run(fmt.Sprintf("own_marker_%v", ownMarker), func(t *testing.T) {
			var cfg Config
			e := newEnv(t, func(c *Config) { cfg = *c }, nil)
			e.topic("hosted", []int32{1})
			produce(t, e.m.Partition("hosted", 0), 2)
			if err := e.m.Close(); err != nil {
				t.Fatal(err)
			}
			// A crash instead of that stop, and a partition left from
			// before that no topic names.
			if err := os.Remove(filepath.Join(e.dir, storage.CleanShutdownFileName)); err != nil {
				t.Fatal(err)
			}
			stray := filepath.Join(e.dir, "gone-0")
			if err := os.MkdirAll(stray, 0o755); err != nil {
				t.Fatal(err)
			}
			if ownMarker {
				if err := os.WriteFile(filepath.Join(stray, storage.CleanShutdownFileName), nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			e.restart(t, cfg)
			if n := e.m.Partition("hosted", 0).Log().RecoveredSegments(); n == 0 {
				t.Error("hosted-0 not recovered after a start without the marker")
			}
			if _, err := os.Stat(stray); !os.IsNotExist(err) {
				t.Errorf("gone-0 not renamed: %v", err)
			}
			if got := strayDirs(t, e.dir, "gone-0"); len(got) != 1 {
				t.Errorf("stray directories of gone-0: %v", got)
			}
			if err := e.m.Close(); err != nil {
				t.Fatal(err)
			}
			if !dirMarked(t, e.dir) {
				t.Error("log directory not marked at the clean stop")
			}
		})
	}
}

// TestDirMarkerCoversEachLogOnce: the marker read at start covers a
// partition directory present then for its first open only (a later open
// of the same name follows a close while running, which the marker does not
// cover), and never one created since; a failed open or close keeps the
// directory from being marked until the log opens again.
func TestDirMarkerCoversEachLogOnce(t *testing.T) {
	logDir := t.TempDir()
	for _, name := range []string{"a-0", "b-0"} {
		if err := os.MkdirAll(filepath.Join(logDir, name), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := storage.WriteCleanShutdown(nil, logDir, 3); err != nil {
		t.Fatal(err)
	}
	m := &Manager{cfg: Config{LogDirs: []string{logDir}, FS: storage.OSFS{}}, logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if err := m.loadCleanShutdown(); err != nil {
		t.Fatal(err)
	}
	cs := &m.shutdownMarks
	if dirMarked(t, logDir) {
		t.Fatal("marker not removed at start")
	}
	a := filepath.Join(logDir, "a-0")
	if !cs.openedClean(a) {
		t.Error("first open of a partition present at start not covered")
	}
	if cs.openedClean(a) {
		t.Error("second open of the same partition covered")
	}
	if cs.openedClean(filepath.Join(logDir, "new-0")) {
		t.Error("a partition created after start covered")
	}
	if err := cs.markable(storage.OSFS{}, logDir); err != nil {
		t.Errorf("b-0, never opened, is covered by the marker read at start: %v", err)
	}
	cs.noteClosed(a, storage.ErrInjected)
	if err := cs.markable(storage.OSFS{}, logDir); err == nil {
		t.Error("markable with a log whose close failed")
	}
	cs.noteOpen(a, nil)
	if err := cs.markable(storage.OSFS{}, logDir); err != nil {
		t.Errorf("the failed log opened again: %v", err)
	}
	if err := cs.markable(storage.OSFS{}, filepath.Join(logDir, "other")); err == nil {
		t.Error("markable for a log directory not read at start")
	}
}
