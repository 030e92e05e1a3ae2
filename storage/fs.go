package storage

import (
	"errors"
	"fmt"
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

// mappable is the optional interface of a File that storage may map into
// memory (index.go): OSFS's files, and a FaultFS's once MapFiles is on.
// Stores into a mapping bypass a wrapper's WriteAt and Sync, so a wrapper
// offers it only when asked to. Mapping goes through the file, not around
// it, so that a FaultFS can fail it.
type mappable interface {
	// mapTarget returns the descriptor to reserve blocks of and truncate,
	// nil when this file is not to be mapped (the pread path).
	mapTarget() *os.File
	// mmap maps the first size bytes, shared (see mmapFile).
	mmap(size int, writable bool) ([]byte, error)
}

func (f osFile) mapTarget() *os.File {
	if !mmapSupported {
		return nil
	}
	return f.File
}

func (f osFile) mmap(size int, writable bool) ([]byte, error) {
	return mmapFile(f.File, size, writable)
}

// mappableFile returns f as a file storage may map, nil if it may not.
func mappableFile(f File) mappable {
	if m, ok := f.(mappable); ok && m.mapTarget() != nil {
		return m
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

// fileTooLargeError is readBoundedFile's error for a file larger than its
// limit.
type fileTooLargeError struct {
	path        string
	size, limit int64
}

func (e *fileTooLargeError) Error() string {
	return fmt.Sprintf("%s: %d bytes, more than the %d read", e.path, e.size, e.limit)
}

// readBoundedFile reads the whole of a small file (a checkpoint, a
// snapshot, a properties file) through fsys, allocating at most limit
// bytes whatever its size claims: an error satisfying
// errors.Is(err, fs.ErrNotExist) when it is absent, a *fileTooLargeError
// when it is larger than limit, io.ErrUnexpectedEOF when it shrank while
// read.
func readBoundedFile(fsys FS, path string, limit int64) ([]byte, error) {
	f, err := fsys.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() > limit {
		return nil, &fileTooLargeError{path: path, size: fi.Size(), limit: limit}
	}
	buf := make([]byte, fi.Size())
	if n, err := f.ReadAt(buf, 0); n < len(buf) {
		if err == nil || errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return buf, nil
}
