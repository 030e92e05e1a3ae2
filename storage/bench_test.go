package storage

import (
	"testing"

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
	b.SetBytes(int64(len(batch)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		setBaseOffset(batch, 0) // AppendAsLeader assigned it in place
		if _, err := l.AppendAsLeader(batch, 0); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAppendUncompressed(b *testing.B) { benchmarkAppend(b, compress.None) }
func BenchmarkAppendZstd(b *testing.B)         { benchmarkAppend(b, compress.Zstd) }
func BenchmarkAppendLZ4(b *testing.B)          { benchmarkAppend(b, compress.LZ4) }

// BenchmarkRead measures locating 1 MiB fetches at spread-out offsets (the
// broker then sends the slices with sendfile, which is not measured).
func BenchmarkRead(b *testing.B) {
	cfg := testConfig()
	cfg.SegmentBytes = 8 << 20
	l := openTestLog(b, b.TempDir(), cfg, &testClock{testEpoch})
	defer l.Close()
	batch := benchBatch(b, compress.None, 16, 1000)
	for i := 0; i < 2000; i++ { // ~32 MB, 4 segments
		setBaseOffset(batch, 0)
		if _, err := l.AppendAsLeader(batch, 0); err != nil {
			b.Fatal(err)
		}
	}
	leo := l.LogEndOffset()
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
