package storage

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// TestReadBoundedFile: the small-file readers' one read allocates no more
// than its limit whatever the file's size, and says why it read nothing.
func TestReadBoundedFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	if _, err := readBoundedFile(OSFS{}, path, 8); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("absent file: %v; want fs.ErrNotExist", err)
	}
	if err := os.WriteFile(path, []byte("12345678"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := readBoundedFile(OSFS{}, path, 8); err != nil || string(b) != "12345678" {
		t.Fatalf("file at the limit: %q, %v", b, err)
	}
	_, err := readBoundedFile(OSFS{}, path, 7)
	var tooLarge *fileTooLargeError
	if !errors.As(err, &tooLarge) || tooLarge.size != 8 || tooLarge.limit != 7 {
		t.Fatalf("file over the limit: %v; want a fileTooLargeError of 8 bytes over 7", err)
	}
	if _, err := readBoundedFile(grownFS{}, path, 100); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("file shorter than its size: %v; want io.ErrUnexpectedEOF", err)
	}
}

// grownFS reports every file 4 bytes longer than it is, as a file cut
// short between the size and the read would be.
type grownFS struct{ OSFS }

func (g grownFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	f, err := g.OSFS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return grownFile{f}, nil
}

type grownFile struct{ File }

func (f grownFile) Stat() (os.FileInfo, error) {
	fi, err := f.File.Stat()
	if err != nil {
		return nil, err
	}
	return grownInfo{fi}, nil
}

type grownInfo struct{ os.FileInfo }

func (i grownInfo) Size() int64 { return i.FileInfo.Size() + 4 }
