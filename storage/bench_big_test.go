//go:build linux

package storage

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/strait/strait/recordbatch"
	"github.com/strait/strait/storage/compress"
	"golang.org/x/sys/unix"
)

// Benchmarks beyond the quick ones of bench_test.go. The big ones write
// gigabytes and run only with STRAIT_BENCH_BIG=1 (see BENCHMARKS.md); the
// data goes to STRAIT_BENCH_DIR if set, else a temporary directory, and is
// removed at the end.

func bigBenchDir(b *testing.B) string {
	if os.Getenv("STRAIT_BENCH_BIG") != "1" {
		b.Skip("set STRAIT_BENCH_BIG=1 to run the multi-gigabyte benchmarks")
	}
	parent := os.Getenv("STRAIT_BENCH_DIR")
	if parent == "" {
		return b.TempDir()
	}
	dir, err := os.MkdirTemp(parent, "strait-bench-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// fillLog appends 16 KB batches (16 records of 1000 bytes, uncompressed)
// until the log holds totalBytes, then fsyncs it.
func fillLog(b *testing.B, l *Log, totalBytes int64) {
	batch := benchBatch(b, compress.None, 16, 1000)
	start := time.Now()
	for written := int64(0); written < totalBytes; written += int64(len(batch)) {
		recordbatch.Batch(batch).SetBaseOffset(0)
		if _, err := l.AppendAsLeader(batch, 0); err != nil {
			b.Fatal(err)
		}
	}
	if err := l.flush(); err != nil {
		b.Fatal(err)
	}
	l.UpdateHighWatermark(l.LogEndOffset())
	el := time.Since(start)
	b.Logf("wrote %.2f GB in %s (%.0f MB/s with the final fsync), %d segments, log end offset %d",
		float64(totalBytes)/1e9, el.Round(time.Millisecond), float64(totalBytes)/1e6/el.Seconds(), len(l.segments), l.LogEndOffset())
}

// dropPageCache evicts the clean cached pages of every file in dir
// (posix_fadvise DONTNEED): only this benchmark's files, not the machine's
// whole page cache, which other processes share.
func dropPageCache(b *testing.B, dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		b.Fatal(err)
	}
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, logFileSuffix) && !strings.HasSuffix(name, indexFileSuffix) && !strings.HasSuffix(name, timeIndexFileSuffix) {
			continue
		}
		f, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			b.Fatal(err)
		}
		if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
			b.Fatal(err)
		}
		f.Close()
	}
}

// BenchmarkBigReadLatency measures Read (locating a 1 MiB fetch: segment
// search, offset-index binary search, header walks at both ends) at random
// offsets in a window of 10,000 offsets at the head, the middle and the
// tail (the active segment) of a 5 GiB partition of 1 GiB segments, with
// the files in the page cache ("warm") and evicted before every read
// ("cold").
func BenchmarkBigReadLatency(b *testing.B) {
	dir := bigBenchDir(b)
	cfg := DefaultLogConfig() // segment.bytes 1 GiB, index every 4 KiB
	l, err := Open(dir, cfg, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	fillLog(b, l, 5<<30)
	leo := l.LogEndOffset()
	const window = 10_000
	places := []struct {
		name  string
		first int64
	}{
		{"head", 0},
		{"middle", leo/2 - window/2},
		{"tail", leo - window},
	}
	for _, cold := range []bool{false, true} {
		for _, p := range places {
			name := p.name + "/warm"
			if cold {
				name = p.name + "/cold"
			}
			b.Run(name, func(b *testing.B) {
				rng := rand.New(rand.NewPCG(1, uint64(p.first)))
				for i := 0; i < b.N; i++ {
					off := p.first + rng.Int64N(window)
					if cold {
						b.StopTimer()
						dropPageCache(b, dir)
						b.StartTimer()
					}
					res, err := l.Read(off, 1<<20, leo, true)
					if err != nil || res.Size == 0 {
						b.Fatalf("read at %d: %v (%d bytes)", off, err, res.Size)
					}
				}
			})
		}
	}
}

// BenchmarkBigRecovery measures Open after an unclean stop with no
// recovery-point checkpoint: every batch of a 2 GiB log is re-validated
// (header checks, CRC32C over every byte), the indexes rebuilt and the
// segments fsynced. "warm": the log files in the page cache; "cold":
// evicted first, so the log is read from disk.
func BenchmarkBigRecovery(b *testing.B) {
	dir := bigBenchDir(b)
	cfg := DefaultLogConfig()
	l, err := Open(dir, cfg, Options{})
	if err != nil {
		b.Fatal(err)
	}
	const size = 2 << 30
	fillLog(b, l, size)
	crash(l)
	for _, cold := range []bool{false, true} {
		name := "warm"
		if cold {
			name = "cold"
		}
		b.Run(name, func(b *testing.B) {
			b.SetBytes(size)
			var total time.Duration
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				for _, f := range []string{recoveryPointFile, cleanShutdownFile} {
					if err := os.Remove(filepath.Join(dir, f)); err != nil && !os.IsNotExist(err) {
						b.Fatal(err)
					}
				}
				if cold {
					dropPageCache(b, dir)
				}
				b.StartTimer()
				start := time.Now()
				l, err := Open(dir, cfg, Options{})
				total += time.Since(start)
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				crash(l)
				b.StartTimer()
			}
			b.ReportMetric(total.Seconds()/float64(b.N)/(float64(size)/1e9), "s/GB")
		})
	}
}

// BenchmarkReadSendfile measures the zero-copy read path end to end in the
// kernel: Read locates 1 MiB at spread-out offsets of a 64 MB log, then
// sendfile(2) moves the slices to /dev/null, as the broker moves them to a
// socket. The log is in the page cache.
func BenchmarkReadSendfile(b *testing.B) {
	l, leo := benchReadLog(b)
	defer l.Close()
	devNull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer devNull.Close()
	b.ResetTimer()
	var total int64
	for i := 0; i < b.N; i++ {
		res, err := l.Read(int64(i*7919)%(leo-2000), 1<<20, leo, true)
		if err != nil {
			b.Fatal(err)
		}
		total += res.Size
		for _, s := range res.Slices {
			off := s.Pos
			for left := s.Len; left > 0; {
				n, err := syscall.Sendfile(int(devNull.Fd()), int(s.File.Fd()), &off, int(left))
				if err != nil || n == 0 {
					b.Fatalf("sendfile: %v", err)
				}
				left -= int64(n)
			}
		}
	}
	b.SetBytes(total / int64(max(b.N, 1)))
}
