package storage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"runtime"
	"testing"

	"github.com/golang/snappy"
	"github.com/strait/strait/recordbatch"
	"github.com/strait/strait/storage/compress"
	"github.com/twmb/franz-go/pkg/kerr"
)

// withPayload is a produce batch of count records whose records section
// is payload as given, already compressed with codec.
func withPayload(t testing.TB, codec compress.Codec, count int, payload []byte) []byte {
	t.Helper()
	b := buildBatch(t, batchSpec{codec: compress.None, baseTimestamp: 1, records: make([]testRecord, count)}, []byte{})
	b = append(b[:recordbatch.HeaderSize], payload...)
	be := binary.BigEndian
	be.PutUint32(b[recordbatch.PosBatchLength:], uint32(len(b)-recordbatch.LogOverhead))
	be.PutUint16(b[recordbatch.PosAttributes:], uint16(codec))
	recordbatch.Batch(b).SetCRC()
	return b
}

// zstdBomb is about 3.3 MiB of zstd (our encoder's 32 MiB of zeros take
// 3.5 KiB; a hand-made frame of RLE blocks would be 4 times smaller) that expands to records values totalling
// 30 GiB: 30 records of a 1 GiB value, each value 32 concatenated frames of
// 32 MiB of zeros.
func zstdBomb(t testing.TB) (payload []byte, records int) {
	t.Helper()
	zeros, err := compress.Compress(compress.Zstd, nil, make([]byte, 32<<20))
	if err != nil {
		t.Fatal(err)
	}
	const value = 1 << 30
	for i := 0; i < 30; i++ {
		var body []byte
		body = append(body, 0)                     // attributes
		body = binary.AppendVarint(body, 0)        // timestamp delta
		body = binary.AppendVarint(body, int64(i)) // offset delta
		body = binary.AppendVarint(body, -1)       // null key
		body = binary.AppendVarint(body, value)    // value length
		head := binary.AppendVarint(nil, int64(len(body)+value+1))
		head = append(head, body...)
		frame, err := compress.Compress(compress.Zstd, nil, head)
		if err != nil {
			t.Fatal(err)
		}
		payload = append(payload, frame...)
		for j := 0; j < value/(32<<20); j++ {
			payload = append(payload, zeros...)
		}
		tail, err := compress.Compress(compress.Zstd, nil, []byte{0}) // no headers
		if err != nil {
			t.Fatal(err)
		}
		payload = append(payload, tail...)
	}
	return payload, 30
}

// A zstd bomb is refused with CORRUPT_MESSAGE once its records pass
// MaxDecompressedBatchBytes, having decompressed (and allocated) about the
// cap, not the 30 GiB it expands to.
func TestMaxDecompressedBatchBytesRefusesZstdBomb(t *testing.T) {
	payload, n := zstdBomb(t)
	if len(payload) > 4<<20 {
		t.Fatalf("bomb is %d bytes, meant to fit a 4 MiB batch", len(payload))
	}
	batch := withPayload(t, compress.Zstd, n, payload)
	cfg := testConfig()
	cfg.MaxMessageBytes = 8 << 20
	cfg.MaxDecompressedBatchBytes = 64 << 20

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := validateProduce(batch, &cfg, 1, "t-0")
	runtime.ReadMemStats(&after)
	var ae *AppendError
	if !errors.As(err, &ae) || ae.Err != kerr.CorruptMessage || !errors.Is(err, errDecompressedTooLarge) && !bytes.Contains([]byte(ae.Message), []byte("over the limit")) {
		t.Fatalf("bomb: %v, want CORRUPT_MESSAGE over the limit", err)
	}
	// The decoder's own buffers (window, blocks) are a few MiB; the cap
	// bounds what is decoded, so nothing near 64 MiB is allocated either.
	if d := after.TotalAlloc - before.TotalAlloc; d > 32<<20 {
		t.Fatalf("refusing the bomb allocated %d bytes", d)
	}
	t.Logf("%d-byte bomb of 30 GiB refused at the 64 MiB cap: %d bytes allocated", len(payload), after.TotalAlloc-before.TotalAlloc)

	// Under the cap the same kind of batch is accepted: the cap counts
	// decompressed bytes exactly.
	ok := simpleBatch(t, compress.Zstd, 100, 1)
	cfg.MaxDecompressedBatchBytes = 1 << 20
	if _, err := validateProduce(ok, &cfg, 1, "t-0"); err != nil {
		t.Fatalf("small batch under the cap: %v", err)
	}
}

// The cap is exact: records of exactly the cap pass, one byte less fails.
func TestMaxDecompressedBatchBytesBoundary(t *testing.T) {
	spec := batchSpec{codec: compress.Gzip, baseTimestamp: 1, records: []testRecord{{value: bytes.Repeat([]byte("v"), 1000)}}}
	raw := encodeRecord(spec.records[0])
	batch := buildBatch(t, spec, nil)
	cfg := testConfig()
	cfg.MaxDecompressedBatchBytes = int64(len(raw))
	if _, err := validateProduce(batch, &cfg, 1, "t-0"); err != nil {
		t.Fatalf("batch of exactly the cap: %v", err)
	}
	batch = buildBatch(t, spec, nil)
	cfg.MaxDecompressedBatchBytes = int64(len(raw) - 1)
	var ae *AppendError
	if _, err := validateProduce(batch, &cfg, 1, "t-0"); !errors.As(err, &ae) || ae.Err != kerr.CorruptMessage {
		t.Fatalf("batch one byte over the cap: %v, want CORRUPT_MESSAGE", err)
	}
}

// Row 3 of issue 17: raw snappy blocks claiming 64 MiB each, 16 partitions'
// worth per request, several requests: validating them all costs far less
// than one claimed block (before, each cost its 64 MiB claim).
func TestForgedSnappyClaimsDoNotAllocate(t *testing.T) {
	block := binary.AppendUvarint(nil, compress.MaxSnappyBlock)
	block = append(block, snappy.Encode(nil, []byte("tiny"))[1:]...) // a literal far short of the claim
	batch := withPayload(t, compress.Snappy, 1, block)
	cfg := testConfig()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	const batches = 8 * 16 // 8 requests of 16 partitions
	for i := 0; i < batches; i++ {
		b := append([]byte(nil), batch...)
		var ae *AppendError
		if _, err := validateProduce(b, &cfg, 1, "t-0"); !errors.As(err, &ae) || ae.Err != kerr.CorruptMessage {
			t.Fatalf("forged block: %v, want CORRUPT_MESSAGE", err)
		}
	}
	runtime.ReadMemStats(&after)
	// 128 claims of 64 MiB were 8 GiB of allocation before.
	if d := after.TotalAlloc - before.TotalAlloc; d > 8<<20 {
		t.Fatalf("%d forged batches allocated %d bytes", batches, d)
	}
	t.Logf("%d forged 64 MiB claims: %d bytes allocated", batches, after.TotalAlloc-before.TotalAlloc)
}
