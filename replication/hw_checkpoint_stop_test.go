package replication

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strait/strait/storage"
)

// hwPassFS is the real filesystem, except that the checkpoint loop's first
// write of a log directory's replication-offset-checkpoint waits until the
// manager is stopping, and the loop's later writes of it are counted.
type hwPassFS struct {
	storage.OSFS
	m       atomic.Pointer[Manager]
	first   sync.Once
	blocked chan struct{} // closed when the first checkpoint waits
	later   atomic.Int32
}

func (f *hwPassFS) Rename(oldpath, newpath string) error {
	if filepath.Base(newpath) == storage.ReplicationOffsetFile && calledFrom("checkpointLoop") {
		isFirst := false
		f.first.Do(func() { isFirst = true })
		if isFirst {
			close(f.blocked)
			deadline := time.Now().Add(30 * time.Second)
			for !f.m.Load().stopping() && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
			}
		} else {
			f.later.Add(1)
		}
	}
	return f.OSFS.Rename(oldpath, newpath)
}

func calledFrom(function string) bool {
	pcs := make([]uintptr, 64)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(2, pcs)])
	for {
		fr, more := frames.Next()
		if strings.Contains(fr.Function, function) {
			return true
		}
		if !more {
			return false
		}
	}
}

// TestShutdownCutsCheckpointPassShort: shutdown does not wait for a
// periodic high-watermark checkpoint under way, and closing writes each log
// directory's replication-offset-checkpoint once, with every partition's
// high watermark, in Kafka's format; no per-partition file is written.
func TestShutdownCutsCheckpointPassShort(t *testing.T) {
	const partitions = 20
	fs := &hwPassFS{blocked: make(chan struct{})}
	e := newEnv(t, func(c *Config) { c.FS = fs; c.HighWatermarkCheckpointInterval = 100 * time.Millisecond }, nil)
	fs.m.Store(e.m)
	replicas := make([][]int32, partitions)
	for i := range replicas {
		replicas[i] = []int32{1}
	}
	e.topic("hw", replicas...)
	for p := range int32(partitions) {
		produce(t, e.m.Partition("hw", p), 1)
	}

	// The periodic checkpoint of the new high watermarks is now under
	// way, waiting until the manager stops.
	select {
	case <-fs.blocked:
	case <-time.After(30 * time.Second):
		t.Fatal("no high watermark was checkpointed")
	}
	if err := e.m.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if n := fs.later.Load(); n != 0 {
		t.Fatalf("the checkpoint loop wrote %d more times after shutdown began, want 0", n)
	}
	want := fmt.Sprintf("0\n%d\n", partitions)
	var lines []string
	for p := range partitions {
		lines = append(lines, fmt.Sprintf("hw %d 1\n", p))
		if _, err := os.Stat(filepath.Join(e.dir, fmt.Sprintf("hw-%d", p), "high-watermark-checkpoint")); !os.IsNotExist(err) {
			t.Fatalf("partition %d: a per-partition high watermark checkpoint exists (err %v)", p, err)
		}
	}
	// Sorted by topic, then partition (Kafka's order is a map's).
	want += strings.Join(lines, "")
	b, err := os.ReadFile(filepath.Join(e.dir, storage.ReplicationOffsetFile))
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != want {
		t.Fatalf("replication-offset-checkpoint after a clean shutdown:\n%q\nwant\n%q", b, want)
	}
}
