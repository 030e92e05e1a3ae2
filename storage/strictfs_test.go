package storage

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/strait/strait/storage/compress"
)

func strictWrite(t *testing.T, fsys FS, name string, data []byte, sync bool) File {
	t.Helper()
	f, err := fsys.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(data, 0); err != nil {
		t.Fatal(err)
	}
	if sync {
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

func mustCrash(t *testing.T, s *StrictFS) CrashReport {
	t.Helper()
	r, err := s.Crash()
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func mustSyncDir(t *testing.T, fsys FS, dir string) {
	t.Helper()
	if err := fsys.SyncDir(dir); err != nil {
		t.Fatal(err)
	}
}

// wantFile checks name's content on the real filesystem; nil: absent.
func wantFile(t *testing.T, name string, want []byte) {
	t.Helper()
	got, err := os.ReadFile(name)
	if want == nil {
		if !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s: want absent, got %q (%v)", filepath.Base(name), got, err)
		}
		return
	}
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("%s: %q (%v), want %q", filepath.Base(name), got, err, want)
	}
}

func TestStrictFSFileContent(t *testing.T) {
	dir := t.TempDir()
	s := NewStrictFS(nil)
	name := filepath.Join(dir, "f")
	f := strictWrite(t, s, name, []byte("hello"), true)
	mustSyncDir(t, s, dir)
	// Unsynced: an overwrite at the start, an append, then a truncation
	// and a write past it.
	if _, err := f.WriteAt([]byte("J"), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte(" world"), 5); err != nil {
		t.Fatal(err)
	}
	wantFile(t, name, []byte("Jello world"))
	if r := mustCrash(t, s); r != (CrashReport{Files: 1, Bytes: 6}) {
		t.Fatalf("crash report %+v, want one file, 6 bytes", r)
	}
	wantFile(t, name, []byte("hello"))
	if _, err := f.WriteAt([]byte("x"), 0); err == nil {
		t.Fatal("a file opened before the crash still writes")
	}

	f = strictWrite(t, s, name, []byte("HE"), true) // synced: HEllo
	if err := f.Truncate(3); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(1); err != nil { // unsynced
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("abcdef"), 1); err != nil {
		t.Fatal(err)
	}
	mustCrash(t, s)
	wantFile(t, name, []byte("HEl"))

	// Appends synced one after the other, as a segment's.
	f = strictWrite(t, s, name, nil, false)
	for i, part := range []string{"a", "bc", "def"} {
		if _, err := f.WriteAt([]byte(part), int64(3+i*(i+1)/2)); err != nil {
			t.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.WriteAt([]byte("lost"), 9); err != nil {
		t.Fatal(err)
	}
	mustCrash(t, s)
	wantFile(t, name, []byte("HElabcdef"))
}

func TestStrictFSEntries(t *testing.T) {
	dir := t.TempDir()
	s := NewStrictFS(nil)
	// A file that was there before: durable as first seen.
	old := filepath.Join(dir, "old")
	if err := os.WriteFile(old, []byte("before"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A file beside that never goes through the FS: left alone.
	other := filepath.Join(dir, "other")
	if err := os.WriteFile(other, []byte("not mine"), 0o644); err != nil {
		t.Fatal(err)
	}

	created := filepath.Join(dir, "created")
	strictWrite(t, s, created, []byte("synced, dir not"), true).Close()
	kept := filepath.Join(dir, "kept")
	strictWrite(t, s, kept, []byte("k"), true).Close()
	mustSyncDir(t, s, dir)
	renamed := filepath.Join(dir, "renamed")
	if err := s.Rename(kept, renamed); err != nil {
		t.Fatal(err)
	}
	if err := s.Remove(old); err != nil {
		t.Fatal(err)
	}
	// created is made after the SyncDir above.
	if err := s.Remove(created); err != nil {
		t.Fatal(err)
	}
	strictWrite(t, s, created, []byte("again"), true).Close()
	sub := filepath.Join(dir, "sub", "deeper")
	if err := s.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	strictWrite(t, s, filepath.Join(sub, "f"), []byte("x"), true).Close()
	mustSyncDir(t, s, sub) // the entry in sub/deeper, not sub itself
	mustCrash(t, s)

	wantFile(t, old, []byte("before"))
	wantFile(t, other, []byte("not mine"))
	wantFile(t, created, []byte("synced, dir not"))
	wantFile(t, kept, []byte("k"))
	wantFile(t, renamed, nil)
	if _, err := os.Stat(filepath.Join(dir, "sub")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a directory whose parent was never synced survived: %v", err)
	}

	// The same changes made durable.
	if err := s.Rename(kept, renamed); err != nil {
		t.Fatal(err)
	}
	if err := s.Remove(old); err != nil {
		t.Fatal(err)
	}
	if err := s.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	strictWrite(t, s, filepath.Join(sub, "f"), []byte("x"), true).Close()
	for _, d := range []string{sub, filepath.Dir(sub), dir} {
		mustSyncDir(t, s, d)
	}
	mustCrash(t, s)
	wantFile(t, old, nil)
	wantFile(t, kept, nil)
	wantFile(t, renamed, []byte("k"))
	wantFile(t, filepath.Join(sub, "f"), []byte("x"))
	wantFile(t, other, []byte("not mine"))

	// A directory removed whole comes back whole unless its parent is
	// synced after.
	if err := s.RemoveAll(filepath.Join(dir, "sub")); err != nil {
		t.Fatal(err)
	}
	mustCrash(t, s)
	wantFile(t, filepath.Join(sub, "f"), []byte("x"))
}

func TestStrictFSCutPower(t *testing.T) {
	dir := t.TempDir()
	s := NewStrictFS(nil)
	name := filepath.Join(dir, "f")
	f := strictWrite(t, s, name, []byte("one"), true)
	mustSyncDir(t, s, dir)
	s.CutPower()
	// The process runs on: it reads what it wrote, its fsyncs succeed and
	// keep nothing.
	if _, err := f.WriteAt([]byte("two"), 3); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	strictWrite(t, s, filepath.Join(dir, "g"), []byte("g"), true).Close()
	mustSyncDir(t, s, dir)
	wantFile(t, name, []byte("onetwo"))
	mustCrash(t, s)
	wantFile(t, name, []byte("one"))
	wantFile(t, filepath.Join(dir, "g"), nil)
	// Power is back: syncs count again.
	f = strictWrite(t, s, name, []byte("three"), true)
	f.Close()
	mustCrash(t, s)
	wantFile(t, name, []byte("three"))
}

// TestStrictFSLogRecovery: a log that lost its unsynced tail reopens at or
// past its recovery point, holding a prefix of what was appended, and
// appends on.
func TestStrictFSLogRecovery(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "t-0")
	s := NewStrictFS(nil)
	if err := s.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	mustSyncDir(t, s, filepath.Dir(dir)) // as the replica manager would
	cfg := recoveryConfig()
	l, err := Open(dir, cfg, Options{FS: s})
	if err != nil {
		t.Fatal(err)
	}
	stored := appendBatches(t, l, compress.None, 150, testEpoch.UnixMilli())
	l.flushes.Wait() // the rolled segments are synced
	rp := l.recoveryPoint.Load()
	if rp <= 0 {
		t.Fatalf("recovery point %d after rolls", rp)
	}
	s.CutPower()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	mustCrash(t, s)
	if _, err := os.Stat(filepath.Join(dir, cleanShutdownFile)); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("the clean shutdown marker written after the power cut survived")
	}
	l, err = Open(dir, cfg, Options{FS: s})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	leo := l.LogEndOffset()
	last := parseBatchHeader(stored[len(stored)-1])
	if leo < rp || leo >= last.NextOffset() {
		t.Fatalf("LEO %d after the crash: want in [%d, last offset): the unsynced tail should be gone", leo, rp)
	}
	i := slices.IndexFunc(stored, func(b []byte) bool { h := parseBatchHeader(b); return h.NextOffset() == leo })
	if i < 0 {
		t.Fatalf("LEO %d is not at a batch boundary", leo)
	}
	verifyLog(t, l, stored[:i+1])
}

// TestStrictFSSyncFS: SyncFS makes every write and every directory entry
// durable at once, as syncfs(2) of the whole filesystem; CutPower makes it
// keep nothing, as Sync.
func TestStrictFSSyncFS(t *testing.T) {
	dir := t.TempDir()
	s := NewStrictFS(nil)
	if !CanSyncFS(s) {
		t.Fatal("StrictFS does not offer SyncFS")
	}
	sub := filepath.Join(dir, "sub")
	if err := s.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	a := strictWrite(t, s, filepath.Join(dir, "a"), []byte("one"), false)
	strictWrite(t, s, filepath.Join(sub, "b"), []byte("two"), false)
	if _, err := SyncFS(s, dir); err != nil {
		t.Fatal(err)
	}
	if _, err := a.WriteAt([]byte("ONE more"), 0); err != nil { // after it: lost
		t.Fatal(err)
	}
	strictWrite(t, s, filepath.Join(dir, "c"), []byte("three"), false)
	mustCrash(t, s)
	wantFile(t, filepath.Join(dir, "a"), []byte("one"))
	wantFile(t, filepath.Join(sub, "b"), []byte("two"))
	wantFile(t, filepath.Join(dir, "c"), nil)

	strictWrite(t, s, filepath.Join(dir, "d"), []byte("four"), false)
	s.CutPower()
	if _, err := SyncFS(s, dir); err != nil {
		t.Fatal(err)
	}
	mustCrash(t, s)
	wantFile(t, filepath.Join(dir, "d"), nil)
}

// TestCloseUnsyncedThenSyncFS: a log closed by CloseUnsynced keeps nothing
// through a power loss until SyncFS, and after SyncFS and its log
// directory's marker reopens clean with every record.
func TestCloseUnsyncedThenSyncFS(t *testing.T) {
	logDir := t.TempDir()
	s := NewStrictFS(nil)
	c, err := OpenDirCheckpoints(s, logDir, nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(logDir, "t-0")
	l, err := Open(dir, testConfig(), Options{FS: s, Checkpoints: c})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := SyncFS(s, logDir); err != nil { // the empty log's files
		t.Fatal(err)
	}
	for seq := int32(0); seq < 30; seq += 3 {
		if _, err := l.AppendAsLeader(producerBatch(t, 1000, 0, seq, 3, testEpoch.UnixMilli()), 0); err != nil {
			t.Fatal(err)
		}
	}
	l.UpdateHighWatermark(l.LogEndOffset())
	if err := l.CloseUnsynced(); err != nil {
		t.Fatalf("CloseUnsynced: %v", err)
	}
	wantFile(t, filepath.Join(dir, cleanShutdownFile), nil) // the log's own: none
	// No SyncFS: the records do not survive.
	mustCrash(t, s)

	c, err = OpenDirCheckpoints(s, logDir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if l, err = Open(dir, testConfig(), Options{FS: s, Checkpoints: c}); err != nil {
		t.Fatal(err)
	}
	if l.LogEndOffset() != 0 {
		t.Fatalf("log end offset %d after losing an unsynced close, want 0", l.LogEndOffset())
	}
	for seq := int32(0); seq < 30; seq += 3 {
		if _, err := l.AppendAsLeader(producerBatch(t, 1000, 0, seq, 3, testEpoch.UnixMilli()), 0); err != nil {
			t.Fatal(err)
		}
	}
	l.UpdateHighWatermark(l.LogEndOffset())
	if err := l.CloseUnsynced(); err != nil {
		t.Fatal(err)
	}
	if _, err := SyncFS(s, logDir); err != nil {
		t.Fatal(err)
	}
	if err := c.WriteAll(); err != nil {
		t.Fatal(err)
	}
	if err := WriteCleanShutdown(s, logDir, 7); err != nil {
		t.Fatal(err)
	}
	mustCrash(t, s)
	clean, epoch, err := HadCleanShutdown(s, logDir)
	if err != nil || !clean || epoch != 7 {
		t.Fatalf("the log directory's marker after a power loss: %v, epoch %d, %v; want true, 7", clean, epoch, err)
	}
	if c, err = OpenDirCheckpoints(s, logDir, nil); err != nil {
		t.Fatal(err)
	}
	l, err = Open(dir, testConfig(), Options{FS: s, Checkpoints: c, CleanShutdown: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if l.LogEndOffset() != 30 || l.HighWatermark() != 30 {
		t.Fatalf("reopened at log end %d, high watermark %d; want 30, 30", l.LogEndOffset(), l.HighWatermark())
	}
}
