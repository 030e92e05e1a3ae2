package storage

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/strait/strait/storage/compress"
)

// TestOpenFailureAtLoadKeepsSegment: a segment or index file that cannot be
// opened at start-up (out of descriptors, no permission) fails the load
// with that error and leaves every byte of every file in place: an open
// failure says nothing about the content, so the segment is not recovered
// or truncated. The next load, without the fault, has every record.
func TestOpenFailureAtLoadKeepsSegment(t *testing.T) {
	for _, tc := range []struct {
		suffix string
		errno  syscall.Errno
	}{
		{indexFileSuffix, syscall.EMFILE},
		{logFileSuffix, syscall.EACCES},
		{timeIndexFileSuffix, syscall.ENFILE},
	} {
		t.Run(tc.suffix, func(t *testing.T) {
			dir := t.TempDir()
			cfg := testConfig()
			cfg.SegmentBytes = 1000
			l := openTestLog(t, dir, cfg, nil)
			var stored [][]byte
			for i := 0; len(l.segments) < 3 && i < 1000; i++ {
				stored = append(stored, appendBatches(t, l, compress.None, 1, testEpoch.UnixMilli())...)
			}
			if len(l.segments) < 3 {
				t.Fatalf("%d segments, want 3", len(l.segments))
			}
			target := segmentPath(dir, l.segments[1].baseOffset, tc.suffix)
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			before := snapshotDir(t, dir)

			fsys := NewFaultFS(nil)
			var failed atomic.Int32
			fsys.FailOpens(func(name string) error {
				// Only the first open: a retry by recovery would succeed, so
				// a load that recovered instead of failing would pass.
				if name == target && failed.Add(1) == 1 {
					return tc.errno
				}
				return nil
			})
			if l2, err := Open(dir, cfg, Options{FS: fsys}); err == nil {
				l2.Close()
				t.Fatalf("load with %s failing to open: no error", filepath.Base(target))
			} else if !errors.Is(err, tc.errno) {
				t.Fatalf("load error %v, want %v", err, tc.errno)
			}
			if after := snapshotDir(t, dir); !equalSnapshots(before, after) {
				t.Fatalf("files changed by a failed load:\nbefore %v\nafter  %v", sizes(before), sizes(after))
			}
			l3 := openTestLog(t, dir, cfg, nil)
			defer l3.Close()
			verifyLog(t, l3, stored)
		})
	}
}

func snapshotDir(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string][]byte, len(ents))
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = b
	}
	return out
}

func equalSnapshots(a, b map[string][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || !bytes.Equal(v, w) {
			return false
		}
	}
	return true
}

func sizes(m map[string][]byte) string {
	var sb strings.Builder
	for k, v := range m {
		sb.WriteString(k + "=" + itoa(len(v)) + " ")
	}
	return sb.String()
}

func itoa(n int) string { return strconv.Itoa(n) }
