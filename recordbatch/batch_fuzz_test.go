package recordbatch_test

import (
	"encoding/binary"
	"runtime"
	"testing"

	"github.com/strait/strait/recordbatch"
	"github.com/strait/strait/storage/compress"
)

// fuzzDecompressLimit caps a batch's decompressed records section in
// FuzzReadBatch, as the broker's decompressed-size cap does.
const fuzzDecompressLimit = 1 << 20

// batchAllocBound is the most reading a batch of n bytes may allocate: the
// decompressed section (at most the limit, times 4 for a growing buffer's
// doublings), a decoder's own state, and a little per input byte. A
// decoder's state is bounded by the caps of storage/compress, not by the
// input: lz4 block buffers of up to 4 MiB, a zstd window of up to
// MaxZstdWindow (a 74-byte frame declaring a large window makes the
// decoder take 37 MB: the regression seed c74391ff88536519), a raw snappy
// block of up to MaxSnappyBlock.
func batchAllocBound(n int) uint64 {
	return 4*fuzzDecompressLimit + compress.MaxZstdWindow + compress.MaxSnappyBlock + 4*uint64(n)
}

// compressedBatch is b's batch with its records section compressed by c,
// its attributes naming c, and its length and CRC set.
func compressedBatch(tb testing.TB, b *recordbatch.Builder, c compress.Codec) []byte {
	plain := b.Build()
	out, err := compress.Compress(c, append([]byte(nil), plain[:recordbatch.HeaderSize]...), plain[recordbatch.HeaderSize:])
	if err != nil {
		tb.Fatal(err)
	}
	attrs := binary.BigEndian.Uint16(out[recordbatch.PosAttributes:])
	binary.BigEndian.PutUint16(out[recordbatch.PosAttributes:], attrs&^recordbatch.AttrCompressionMask|uint16(c))
	fixLength(out)
	return out
}

// fixLength sets a batch's length to its bytes and recomputes its CRC.
func fixLength(b []byte) {
	binary.BigEndian.PutUint32(b[recordbatch.PosBatchLength:], uint32(len(b)-recordbatch.LogOverhead))
	recordbatch.Batch(b).SetCRC()
}

// FuzzReadBatch checks, reads and iterates any bytes as a v2 batch of any
// codec (none, gzip, snappy, lz4, zstd), decompressing at most
// fuzzDecompressLimit bytes: no panic, allocation within batchAllocBound,
// no more records than the header counts, and records and headers inside
// the decompressed bytes. Mutated bytes are read as they are and again
// with their length and CRC made consistent, so that the fuzzer reaches
// the codecs and the record parser past the framing checks.
func FuzzReadBatch(f *testing.F) {
	for c := compress.None; c <= compress.Zstd; c++ {
		b := recordbatch.NewBuilder(1_700_000_000_000)
		b.Add([]byte("k"), []byte("v"))
		b.Add(nil, nil)
		b.AddRecord(&recordbatch.Record{OffsetDelta: 2, TimestampDelta: 5, Key: []byte("key"), Value: make([]byte, 300),
			HeaderCount: 1, Headers: recordbatch.AppendHeader(nil, []byte("h"), []byte("hv"))})
		f.Add(compressedBatch(f, b, c))
		tx := recordbatch.NewBuilder(0)
		tx.ProducerID, tx.ProducerEpoch, tx.BaseSequence, tx.Transactional = 7, 1, 0, true
		tx.Add([]byte("a"), []byte("b"))
		f.Add(compressedBatch(f, tx, c))
	}
	f.Add(recordbatch.MarkerBatch(recordbatch.EndTxnMarker{ProducerID: 7, ProducerEpoch: 1, Commit: true}, 0))
	f.Add(compressedBatch(f, recordbatch.NewBuilder(0), compress.Zstd))
	// A zstd bomb: 4 MiB of zeros in a few hundred bytes, over the limit.
	big := recordbatch.NewBuilder(0)
	big.Add(nil, make([]byte, 4<<20))
	f.Add(compressedBatch(f, big, compress.Zstd))
	f.Add([]byte{})

	decompress := compress.Limited(fuzzDecompressLimit)
	f.Fuzz(func(t *testing.T, data []byte) {
		readBatch(t, data, decompress)
		if len(data) >= recordbatch.HeaderSize {
			fixed := append([]byte(nil), data...)
			fixLength(fixed)
			if err := recordbatch.Check(fixed); err == nil && !recordbatch.Batch(fixed).CRCValid() {
				t.Fatal("CRC invalid after SetCRC")
			}
			readBatch(t, fixed, decompress)
		}
	})
}

func readBatch(t *testing.T, data []byte, decompress recordbatch.Decompressor) {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	var decompressed int
	counting := func(codec int8, src []byte) ([]byte, error) {
		out, err := decompress(codec, src)
		if len(out) > fuzzDecompressLimit {
			t.Fatalf("codec %d: %d bytes decompressed, over the limit", codec, len(out))
		}
		decompressed = len(out)
		return out, err
	}
	var n int32
	var h recordbatch.Header
	err := recordbatch.ForEach(data, counting, func(hp *recordbatch.Header, r *recordbatch.Record) error {
		h = *hp
		n++
		size := len(r.Key) + len(r.Value) + len(r.Headers)
		if size > len(data)-recordbatch.HeaderSize && size > decompressed {
			t.Fatalf("record of %d bytes from a %d-byte batch (%d decompressed)", size, len(data), decompressed)
		}
		it := r.HeaderIter()
		for range r.HeaderCount {
			if _, ok := it.Next(); !ok {
				break
			}
		}
		return nil
	})
	runtime.ReadMemStats(&after)
	if got, bound := after.TotalAlloc-before.TotalAlloc, batchAllocBound(len(data)); got > bound {
		t.Fatalf("reading %d bytes allocated %d, over the bound %d", len(data), got, bound)
	}
	if n > h.RecordCount && n > 0 {
		t.Fatalf("%d records from a batch counting %d", n, h.RecordCount)
	}
	if err == nil && recordbatch.Check(data) != nil {
		t.Fatal("a batch failing Check was read without an error")
	}
}
