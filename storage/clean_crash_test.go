package storage

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/strait/strait/storage/compress"
)

// crashFS lets a budget of mutations (file creation, write, truncate,
// fsync, rename, removal) through and then fails every later one, as if
// the process had died at that point: what is on disk is exactly what the
// mutations before it did (a process crash, not a power loss: the page
// cache survives).
type crashFS struct {
	OSFS
	mu     sync.Mutex
	budget int // < 0: unlimited
	dead   bool
	last   string // the mutation that was refused first
}

var errCrashed = fmt.Errorf("crashed")

func (f *crashFS) mutate(op, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.dead {
		return errCrashed
	}
	if f.budget == 0 {
		f.dead, f.last = true, op+" "+filepath.Base(name)
		return errCrashed
	}
	if f.budget > 0 {
		f.budget--
	}
	return nil
}

func (f *crashFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	if flag&(os.O_CREATE|os.O_TRUNC) != 0 {
		if err := f.mutate("create", name); err != nil {
			return nil, err
		}
	}
	file, err := f.OSFS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &crashFile{File: file, fs: f, name: name}, nil
}

func (f *crashFS) Remove(name string) error {
	if err := f.mutate("remove", name); err != nil {
		return err
	}
	return f.OSFS.Remove(name)
}

func (f *crashFS) Rename(from, to string) error {
	if err := f.mutate("rename", from+" -> "+filepath.Base(to)); err != nil {
		return err
	}
	return f.OSFS.Rename(from, to)
}

// SyncDir and Sync only count: a process crash loses nothing fsync would
// have saved, and skipping the real ones keeps the test fast.
func (f *crashFS) SyncDir(path string) error { return f.mutate("syncdir", path) }

type crashFile struct {
	File
	fs   *crashFS
	name string
}

func (cf *crashFile) WriteAt(p []byte, off int64) (int, error) {
	if err := cf.fs.mutate("write", cf.name); err != nil {
		return 0, err
	}
	return cf.File.WriteAt(p, off)
}

func (cf *crashFile) Truncate(size int64) error {
	if err := cf.fs.mutate("truncate", cf.name); err != nil {
		return err
	}
	return cf.File.Truncate(size)
}

func (cf *crashFile) Sync() error { return cf.fs.mutate("fsync", cf.name) }

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	entries, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(to, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCompactionCrashAtEveryStepRecovers kills the cleaning at every
// mutation it makes, from writing the .cleaned files through the swap and
// the checkpoint, and reopens the log: it must hold only original records
// in order, including every record the finished cleaning keeps, and no
// leftover files of the swap.
func TestCompactionCrashAtEveryStepRecovers(t *testing.T) {
	template := filepath.Join(t.TempDir(), "template")
	writeCfg := compactConfig()
	writeCfg.SegmentBytes = 700 // several segments per cleaning group
	l := openTestLog(t, template, writeCfg, nil)
	orig := keyedLog(t, l, compress.None, 40, 3, 7, testEpoch.UnixMilli())
	roll(t, l)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	cfg := compactConfig()
	cfg.SegmentBytes = 3000

	// The finished cleaning, for reference.
	ref := filepath.Join(t.TempDir(), "ref")
	copyDir(t, template, ref)
	l = openTestLog(t, ref, cfg, nil)
	l.UpdateHighWatermark(l.LogEndOffset())
	res, cleaned := cleanOnce(t, testCleaner(t, l), testEpoch)
	if !cleaned || res.SegmentsReplaced < 4 {
		t.Fatalf("reference cleaning %+v: want several segments per group", res)
	}
	want := allRecords(readLog(t, l))
	l.Close()

	quiet := slog.New(slog.DiscardHandler)
	states := map[int]int{} // records after recovery -> crash points
	for n := 0; ; n++ {
		dir := filepath.Join(t.TempDir(), "log")
		copyDir(t, template, dir)
		fsys := &crashFS{budget: -1}
		l, err := Open(dir, cfg, Options{FS: fsys, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		l.UpdateHighWatermark(l.LogEndOffset())
		fsys.mu.Lock()
		fsys.budget = n
		fsys.mu.Unlock()
		_, _, cleanErr := testCleaner(t, l).runOnce(testEpoch)
		crash(l)
		if !fsys.dead {
			if cleanErr != nil {
				t.Fatalf("cleaning without a crash failed: %v", cleanErr)
			}
			if n < 20 {
				t.Fatalf("only %d mutations in a cleaning", n)
			}
			break
		}

		l, err = Open(dir, cfg, Options{FS: &crashFS{budget: -1}, Logger: quiet})
		if err != nil {
			t.Fatalf("crash at %q: reopen: %v", fsys.last, err)
		}
		got := allRecords(readLog(t, l))
		checkSubsetOf(t, fsys.last, orig, got, want)
		states[len(got)]++
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if name := e.Name(); strings.HasSuffix(name, cleanedFileSuffix) || strings.HasSuffix(name, swapFileSuffix) ||
				strings.HasSuffix(name, deletedFileSuffix) {
				t.Fatalf("crash at %q: %s left after recovery", fsys.last, name)
			}
		}
	}
	if states[len(orig)] == 0 || len(states) < 2 {
		t.Fatalf("recovered states (records -> crash points) %v: want both the original and cleaned ones", states)
	}
}

// checkSubsetOf checks that got holds original records only, in offset
// order, and every record of want.
func checkSubsetOf(t *testing.T, where string, orig, got, want []loggedRecord) {
	t.Helper()
	byOffset := map[int64]loggedRecord{}
	for _, r := range orig {
		byOffset[r.offset] = r
	}
	present := map[int64]bool{}
	for _, r := range got {
		o, ok := byOffset[r.offset]
		if !ok || string(o.key) != string(r.key) || string(o.value) != string(r.value) {
			t.Fatalf("crash at %q: record %d is %s=%s, not an original record", where, r.offset, r.key, r.value)
		}
		present[r.offset] = true
	}
	for _, r := range want {
		if !present[r.offset] {
			t.Fatalf("crash at %q: record %d (%s) lost", where, r.offset, r.key)
		}
	}
}
