// Package filetree reads a directory tree's files whole, for tests that
// compare a tree before and after something that must leave its bytes as
// they were (a refused start, a partition log moved aside or copied).
package filetree

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// Read returns every regular file under dir with its bytes, by path
// relative to dir; an error reading the tree fails t.
func Read(t testing.TB, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		out[rel] = b
		return err
	})
	if err != nil {
		t.Fatalf("reading the files under %s: %v", dir, err)
	}
	return out
}
