package storage

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/strait/strait/storage/compress"
	"github.com/twmb/franz-go/pkg/kerr"
)

// Tests of the asynchronous flush a roll starts (log.go, flushRolled).

// gateFS is an OSFS whose fsyncs of one file (by base name) can be held
// until released, to catch a flush in the middle. Its files are not plain
// OS files, so indexes take the descriptor-based path (index.go).
type gateFS struct {
	OSFS
	mu      sync.Mutex
	hold    string        // base name of the file whose fsyncs are held
	entered chan struct{} // gets a value when a held fsync starts
	release chan struct{} // closed to let held fsyncs go on
}

type gateFile struct {
	File
	fs   *gateFS
	name string
}

func (g *gateFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	f, err := g.OSFS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &gateFile{File: f, fs: g, name: filepath.Base(name)}, nil
}

// holdSyncs holds the fsyncs of the file named name from now on; release
// lets them (and later ones) go.
func (g *gateFS) holdSyncs(name string) (entered <-chan struct{}, release func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.hold, g.entered, g.release = name, make(chan struct{}, 1), make(chan struct{})
	rel := g.release
	var once sync.Once
	return g.entered, func() {
		once.Do(func() {
			g.mu.Lock()
			g.hold = ""
			g.mu.Unlock()
			close(rel)
		})
	}
}

func (f *gateFile) Sync() error {
	f.fs.mu.Lock()
	held := f.fs.hold == f.name
	entered, release := f.fs.entered, f.fs.release
	f.fs.mu.Unlock()
	if held {
		select {
		case entered <- struct{}{}:
		default:
		}
		<-release
	}
	return f.File.Sync()
}

// logRecorder is a slog handler keeping warnings and errors with their
// attributes.
type logRecorder struct {
	mu   sync.Mutex
	recs []loggedEntry
}

type loggedEntry struct {
	level slog.Level
	msg   string
	attrs map[string]any
}

func (r *logRecorder) Enabled(_ context.Context, lvl slog.Level) bool { return lvl >= slog.LevelWarn }
func (r *logRecorder) Handle(_ context.Context, rec slog.Record) error {
	e := loggedEntry{level: rec.Level, msg: rec.Message, attrs: map[string]any{}}
	rec.Attrs(func(a slog.Attr) bool { e.attrs[a.Key] = a.Value.Any(); return true })
	r.mu.Lock()
	r.recs = append(r.recs, e)
	r.mu.Unlock()
	return nil
}
func (r *logRecorder) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *logRecorder) WithGroup(string) slog.Handler      { return r }

func (r *logRecorder) errors() []loggedEntry {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []loggedEntry
	for _, e := range r.recs {
		if e.level >= slog.LevelError {
			out = append(out, e)
		}
	}
	return out
}

func flushTestConfig() LogConfig {
	cfg := testConfig()
	cfg.SegmentBytes = 1000
	return cfg
}

func openGateLog(t *testing.T, dir string, fsys FS) (*Log, *logRecorder) {
	t.Helper()
	rec := &logRecorder{}
	l, err := Open(dir, flushTestConfig(), Options{FS: fsys, Logger: slog.New(rec)})
	if err != nil {
		t.Fatal(err)
	}
	return l, rec
}

func segmentCount(l *Log) int {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return len(l.segments)
}

func activeBase(l *Log) int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.active().baseOffset
}

// appendUntilRoll appends batches until the log has one more segment, on
// another goroutine: should an append block (an fsync on the append
// path held by gateFS), the test fails instead of hanging.
func appendUntilRoll(t *testing.T, l *Log) [][]byte {
	t.Helper()
	type result struct {
		stored [][]byte
		err    error
	}
	done := make(chan result, 1)
	n := segmentCount(l)
	go func() {
		var r result
		for segmentCount(l) == n {
			b := simpleBatch(t, compress.None, 3, testEpoch.UnixMilli())
			if _, r.err = l.AppendAsLeader(b, 7); r.err != nil {
				break
			}
			r.stored = append(r.stored, b)
		}
		done <- r
	}()
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatalf("append: %v", r.err)
		}
		return r.stored
	case <-time.After(20 * time.Second):
		t.Fatal("appends rolling a segment blocked on a held fsync")
		return nil
	}
}

func waitEntered(t *testing.T, entered <-chan struct{}) {
	t.Helper()
	select {
	case <-entered:
	case <-time.After(20 * time.Second):
		t.Fatal("the flush of the rolled segment did not start")
	}
}

// rollWithFlushHeld opens a log on a gateFS in dir, holds the fsyncs of its
// first segment's log file and appends until a roll, returning once that
// roll's flush is held there. Callers defer release after deferring Close,
// so that it runs first (Close waits for the flush).
func rollWithFlushHeld(t *testing.T, dir string) (l *Log, rec *logRecorder, stored [][]byte, release func()) {
	t.Helper()
	fsys := &gateFS{}
	l, rec = openGateLog(t, dir, fsys)
	entered, release := fsys.holdSyncs(segmentName(0, logFileSuffix))
	t.Cleanup(release) // should this fail half way
	stored = appendUntilRoll(t, l)
	waitEntered(t, entered)
	return l, rec, stored, release
}

func recoveryPointFileValue(t *testing.T, dir string) (int64, bool) {
	t.Helper()
	off, ok, err := readCheckpoint(OSFS{}, dir, recoveryPointFile)
	if err != nil {
		t.Fatal(err)
	}
	return off, ok
}

// A roll fsyncs nothing on the appending goroutine: with the sealed
// segment's fsync held, the rolling append and later ones complete; the
// recovery point (and its checkpoint) moves to the new base offset only
// once the flush is let through.
func TestRollFlushesAsynchronously(t *testing.T) {
	dir := t.TempDir()
	l, rec, stored, release := rollWithFlushHeld(t, dir)
	defer l.Close()
	defer release()
	base := activeBase(l)
	stored = append(stored, appendBatches(t, l, compress.None, 3, testEpoch.UnixMilli())...)
	if rp := l.recoveryPoint.Load(); rp != 0 {
		t.Fatalf("recovery point %d while the flush is held, want 0", rp)
	}
	if off, ok := recoveryPointFileValue(t, dir); ok && off != 0 {
		t.Fatalf("recovery point checkpoint %d while the flush is held", off)
	}

	release()
	l.flushes.Wait()
	if rp := l.recoveryPoint.Load(); rp != base {
		t.Fatalf("recovery point %d after the flush, want the new base offset %d", rp, base)
	}
	if off, ok := recoveryPointFileValue(t, dir); !ok || off != base {
		t.Fatalf("recovery point checkpoint %d (%v), want %d", off, ok, base)
	}
	if errs := rec.errors(); len(errs) > 0 {
		t.Fatalf("errors logged: %+v", errs)
	}
	verifyLog(t, l, stored)
}

// The same on the mmap path (OSFS): the flush fsyncs the trimmed, unmapped
// indexes through descriptors of their own, and the recovery point follows
// every roll.
func TestRollFlushMmapPath(t *testing.T) {
	dir := t.TempDir()
	l, rec := openGateLog(t, dir, nil)
	var stored [][]byte
	for range 3 {
		stored = append(stored, appendUntilRoll(t, l)...)
		l.flushes.Wait()
		if rp, base := l.recoveryPoint.Load(), activeBase(l); rp != base {
			t.Fatalf("recovery point %d, want %d", rp, base)
		}
	}
	for _, s := range l.segments[:len(l.segments)-1] {
		if s.offsetIndex.active || s.timeIndex.active {
			t.Fatalf("segment %d: index still active after the roll", s.baseOffset)
		}
		if got, want := fileSize(t, segPath(dir, s.baseOffset, indexFileSuffix)), int64(s.offsetIndex.n*offsetIndexEntrySize); got != want {
			t.Fatalf("segment %d: offset index of %d bytes, want trimmed to %d", s.baseOffset, got, want)
		}
	}
	if errs := rec.errors(); len(errs) > 0 {
		t.Fatalf("errors logged: %+v", errs)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openQuietly(t, dir, flushTestConfig())
	defer l.Close()
	verifyLog(t, l, stored)
}

// A failing fsync of the asynchronous flush fails no append: it is logged
// (with the directory and base offset) and the recovery point stays
// behind, as does its checkpoint; Flush then makes it all durable.
func TestFailedRollFlushLeavesRecoveryPoint(t *testing.T) {
	dir := t.TempDir()
	fsys := NewFaultFS(nil)
	rec := &logRecorder{}
	l, err := Open(dir, flushTestConfig(), Options{FS: fsys, Logger: slog.New(rec)})
	if err != nil {
		t.Fatal(err)
	}
	stored := appendUntilRoll(t, l)
	l.flushes.Wait()
	rp := l.recoveryPoint.Load()
	if rp != activeBase(l) {
		t.Fatalf("recovery point %d after the first roll", rp)
	}

	fsys.FailSyncs(true)
	stored = append(stored, appendUntilRoll(t, l)...) // no append fails
	l.flushes.Wait()
	stored = append(stored, appendBatches(t, l, compress.None, 2, testEpoch.UnixMilli())...)
	if got := l.recoveryPoint.Load(); got != rp {
		t.Fatalf("recovery point %d after a failed flush, want %d", got, rp)
	}
	if off, ok := recoveryPointFileValue(t, dir); !ok || off != rp {
		t.Fatalf("recovery point checkpoint %d (%v), want %d", off, ok, rp)
	}
	errs := rec.errors()
	if len(errs) != 1 || errs[0].attrs["dir"] != dir || errs[0].attrs["base_offset"] != rp {
		t.Fatalf("logged %+v, want one error naming %s and segment %d", errs, dir, rp)
	}
	if err := l.flush(); kerrCode(err) != kerr.KafkaStorageError.Code {
		t.Fatalf("flush on a failing disk: %v", err)
	}

	fsys.FailSyncs(false)
	if err := l.flush(); err != nil {
		t.Fatal(err)
	}
	if got, leo := l.recoveryPoint.Load(), l.LogEndOffset(); got != leo {
		t.Fatalf("recovery point %d after Flush, want %d", got, leo)
	}
	crash(l)
	l = openQuietly(t, dir, flushTestConfig())
	defer l.Close()
	verifyLog(t, l, stored)
}

// Close waits for a flush held in an fsync, and the log it leaves opens
// cleanly with everything in it.
func TestCloseWaitsForRollFlush(t *testing.T) {
	dir := t.TempDir()
	l, rec, stored, release := rollWithFlushHeld(t, dir)
	defer release()
	stored = append(stored, appendBatches(t, l, compress.None, 2, testEpoch.UnixMilli())...)

	closed := make(chan error, 1)
	go func() { closed <- l.Close() }()
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) while a flush was held", err)
	case <-time.After(100 * time.Millisecond):
	}
	release()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Close did not return once the flush was let go")
	}
	if errs := rec.errors(); len(errs) > 0 {
		t.Fatalf("errors logged: %+v", errs)
	}
	last := parseBatchHeader(stored[len(stored)-1])
	if off, ok := recoveryPointFileValue(t, dir); !ok || off != last.NextOffset() {
		t.Fatalf("recovery point checkpoint %d (%v) after Close", off, ok)
	}
	l = openQuietly(t, dir, flushTestConfig())
	defer l.Close()
	verifyLog(t, l, stored)
}

// A crash between a roll and its flush (the directory copied while the
// flush is held: what a killed process leaves in the page cache) loses
// nothing: the recovery point is the previous roll's, and Open rescans
// the segments from there.
func TestCrashBeforeRollFlushRecovers(t *testing.T) {
	dir := t.TempDir()
	fsys := &gateFS{}
	l, _ := openGateLog(t, dir, fsys)
	defer l.Close()
	stored := appendUntilRoll(t, l)
	l.flushes.Wait()
	flushedTo := activeBase(l)

	entered, release := fsys.holdSyncs(segmentName(flushedTo, logFileSuffix))
	defer release()
	stored = append(stored, appendUntilRoll(t, l)...)
	stored = append(stored, appendBatches(t, l, compress.None, 2, testEpoch.UnixMilli())...)
	waitEntered(t, entered)
	crashed := filepath.Join(t.TempDir(), "crashed")
	copyDir(t, dir, crashed)
	release()

	if off, ok := recoveryPointFileValue(t, crashed); !ok || off != flushedTo {
		t.Fatalf("recovery point checkpoint %d (%v) at the crash, want %d", off, ok, flushedTo)
	}
	rec := &logRecorder{}
	l2, err := Open(crashed, flushTestConfig(), Options{Logger: slog.New(rec)})
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	if errs := rec.errors(); len(errs) > 0 {
		t.Fatalf("errors logged by the recovery: %+v", errs)
	}
	verifyLog(t, l2, stored)
}

// Delete while a flush is held waits for it and removes the directory; the
// flush logs nothing.
func TestDeleteWithPendingRollFlush(t *testing.T) {
	dir := t.TempDir()
	l, rec, _, release := rollWithFlushHeld(t, dir)
	defer release()
	deleted := make(chan error, 1)
	go func() { deleted <- l.Delete() }()
	time.Sleep(50 * time.Millisecond)
	release()
	select {
	case err := <-deleted:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Delete did not return")
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("partition directory after Delete: %v", err)
	}
	if errs := rec.errors(); len(errs) > 0 {
		t.Fatalf("errors logged: %+v", errs)
	}
}

// Segments removed by retention while their flush is held, files closed
// and gone, cost the flush no error: it goes on and moves the recovery
// point.
func TestRetentionDuringRollFlush(t *testing.T) {
	dir := t.TempDir()
	l, rec, rolled, release := rollWithFlushHeld(t, dir)
	defer l.Close()
	defer release()
	base := activeBase(l)
	// The batch that rolled is the new segment's first.
	stored := append(rolled[len(rolled)-1:], appendBatches(t, l, compress.None, 2, testEpoch.UnixMilli())...)
	cfg := flushTestConfig()
	cfg.RetentionBytes = 1
	l.SetConfig(cfg)
	l.UpdateHighWatermark(l.LogEndOffset())
	if n, err := l.DeleteOldSegments(testEpoch); n != 1 || err != nil {
		t.Fatalf("retention deleted %d segments: %v", n, err)
	}
	release()
	l.flushes.Wait()
	if errs := rec.errors(); len(errs) > 0 {
		t.Fatalf("errors logged: %+v", errs)
	}
	if rp := l.recoveryPoint.Load(); rp != base {
		t.Fatalf("recovery point %d, want %d", rp, base)
	}
	res, err := l.Read(base, 1<<20, l.LogEndOffset(), false)
	if err != nil {
		t.Fatal(err)
	}
	if got := splitBatches(t, readSlices(t, res)); len(got) != len(stored) {
		t.Fatalf("%d batches read after retention, want %d", len(got), len(stored))
	}
}

// A truncation below the offset a held flush is for keeps that flush from
// moving the recovery point over what is appended after the truncation.
func TestTruncationDuringRollFlush(t *testing.T) {
	dir := t.TempDir()
	l, rec, stored, release := rollWithFlushHeld(t, dir)
	defer l.Close()
	defer release()
	base := activeBase(l)
	if err := l.TruncateTo(3); err != nil {
		t.Fatal(err)
	}
	stored = stored[:1] // 3 records each
	stored = append(stored, appendBatches(t, l, compress.None, 3, testEpoch.UnixMilli())...)
	release()
	l.flushes.Wait()
	if rp := l.recoveryPoint.Load(); rp > 3 {
		t.Fatalf("recovery point %d after a truncation to 3 (the held flush was for %d)", rp, base)
	}
	if off, ok := recoveryPointFileValue(t, dir); ok && off > 3 {
		t.Fatalf("recovery point checkpoint %d after a truncation to 3", off)
	}
	if errs := rec.errors(); len(errs) > 0 {
		t.Fatalf("errors logged: %+v", errs)
	}
	verifyLog(t, l, stored)
}
