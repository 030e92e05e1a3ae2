package storage

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/strait/strait/storage/compress"
)

// textValues is n values of size bytes of word-like text (what
// strait-bench produces: it compresses about 2-3x, like real payloads).
func textValues(n, size int) [][]byte {
	rng := rand.New(rand.NewPCG(1, 2))
	out := make([][]byte, n)
	for i := range out {
		v := make([]byte, 0, size+16)
		for len(v) < size {
			for range 3 + rng.IntN(8) {
				v = append(v, byte('a'+rng.IntN(26)))
			}
			v = append(v, ' ')
		}
		out[i] = v[:size]
	}
	return out
}

// BenchmarkValidate measures validateProduce alone (CRC32C, the record walk,
// decompression): no lock, no disk. MB/s counts the uncompressed records.
func BenchmarkValidate(b *testing.B) {
	for _, shape := range []struct{ n, size int }{{1000, 100}, {100, 1000}} {
		for _, codec := range []compress.Codec{compress.None, compress.LZ4, compress.Zstd, compress.Snappy, compress.Gzip} {
			b.Run(fmt.Sprintf("%dx%dB/%s", shape.n, shape.size, codec), func(b *testing.B) {
				spec := batchSpec{codec: codec, baseTimestamp: testEpoch.UnixMilli()}
				for i, v := range textValues(shape.n, shape.size) {
					spec.records = append(spec.records, testRecord{value: v, offsetDelta: int32(i), tsDelta: int64(i)})
				}
				batch := buildBatch(b, spec, nil)
				cfg := testConfig()
				now := testEpoch.UnixMilli()
				b.SetBytes(int64(shape.n * shape.size))
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if _, err := validateProduce(batch, &cfg, now, "t-0"); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkRecompress measures validateProduce when compression.type makes
// it rebuild the batch (uncompressed produced, stored as the topic's codec).
func BenchmarkRecompress(b *testing.B) {
	for _, target := range []string{"lz4", "zstd", "gzip"} {
		b.Run("none-to-"+target, func(b *testing.B) {
			spec := batchSpec{codec: compress.None, baseTimestamp: testEpoch.UnixMilli()}
			for i, v := range textValues(1000, 100) {
				spec.records = append(spec.records, testRecord{value: v, offsetDelta: int32(i), tsDelta: int64(i)})
			}
			batch := buildBatch(b, spec, nil)
			cfg := testConfig()
			cfg.CompressionType = target
			now := testEpoch.UnixMilli()
			b.SetBytes(int64(len(batch)))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				vb, err := validateProduce(batch, &cfg, now, "t-0")
				if err != nil || !vb.rebuilt {
					b.Fatal(err)
				}
				releaseRebuilt(vb.bytes) // as the append path does
			}
		})
	}
}
