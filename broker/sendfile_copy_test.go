package broker

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCopyFileRegion: the copy that replaces sendfile on a TLS connection
// writes exactly the region, through the connection's write buffer, and a
// file shorter than the region is an error rather than a short frame.
func TestCopyFileRegion(t *testing.T) {
	path := filepath.Join(t.TempDir(), "seg")
	data := bytes.Repeat([]byte("0123456789abcdef"), 20_000) // 320 KB: several buffer flushes
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out bytes.Buffer
	w := bufio.NewWriterSize(&out, 64<<10)
	if err := copyFileRegion(w, f, 7, int64(len(data))-100); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.Bytes(), data[7:len(data)-93]) {
		t.Fatalf("copied %d bytes, not the region", out.Len())
	}
	err = copyFileRegion(w, f, int64(len(data))-10, 20)
	if err == nil || !strings.Contains(err.Error(), "10 bytes missing") {
		t.Fatalf("a region past the end of the file: %v", err)
	}
}
