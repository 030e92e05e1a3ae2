package broker

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strait/strait/config"
	"github.com/strait/strait/storage"
)

// hwPassFS is the real filesystem, except that the checkpoint loop's first
// high-watermark checkpoint waits until the broker is stopping, and the
// loop's later checkpoints are counted.
type hwPassFS struct {
	storage.OSFS
	srv     atomic.Pointer[Server]
	first   sync.Once
	blocked chan struct{} // closed when the first checkpoint waits
	later   atomic.Int32
}

func (f *hwPassFS) Rename(oldpath, newpath string) error {
	if filepath.Base(newpath) == "high-watermark-checkpoint" && calledFrom("highWatermarkCheckpointLoop") {
		isFirst := false
		f.first.Do(func() { isFirst = true })
		if isFirst {
			close(f.blocked)
			for !f.srv.Load().parts.stopping() {
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

// TestShutdownCutsCheckpointPassShort: shutdown does not wait for a pass
// that checkpoints every partition's high watermark (two fsyncs each:
// seconds with 10,000 partitions); closing the logs writes the checkpoints
// the pass left.
func TestShutdownCutsCheckpointPassShort(t *testing.T) {
	const partitions = 20
	dir := t.TempDir()
	cfg, _, err := config.Parse(map[string]string{
		"listeners": "PLAINTEXT://127.0.0.1:0",
		"log.dirs":  dir,
		"replica.high.watermark.checkpoint.interval.ms": "100",
	})
	if err != nil {
		t.Fatal(err)
	}
	fs := &hwPassFS{blocked: make(chan struct{})}
	cfg.StorageFS = fs
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	fs.srv.Store(srv)
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	<-srv.Ready()

	cl, err := kgo.NewClient(kgo.SeedBrokers(srv.Addr()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if resp, err := kadm.NewClient(cl).CreateTopic(ctx, partitions, 1, nil, "hw"); err != nil || resp.Err != nil {
		t.Fatalf("create topic: %v %v", err, resp.Err)
	}
	for p := range int32(partitions) {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "hw", Partition: p, Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatalf("produce to partition %d: %v", p, err)
		}
	}
	cl.Close()

	// The pass that checkpoints the new high watermarks is now under way,
	// waiting on its first partition until the broker stops.
	select {
	case <-fs.blocked:
	case <-ctx.Done():
		t.Fatal("no high watermark was checkpointed")
	}
	if err := srv.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if n := fs.later.Load(); n != 0 {
		t.Fatalf("the checkpoint pass wrote %d more partitions after shutdown began, want 0", n)
	}
	for p := range partitions {
		b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("hw-%d", p), "high-watermark-checkpoint"))
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != "0\n1\n" {
			t.Fatalf("partition %d: high watermark checkpoint %q after a clean shutdown, want \"0\\n1\\n\"", p, b)
		}
	}
}
