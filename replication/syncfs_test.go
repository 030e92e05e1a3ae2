package replication

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strait/strait/storage"
)

// countFS counts the fsyncs of files and directories and the syncfs calls
// made through it, and passes everything to the FS it wraps.
type countFS struct {
	storage.FS
	fsyncs, syncfs atomic.Int64

	mu  sync.Mutex
	ops []string // "syncfs", and the names of the files created
}

func (c *countFS) record(op string) {
	c.mu.Lock()
	c.ops = append(c.ops, op)
	c.mu.Unlock()
}

type countFile struct {
	storage.File
	fs *countFS
}

func (c *countFS) OpenFile(name string, flag int, perm os.FileMode) (storage.File, error) {
	f, err := c.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	if flag&os.O_CREATE != 0 {
		c.record(filepath.Base(name))
	}
	return &countFile{File: f, fs: c}, nil
}

func (f *countFile) Sync() error { f.fs.fsyncs.Add(1); return f.File.Sync() }

func (c *countFS) SyncDir(path string) error { c.fsyncs.Add(1); return c.FS.SyncDir(path) }

func (c *countFS) SyncFS(path string) error {
	c.syncfs.Add(1)
	c.record("syncfs")
	_, err := storage.SyncFS(c.FS, path)
	return err
}

// TestCloseMakesLogsDurableWithSyncFS: on a filesystem with syncfs, with
// SyncFSMinLogs logs or more, Manager.Close fsyncs no partition's files: one syncfs makes every log
// durable before the directory's checkpoints and its clean-shutdown marker
// are written. A power loss right after Close keeps every record and the
// marker.
func TestCloseMakesLogsDurableWithSyncFS(t *testing.T) {
	sfs := storage.NewStrictFS(nil)
	cfs := &countFS{FS: sfs}
	e := newEnv(t, func(c *Config) { c.FS = cfs; c.SyncFSMinLogs = 8 }, nil)
	const partitions = 8
	replicas := make([][]int32, partitions)
	for i := range replicas {
		replicas[i] = []int32{1}
	}
	e.topic("durable", replicas...)
	dirs := make([]string, partitions)
	for i := range partitions {
		p := e.m.Partition("durable", int32(i))
		if p == nil {
			t.Fatalf("durable-%d not hosted", i)
		}
		produce(t, p, 10+i)
		dirs[i] = p.Log().Dir()
	}
	cfs.fsyncs.Store(0)
	cfs.syncfs.Store(0)
	cfs.ops = nil
	if err := e.m.Close(); err != nil {
		t.Fatal(err)
	}
	// Nothing that vouches for the logs' data (a marker, the directory's
	// recovery points) is written before the first syncfs.
	first := slices.Index(cfs.ops, "syncfs")
	for i, op := range cfs.ops {
		if (op == ".kafka_cleanshutdown" || strings.HasPrefix(op, "recovery-point-offset-checkpoint")) && (first < 0 || i < first) {
			t.Fatalf("%s created before the logs were made durable: %q", op, cfs.ops)
		}
	}
	// The directory's three checkpoint files, each written with its
	// contents and then its directory fsynced: far fewer than one per
	// partition.
	if n := cfs.fsyncs.Load(); n >= partitions {
		t.Errorf("Close made %d fsyncs for %d partitions; want the directory checkpoints' only", n, partitions)
	}
	if n := cfs.syncfs.Load(); n != 1 {
		t.Errorf("Close called syncfs %d times, want 1", n)
	}
	if n := strings.Count(strings.Join(cfs.ops, " "), ".kafka_cleanshutdown"); n != 1 {
		t.Errorf("Close created %d clean-shutdown markers, want 1 (the log directory's): %q", n, cfs.ops)
	}
	if _, err := sfs.Crash(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(e.dir, ".kafka_cleanshutdown")); err != nil {
		t.Errorf("no clean-shutdown marker in the log directory after a power loss following Close: %v", err)
	}
	for i, dir := range dirs {
		if _, err := os.Stat(filepath.Join(dir, ".kafka_cleanshutdown")); !os.IsNotExist(err) {
			t.Errorf("durable-%d: a partition's own clean-shutdown marker (%v); want the log directory's only", i, err)
		}
		l, err := storage.Open(dir, storage.DefaultLogConfig(), storage.Options{CleanShutdown: true})
		if err != nil {
			t.Fatalf("durable-%d: reopening: %v", i, err)
		}
		if got, want := l.LogEndOffset(), int64(10+i); got != want {
			t.Errorf("durable-%d: log end offset %d after a power loss following Close, want %d", i, got, want)
		}
		l.Close()
	}
}

// TestCloseWithFailingSyncFSLeavesNoMarker: when the syncfs of a log
// directory fails, Close reports it and writes neither the directory's
// checkpoints nor any marker, so a power loss leaves logs that the next
// start recovers (no marker claims a clean shutdown of data not durable).
func TestCloseWithFailingSyncFSLeavesNoMarker(t *testing.T) {
	sfs := storage.NewStrictFS(nil)
	ffs := storage.NewFaultFS(sfs)
	e := newEnv(t, func(c *Config) { c.FS = ffs; c.SyncFSMinLogs = 1 }, nil)
	e.topic("fragile", []int32{1}, []int32{1})
	var dirs []string
	for i := range 2 {
		p := e.m.Partition("fragile", int32(i))
		if p == nil {
			t.Fatalf("fragile-%d not hosted", i)
		}
		produce(t, p, 5)
		dirs = append(dirs, p.Log().Dir())
	}
	ffs.FailSyncs(true)
	if err := e.m.Close(); err == nil {
		t.Fatal("Close reported no error with syncfs failing")
	}
	ffs.FailSyncs(false)
	if _, err := sfs.Crash(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(e.dir, ".kafka_cleanshutdown")); !os.IsNotExist(err) {
		t.Errorf("the log directory's clean-shutdown marker exists (%v) though its logs were never made durable", err)
	}
	for i, dir := range dirs {
		if _, err := os.Stat(filepath.Join(dir, ".kafka_cleanshutdown")); !os.IsNotExist(err) {
			t.Errorf("fragile-%d: a clean-shutdown marker exists (%v) though its data was never made durable", i, err)
		}
		l, err := storage.Open(dir, storage.DefaultLogConfig(), storage.Options{})
		if err != nil {
			t.Fatalf("fragile-%d: reopening: %v", i, err)
		}
		if leo := l.LogEndOffset(); leo != 0 && leo != 5 {
			t.Errorf("fragile-%d: log end offset %d, want 0 (lost, never synced) or 5", i, leo)
		}
		l.Close()
	}
}

// TestCloseFewLogsFsyncsEach: below SyncFSMinLogs, Close fsyncs each log's
// own files and calls no syncfs, which would flush every other program's
// writes to the filesystem too.
func TestCloseFewLogsFsyncsEach(t *testing.T) {
	cfs := &countFS{FS: storage.NewStrictFS(nil)}
	e := newEnv(t, func(c *Config) { c.FS = cfs; c.SyncFSMinLogs = 3 }, nil)
	e.topic("few", []int32{1}, []int32{1})
	for i := range 2 {
		produce(t, e.m.Partition("few", int32(i)), 3)
	}
	if err := e.m.Close(); err != nil {
		t.Fatal(err)
	}
	if n := cfs.syncfs.Load(); n != 0 {
		t.Errorf("Close of 2 logs called syncfs %d times, want 0", n)
	}
	if n := cfs.fsyncs.Load(); n < 2 {
		t.Errorf("Close of 2 logs made %d fsyncs", n)
	}
}

// TestCreateManyPartitionsWithSyncFS: a change opening SyncFSMinLogs
// partitions or more opens them without fsyncs and makes them durable with
// one syncfs per log dir before the topic is published: a power loss right
// after keeps every partition's directory and partition.metadata, and the
// logs, fsyncing again, keep what they write and sync afterwards.
func TestCreateManyPartitionsWithSyncFS(t *testing.T) {
	sfs := storage.NewStrictFS(nil)
	cfs := &countFS{FS: sfs}
	e := newEnv(t, func(c *Config) { c.FS = cfs; c.SyncFSMinLogs = 6 }, nil)
	const partitions = 8 // few: a power loss of StrictFS rewrites every file
	replicas := make([][]int32, partitions)
	for i := range replicas {
		replicas[i] = []int32{1}
	}
	cfs.fsyncs.Store(0)
	e.topic("many", replicas...)
	if n := cfs.syncfs.Load(); n != 1 {
		t.Errorf("creating %d partitions called syncfs %d times, want 1", partitions, n)
	}
	if n := cfs.fsyncs.Load(); n != 0 {
		t.Errorf("creating %d partitions made %d fsyncs, want none", partitions, n)
	}
	p0 := e.m.Partition("many", 0)
	if p0 == nil {
		t.Fatal("many-0 not hosted")
	}
	// After the change the log fsyncs again: a flush is durable.
	cfg := storage.DefaultLogConfig()
	cfg.FlushMs = 0
	p0.Log().SetConfig(cfg)
	produce(t, p0, 4)
	if err := p0.Log().MaybeFlush(time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if cfs.fsyncs.Load() == 0 {
		t.Error("a flush after the change made no fsync")
	}
	dirs := make([]string, partitions)
	for i := range partitions {
		dirs[i] = e.m.Partition("many", int32(i)).Log().Dir()
	}
	// The power goes: the stop's own fsyncs keep nothing.
	sfs.CutPower()
	if err := e.m.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := sfs.Crash(); err != nil {
		t.Fatal(err)
	}
	for i, dir := range dirs {
		if id, err := storage.ReadPartitionMetadata(nil, dir); err != nil || id != p0.TopicID() {
			t.Fatalf("many-%d after a power loss: partition.metadata %x (%v), want %x", i, id, err, p0.TopicID())
		}
	}
	l, err := storage.Open(dirs[0], storage.DefaultLogConfig(), storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if l.LogEndOffset() != 4 {
		t.Fatalf("many-0 after a power loss: log end offset %d, want the 4 flushed records", l.LogEndOffset())
	}
}
