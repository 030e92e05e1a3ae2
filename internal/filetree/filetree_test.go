package filetree

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// TestRead: every regular file of the tree, nested ones included, by
// relative path, and no entry for a directory.
func TestRead(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "a", "b"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{"top": []byte("1"), filepath.Join("a", "b", "deep"): []byte("22"), filepath.Join("a", "none"): {}}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if got := Read(t, dir); !reflect.DeepEqual(got, files) {
		t.Errorf("Read = %q, want %q", got, files)
	}
}
