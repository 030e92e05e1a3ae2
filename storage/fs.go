package storage

import (
	"io"
	"os"
)

// FS is the small filesystem interface storage writes through, so tests
// can inject faults (full disk, failing writes or fsyncs) without real ones.
type FS interface {
	OpenFile(name string, flag int, perm os.FileMode) (File, error)
	MkdirAll(path string, perm os.FileMode) error
	ReadDir(name string) ([]os.DirEntry, error)
	Stat(name string) (os.FileInfo, error)
	Remove(name string) error
	RemoveAll(path string) error
	Rename(oldpath, newpath string) error
	// SyncDir fsyncs a directory so that creations, renames and removals
	// in it are durable.
	SyncDir(path string) error
}

// File is an open file of an FS.
type File interface {
	io.ReaderAt
	io.WriterAt
	io.Closer
	Truncate(size int64) error
	Sync() error
	Stat() (os.FileInfo, error)
	// OS returns the *os.File behind this file: fetches hand segment files
	// to sendfile, which needs a real descriptor.
	OS() *os.File
}

// OSFS is the real filesystem.
type OSFS struct{}

type osFile struct{ *os.File }

func (f osFile) OS() *os.File { return f.File }

// plainOSFile is implemented by OSFS's files only, not by wrappers that
// embed a File (FaultFS's): storage maps a file into memory only when
// nothing sits between it and the system, since stores into a mapping
// bypass a wrapper's WriteAt and Sync (see index.go).
type plainOSFile interface{ plainOS() *os.File }

func (f osFile) plainOS() *os.File { return f.File }

// mappableFile returns the *os.File behind f if storage may map it, else nil.
func mappableFile(f File) *os.File {
	if p, ok := f.(plainOSFile); ok && mmapSupported {
		return p.plainOS()
	}
	return nil
}

func (OSFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}

func (OSFS) MkdirAll(path string, perm os.FileMode) error { return os.MkdirAll(path, perm) }
func (OSFS) ReadDir(name string) ([]os.DirEntry, error)   { return os.ReadDir(name) }
func (OSFS) Stat(name string) (os.FileInfo, error)        { return os.Stat(name) }
func (OSFS) Remove(name string) error                     { return os.Remove(name) }
func (OSFS) RemoveAll(path string) error                  { return os.RemoveAll(path) }
func (OSFS) Rename(oldpath, newpath string) error         { return os.Rename(oldpath, newpath) }

func (OSFS) SyncDir(path string) error {
	d, err := os.Open(path)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
