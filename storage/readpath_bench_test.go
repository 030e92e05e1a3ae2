package storage

import (
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/strait/strait/recordbatch"
	"github.com/strait/strait/storage/compress"
)

// countingFS counts the reads of segment log files (preads: batch
// headers, as the read path's index walks do).
type countingFS struct {
	FS
	reads atomic.Int64
}

type countingFile struct {
	File
	reads *atomic.Int64
}

func (c *countingFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	f, err := c.FS.OpenFile(name, flag, perm)
	if err != nil || !strings.HasSuffix(name, logFileSuffix) {
		return f, err
	}
	return countingFile{File: f, reads: &c.reads}, nil
}

func (f countingFile) ReadAt(b []byte, off int64) (int, error) {
	f.reads.Add(1)
	return f.File.ReadAt(b, off)
}

// BenchmarkReadSequentialSmallBatches: a consumer of old data reading
// fetches of 1 MiB and of 16 KiB, each where the last ended, through a log
// of 200-byte batches; and, "nothing left", a read with no bytes left in
// the response (a fetch over many partitions past its max bytes).
// preads/op counts the header reads of one read.
func BenchmarkReadSequentialSmallBatches(b *testing.B) {
	cfg := testConfig()
	cfg.SegmentBytes = 64 << 20
	fsys := &countingFS{FS: OSFS{}}
	l, err := Open(b.TempDir(), cfg, Options{FS: fsys})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	batch := benchBatch(b, compress.None, 1, 130)
	for range 100000 {
		recordbatch.Batch(batch).SetBaseOffset(0)
		if _, err := l.AppendAsLeader(batch, 0); err != nil {
			b.Fatal(err)
		}
	}
	hw := l.LogEndOffset()
	l.UpdateHighWatermark(hw)
	for _, bc := range []struct {
		name     string
		maxBytes int64
		minOne   bool
	}{{"fetch=1MiB", 1 << 20, true}, {"fetch=16KiB", 16 << 10, true}, {"nothing_left", 0, false}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			before := fsys.reads.Load()
			off := int64(0)
			for i := 0; i < b.N; i++ {
				res, err := l.Read(off, bc.maxBytes, hw, bc.minOne)
				if err != nil {
					b.Fatal(err)
				}
				res.Release()
				if bc.minOne {
					off = res.EndOffset
				} else {
					off += 7919
				}
				if off >= hw {
					off = 0
				}
			}
			b.ReportMetric(float64(fsys.reads.Load()-before)/float64(b.N), "preads/op")
		})
	}
}
