package storage

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/strait/strait/recordbatch"
	"github.com/strait/strait/storage/compress"
)

// benchBatch is a batch of n records of valueSize bytes.
func benchBatch(b *testing.B, codec compress.Codec, n, valueSize int) []byte {
	spec := batchSpec{codec: codec, baseTimestamp: testEpoch.UnixMilli()}
	value := make([]byte, valueSize)
	for i := range value {
		value[i] = byte(i % 61)
	}
	for i := 0; i < n; i++ {
		spec.records = append(spec.records, testRecord{key: []byte("key"), value: value, offsetDelta: int32(i), tsDelta: int64(i)})
	}
	return buildBatch(b, spec, nil)
}

func benchmarkAppend(b *testing.B, codec compress.Codec) {
	cfg := testConfig()
	cfg.SegmentBytes = 64 << 20
	l := openTestLog(b, b.TempDir(), cfg, &testClock{testEpoch})
	defer l.Close()
	batch := benchBatch(b, codec, 16, 1000) // ~16 KB uncompressed, a typical producer batch
	// MB/s counts the uncompressed batch, what the producer handed over:
	// the values compress a hundredfold, so stored bytes would say little.
	b.SetBytes(int64(len(benchBatch(b, compress.None, 16, 1000))))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		recordbatch.Batch(batch).SetBaseOffset(0) // AppendAsLeader assigned it in place
		if _, err := l.AppendAsLeader(batch, 0); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAppendUncompressed(b *testing.B) { benchmarkAppend(b, compress.None) }
func BenchmarkAppendZstd(b *testing.B)         { benchmarkAppend(b, compress.Zstd) }
func BenchmarkAppendLZ4(b *testing.B)          { benchmarkAppend(b, compress.LZ4) }
func BenchmarkAppendSnappy(b *testing.B)       { benchmarkAppend(b, compress.Snappy) }
func BenchmarkAppendGzip(b *testing.B)         { benchmarkAppend(b, compress.Gzip) }

// benchReadLog is a 64 MB log of 16 KB batches in 8 MiB segments, in the
// page cache, and its log end offset.
func benchReadLog(b *testing.B) (*Log, int64) {
	cfg := testConfig()
	cfg.SegmentBytes = 8 << 20
	l := openTestLog(b, b.TempDir(), cfg, &testClock{testEpoch})
	batch := benchBatch(b, compress.None, 16, 1000)
	for i := 0; i < 4000; i++ {
		recordbatch.Batch(batch).SetBaseOffset(0)
		if _, err := l.AppendAsLeader(batch, 0); err != nil {
			b.Fatal(err)
		}
	}
	leo := l.LogEndOffset()
	l.UpdateHighWatermark(leo)
	return l, leo
}

// BenchmarkRead measures locating 1 MiB fetches at spread-out offsets (the
// broker then sends the slices with sendfile, which is not measured here:
// see BenchmarkReadSendfile).
func BenchmarkRead(b *testing.B) {
	l, leo := benchReadLog(b)
	defer l.Close()
	b.ReportAllocs()
	b.ResetTimer()
	var total int64
	for i := 0; i < b.N; i++ {
		off := int64(i*7919) % leo
		res, err := l.Read(off, 1<<20, leo, true)
		if err != nil {
			b.Fatal(err)
		}
		total += res.Size
	}
	b.SetBytes(total / int64(max(b.N, 1)))
}

// BenchmarkReadPread is BenchmarkRead plus copying the located bytes into
// user space with pread, the path a TLS listener will take.
func BenchmarkReadPread(b *testing.B) {
	l, leo := benchReadLog(b)
	defer l.Close()
	buf := make([]byte, 1<<20)
	b.ResetTimer()
	var total int64
	for i := 0; i < b.N; i++ {
		res, err := l.Read(int64(i*7919)%(leo-2000), 1<<20, leo, true)
		if err != nil {
			b.Fatal(err)
		}
		for _, s := range res.Slices {
			if _, err := s.File.ReadAt(buf[:s.Len], s.Pos); err != nil {
				b.Fatal(err)
			}
		}
		total += res.Size
	}
	b.SetBytes(total / int64(max(b.N, 1)))
}

// BenchmarkCompaction measures one cleaning of a compacted log of 200,000
// records (lz4 batches of 160 records of 160 half-random bytes, about 35 MB
// on disk) over 10,000 keys, each written 20 times:
// building the offset map, rewriting every segment (decompressing and
// recompressing the batches) and swapping the segments in. MB/s counts the
// log's bytes before cleaning.
func BenchmarkCompaction(b *testing.B) {
	cfg := testConfig()
	cfg.Compact, cfg.Delete = true, false
	cfg.SegmentBytes = 8 << 20
	template := b.TempDir()
	l := openTestLog(b, template, cfg, nil)
	rng := rand.New(rand.NewPCG(1, 2))
	var n int
	for l.LogEndOffset() < 200_000 {
		spec := batchSpec{codec: compress.LZ4, baseTimestamp: testEpoch.UnixMilli()}
		for i := 0; i < 160; i++ {
			n++
			key := fmt.Appendf(nil, "key-%05d", n*7919%10000)
			value := make([]byte, 160)
			for j := 0; j < len(value); j += 2 { // half random: compresses about 2:1
				value[j] = byte(rng.Uint32())
			}
			spec.records = append(spec.records, testRecord{key: key, value: value, offsetDelta: int32(i)})
		}
		if _, err := l.AppendAsLeader(buildBatch(b, spec, nil), 0); err != nil {
			b.Fatal(err)
		}
	}
	l.mu.Lock()
	if _, err := l.rollLocked(l.now()); err != nil {
		b.Fatal(err)
	}
	l.mu.Unlock()
	var size int64
	for _, s := range l.segments {
		size += s.size
	}
	if err := l.Close(); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(size)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		dir := filepath.Join(b.TempDir(), "log")
		if err := os.CopyFS(dir, os.DirFS(template)); err != nil {
			b.Fatal(err)
		}
		l := openTestLog(b, dir, cfg, nil)
		l.UpdateHighWatermark(l.LogEndOffset())
		c := testCleaner(b, l)
		b.StartTimer()
		res, cleaned, err := c.runOnce(testEpoch)
		if err != nil || !cleaned || res.RecordsWritten != 10000 {
			b.Fatalf("clean: %+v, %v, %v", res, cleaned, err)
		}
		b.StopTimer()
		l.Close()
		b.StartTimer()
	}
}
