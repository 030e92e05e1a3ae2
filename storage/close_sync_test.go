package storage

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// opFS is an OSFS that records, in order, the fsyncs of files and
// directories, the renames and the creations of files.
type opFS struct {
	OSFS
	mu  sync.Mutex
	ops []string
}

type opFile struct {
	File
	fs   *opFS
	name string
}

func (o *opFS) record(op string) {
	o.mu.Lock()
	o.ops = append(o.ops, op)
	o.mu.Unlock()
}

func (o *opFS) take() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	ops := o.ops
	o.ops = nil
	return ops
}

func (o *opFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	f, err := o.OSFS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	if flag&os.O_CREATE != 0 {
		o.record("create " + filepath.Base(name))
	}
	return &opFile{File: f, fs: o, name: filepath.Base(name)}, nil
}

func (f *opFile) Sync() error {
	f.fs.record("sync " + f.name)
	return f.File.Sync()
}

func (o *opFS) Rename(oldpath, newpath string) error {
	o.record("rename " + filepath.Base(newpath))
	return o.OSFS.Rename(oldpath, newpath)
}

func (o *opFS) SyncDir(path string) error {
	o.record("syncdir")
	return o.OSFS.SyncDir(path)
}

// Close writes its checkpoints and producer snapshot with their contents
// fsynced before each rename, then fsyncs the directory once, so that all
// of them are durable before the clean-shutdown marker is created, and
// once more for the marker.
func TestCloseMakesFilesDurableBeforeMarker(t *testing.T) {
	dir := t.TempDir()
	fsys := &opFS{}
	l, err := Open(dir, DefaultLogConfig(), Options{FS: fsys})
	if err != nil {
		t.Fatal(err)
	}
	for seq := int32(0); seq < 30; seq += 3 {
		if _, err := l.AppendAsLeader(producerBatch(t, 1000, 0, seq, 3, testEpoch.UnixMilli()), 0); err != nil {
			t.Fatal(err)
		}
	}
	l.UpdateHighWatermark(l.LogEndOffset())
	fsys.take()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	ops := fsys.take()
	at := func(op string) int {
		t.Helper()
		i := slices.Index(ops, op)
		if i < 0 {
			t.Fatalf("Close did not %q; it did %q", op, ops)
		}
		return i
	}
	snapshot := ""
	for _, op := range ops {
		if strings.HasPrefix(op, "rename ") && strings.HasSuffix(op, ".snapshot") {
			snapshot = strings.TrimPrefix(op, "rename ")
		}
	}
	if snapshot == "" {
		t.Fatalf("Close wrote no producer snapshot: %q", ops)
	}
	marker := at("create " + cleanShutdownFile)
	lastRename := 0
	for _, name := range []string{recoveryPointFile, highWatermarkFile, snapshot} {
		synced, renamed := at("sync "+name+checkpointTmp), at("rename "+name)
		if synced > renamed {
			t.Errorf("%s renamed before its contents were fsynced: %q", name, ops)
		}
		lastRename = max(lastRename, renamed)
	}
	dirSynced := slices.Index(ops[lastRename:], "syncdir")
	if dirSynced < 0 || lastRename+dirSynced > marker {
		t.Errorf("the marker was created before the directory was fsynced after the renames: %q", ops)
	}
	if !slices.Contains(ops[marker:], "syncdir") {
		t.Errorf("the directory was not fsynced after the marker was created: %q", ops)
	}
	if n := strings.Count(strings.Join(ops, "\n"), "syncdir"); n != 2 {
		t.Errorf("Close fsynced the directory %d times, want 2: %q", n, ops)
	}

	// And the log reopens clean, with what Close wrote.
	l, err = Open(dir, DefaultLogConfig(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if l.HighWatermark() != 30 || l.LogEndOffset() != 30 {
		t.Fatalf("reopened with high watermark %d, log end %d; want 30, 30", l.HighWatermark(), l.LogEndOffset())
	}
}
