package storage

import (
	"errors"
	"os"
	"sync/atomic"
)

// DeferSyncFS wraps an FS so that, until Finish, Sync and SyncDir do
// nothing: for opening many logs at once (replication's applyTopic creating
// a topic of thousands of partitions), whose writes one SyncFS per
// filesystem then makes durable before any of them is used. From Finish on
// every Sync goes through: the logs keep this FS for their lifetime.
type DeferSyncFS struct {
	FS
	deferring atomic.Bool
}

// NewDeferSyncFS wraps inner, deferring its fsyncs until Finish.
func NewDeferSyncFS(inner FS) *DeferSyncFS {
	d := &DeferSyncFS{FS: inner}
	d.deferring.Store(true)
	return d
}

// Finish ends the deferral: from then on every Sync and SyncDir goes
// through. The caller then makes what was deferred durable with SyncFS;
// ending the deferral first means that a Sync skipped concurrently had its
// write done before that SyncFS began.
func (d *DeferSyncFS) Finish() { d.deferring.Store(false) }

func (d *DeferSyncFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	f, err := d.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &deferFile{File: f, fs: d}, nil
}

func (d *DeferSyncFS) SyncDir(path string) error {
	if d.deferring.Load() {
		return nil
	}
	return d.FS.SyncDir(path)
}

// SyncFS is the inner FS's.
func (d *DeferSyncFS) SyncFS(path string) error {
	ok, err := SyncFS(d.FS, path)
	if err == nil && !ok {
		return errors.ErrUnsupported
	}
	return err
}

func (d *DeferSyncFS) canSyncFS() bool { return CanSyncFS(d.FS) }

type deferFile struct {
	File
	fs *DeferSyncFS
}

func (f *deferFile) Sync() error {
	if f.fs.deferring.Load() {
		return nil
	}
	return f.File.Sync()
}

// The inner file's mapping, so that indexes stay memory-mapped.
func (f *deferFile) mapTarget() *os.File {
	if m, ok := f.File.(mappable); ok {
		return m.mapTarget()
	}
	return nil
}

func (f *deferFile) mmap(size int, writable bool) ([]byte, error) {
	m, ok := f.File.(mappable)
	if !ok {
		return nil, errors.ErrUnsupported
	}
	return m.mmap(size, writable)
}
