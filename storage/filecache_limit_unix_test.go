//go:build linux

package storage

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/strait/strait/storage/compress"
)

const lowFileLimitChild = "STRAIT_TEST_LOW_FILE_LIMIT_CHILD"

// TestAppendsUnderLowFileLimit: under an RLIMIT_NOFILE of 128 (set in a
// child process: the limit is the whole process's), 160 logs sharing a
// FileCache made from that limit take two appends each and read them
// back, holding at most the cache's total bound of segment descriptors.
// With a descriptor per active segment the appends fail with EMFILE.
func TestAppendsUnderLowFileLimit(t *testing.T) {
	if os.Getenv(lowFileLimitChild) == "1" {
		appendsUnderLowFileLimit(t)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestAppendsUnderLowFileLimit$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), lowFileLimitChild+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte("low file limit: done")) {
		t.Fatalf("child: %v\n%s", err, out)
	}
	t.Logf("%s", bytes.TrimSpace(out))
}

func appendsUnderLowFileLimit(t *testing.T) {
	const limit, logs = 128, 160
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &syscall.Rlimit{Cur: limit, Max: limit}); err != nil {
		t.Fatal(err)
	}
	cache := NewFileCache(1000)
	sealed, total := cache.Bounds()
	if total != OpenFilesBound(limit) {
		t.Fatalf("total bound %d under a limit of %d, want %d", total, limit, OpenFilesBound(limit))
	}
	cfg := testConfig()
	cfg.SegmentIndexBytes = 64 << 10 // 160 logs map 320 active indexes
	root := t.TempDir()
	ls := make([]*Log, logs)
	stored := make([][]byte, logs)
	for i := range ls {
		l, err := Open(filepath.Join(root, fmt.Sprintf("t-%d", i)), cfg, Options{FileCache: cache})
		if err != nil {
			t.Fatalf("open log %d: %v", i, err)
		}
		defer l.Close()
		ls[i] = l
	}
	for round := range 2 {
		for i, l := range ls {
			b := simpleBatch(t, compress.None, 1+i%3, testEpoch.UnixMilli()+int64(round))
			mustAppend(t, l, b)
			stored[i] = append(stored[i], b...)
		}
		if n := logFDs(t, root); n > total {
			t.Fatalf("round %d: %d segment log descriptors, total bound %d", round, n, total)
		}
	}
	for i, l := range ls {
		if got := readAllBatches(t, l); !bytes.Equal(got, stored[i]) {
			t.Fatalf("log %d read back %d bytes, want %d", i, len(got), len(stored[i]))
		}
	}
	fmt.Printf("low file limit: done: %d logs, bounds %d/%d, %d closes\n", logs, sealed, total, cache.Closes())
}
