package storage

import (
	"errors"
	"os"
	"sync"
	"syscall"
)

// FaultFS wraps an FS and injects the failures of a full or failing disk,
// for tests here and in the broker. Safe for concurrent use.
type FaultFS struct {
	inner FS

	mu          sync.Mutex
	writeBudget int64 // bytes writes may still store; < 0 = unlimited
	failSync    bool
	failCreate  bool
	mapFiles    bool
	failMmap    bool
	failOpen    func(name string) error
}

// ErrInjected is the error of an injected fsync or create failure.
var ErrInjected = errors.New("injected I/O error")

// NewFaultFS wraps inner (nil = OSFS) without any fault armed.
func NewFaultFS(inner FS) *FaultFS {
	if inner == nil {
		inner = OSFS{}
	}
	return &FaultFS{inner: inner, writeBudget: -1}
}

// SetWriteBudget lets writes store n more bytes, after which they fail with
// ENOSPC; the write crossing the budget stores its first part (a torn
// write). n < 0 removes the limit.
func (f *FaultFS) SetWriteBudget(n int64) {
	setLocked(&f.mu, &f.writeBudget, n)
}

// FailSyncs makes every fsync fail (or succeed again).
func (f *FaultFS) FailSyncs(fail bool) {
	setLocked(&f.mu, &f.failSync, fail)
}

// FailCreates makes opening a file that does not exist yet fail.
func (f *FaultFS) FailCreates(fail bool) {
	setLocked(&f.mu, &f.failCreate, fail)
}

// FailOpens makes opening a file fail with the error fail returns for its
// name (nil: that open goes ahead), as running out of descriptors (EMFILE)
// or a permission change (EACCES) does; the error is an *os.PathError as
// os.OpenFile's. A nil fail disarms it.
func (f *FaultFS) FailOpens(fail func(name string) error) {
	setLocked(&f.mu, &f.failOpen, fail)
}

// MapFiles lets storage map this FS's index files into memory, as it maps
// OSFS's (the inner FS's files must be mappable). Stores into a mapping
// bypass the write budget and the fsync faults; FailMmaps does not.
func (f *FaultFS) MapFiles(on bool) {
	setLocked(&f.mu, &f.mapFiles, on)
}

// FailMmaps makes mapping a file fail (with MapFiles on).
func (f *FaultFS) FailMmaps(fail bool) {
	setLocked(&f.mu, &f.failMmap, fail)
}

// setLocked stores v in *p under mu: the setters above arm and disarm the
// faults while the FS is in use.
func setLocked[T any](mu *sync.Mutex, p *T, v T) {
	mu.Lock()
	*p = v
	mu.Unlock()
}

// allowWrite returns how many of n bytes may be written.
func (f *FaultFS) allowWrite(n int) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.writeBudget < 0 {
		return n
	}
	allowed := int(min(int64(n), f.writeBudget))
	f.writeBudget -= int64(allowed)
	return allowed
}

func (f *FaultFS) syncErr() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failSync {
		return &os.PathError{Op: "fsync", Path: "", Err: ErrInjected}
	}
	return nil
}

func (f *FaultFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	f.mu.Lock()
	failCreate, failOpen := f.failCreate, f.failOpen
	f.mu.Unlock()
	if failOpen != nil {
		if err := failOpen(name); err != nil {
			return nil, &os.PathError{Op: "open", Path: name, Err: err}
		}
	}
	if failCreate && flag&os.O_CREATE != 0 {
		if _, err := f.inner.Stat(name); errors.Is(err, os.ErrNotExist) {
			return nil, &os.PathError{Op: "open", Path: name, Err: ErrInjected}
		}
	}
	file, err := f.inner.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &faultFile{File: file, fs: f}, nil
}

// SyncFS fails as SyncDir does, else is the inner FS's.
func (f *FaultFS) SyncFS(path string) error {
	if err := f.syncErr(); err != nil {
		return err
	}
	if _, err := SyncFS(f.inner, path); err != nil {
		return err
	}
	return nil
}

func (f *FaultFS) canSyncFS() bool { return CanSyncFS(f.inner) }

func (f *FaultFS) MkdirAll(path string, perm os.FileMode) error { return f.inner.MkdirAll(path, perm) }
func (f *FaultFS) ReadDir(name string) ([]os.DirEntry, error)   { return f.inner.ReadDir(name) }
func (f *FaultFS) Stat(name string) (os.FileInfo, error)        { return f.inner.Stat(name) }
func (f *FaultFS) Remove(name string) error                     { return f.inner.Remove(name) }
func (f *FaultFS) RemoveAll(path string) error                  { return f.inner.RemoveAll(path) }
func (f *FaultFS) Rename(oldpath, newpath string) error         { return f.inner.Rename(oldpath, newpath) }

func (f *FaultFS) SyncDir(path string) error {
	if err := f.syncErr(); err != nil {
		return err
	}
	return f.inner.SyncDir(path)
}

type faultFile struct {
	File
	fs *FaultFS
}

func (ff *faultFile) WriteAt(p []byte, off int64) (int, error) {
	allowed := ff.fs.allowWrite(len(p))
	n, err := ff.File.WriteAt(p[:allowed], off)
	if err == nil && allowed < len(p) {
		err = &os.PathError{Op: "write", Path: "", Err: syscall.ENOSPC}
	}
	return n, err
}

func (ff *faultFile) Sync() error {
	if err := ff.fs.syncErr(); err != nil {
		return err
	}
	return ff.File.Sync()
}

func (ff *faultFile) mapTarget() *os.File {
	ff.fs.mu.Lock()
	on := ff.fs.mapFiles
	ff.fs.mu.Unlock()
	if m, ok := ff.File.(mappable); ok && on {
		return m.mapTarget()
	}
	return nil
}

func (ff *faultFile) mmap(size int, writable bool) ([]byte, error) {
	ff.fs.mu.Lock()
	fail := ff.fs.failMmap
	ff.fs.mu.Unlock()
	if fail {
		return nil, ErrInjected
	}
	m, ok := ff.File.(mappable)
	if !ok {
		return nil, errors.New("faultfs: the inner file cannot be mapped")
	}
	return m.mmap(size, writable)
}
