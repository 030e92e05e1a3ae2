package storage

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/strait/strait/storage/compress"
)

// BenchmarkIdlePartitionDescriptors measures the descriptors a broker's
// storage holds for idle partitions: STRAIT_FD_PARTITIONS logs (default
// 1,000) of STRAIT_FD_SEGMENTS segments each (default 3) are written,
// closed cleanly and opened again as at a broker start, with a FileCache of
// STRAIT_FD_CACHE files (default 4096; 0: none, every segment keeps its
// descriptor, as before the cache); STRAIT_FD_DIR keeps the logs between
// runs. It reports the descriptors open under
// the log directory right after opening (fds_open) and once every
// partition has been idle a minute (fds_idle: ReleaseIdleActive, as the
// broker's maintenance pass calls it), and the whole process's then
// (process_fds_idle), from /proc/self/fd. BENCHMARKS.md has the figures and the command.
func BenchmarkIdlePartitionDescriptors(b *testing.B) {
	env := func(k string, def int) int {
		if v := os.Getenv(k); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				b.Fatalf("%s=%q: %v", k, v, err)
			}
			return n
		}
		return def
	}
	parts, segs, cacheMax := env("STRAIT_FD_PARTITIONS", 1000), env("STRAIT_FD_SEGMENTS", 3), env("STRAIT_FD_CACHE", 4096)
	dir := os.Getenv("STRAIT_FD_DIR") // kept between runs: writing the logs takes longest
	if dir == "" {
		dir = b.TempDir()
	}
	cfg := testConfig()
	cfg.SegmentBytes = 200       // every append after the first rolls
	cfg.SegmentIndexBytes = 8192 // the active indexes reserve their blocks: 10 MiB each would fill the disk
	batch := simpleBatch(b, compress.None, 5, testEpoch.UnixMilli())
	for p := range parts {
		if _, err := os.Stat(filepath.Join(dir, fmt.Sprintf("t-%d", p), ".kafka_cleanshutdown")); err == nil {
			continue // written by an earlier run
		}
		l, err := Open(filepath.Join(dir, fmt.Sprintf("t-%d", p)), cfg, Options{})
		if err != nil {
			b.Fatal(err)
		}
		for range segs {
			if _, err := l.AppendAsLeader(append([]byte(nil), batch...), 0); err != nil {
				b.Fatal(err)
			}
		}
		if err := l.Close(); err != nil {
			b.Fatal(err)
		}
	}
	for range b.N {
		var cache *FileCache
		if cacheMax > 0 {
			cache = NewFileCache(cacheMax)
		}
		start := time.Now()
		logs := make([]*Log, 0, parts)
		for p := range parts {
			l, err := Open(filepath.Join(dir, fmt.Sprintf("t-%d", p)), cfg, Options{FileCache: cache})
			if err != nil {
				b.Fatalf("opening partition %d of %d: %v", p, parts, err)
			}
			logs = append(logs, l)
		}
		opened := time.Since(start)
		under, _ := fdsUnder(b, dir)
		b.ReportMetric(float64(len(under)), "fds_open")
		b.ReportMetric(opened.Seconds(), "open_s")
		// A minute without appends, as the broker's maintenance pass sees it.
		for _, l := range logs {
			l.ReleaseIdleActive(testEpoch, time.Minute)
			l.ReleaseIdleActive(testEpoch.Add(time.Minute), time.Minute)
		}
		under, total := fdsUnder(b, dir)
		b.ReportMetric(float64(len(under)), "fds_idle")
		b.ReportMetric(float64(total), "process_fds_idle")
		for _, l := range logs {
			if err := l.Close(); err != nil {
				b.Fatal(err)
			}
		}
	}
}
