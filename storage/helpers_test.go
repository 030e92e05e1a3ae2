package storage

import (
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/strait/strait/recordbatch"
	"github.com/strait/strait/storage/compress"
	"github.com/twmb/franz-go/pkg/kerr"
)

type testRecord struct {
	key, value  []byte // nil = null
	tsDelta     int64
	offsetDelta int32
	headers     [][2][]byte
}

type batchSpec struct {
	codec         compress.Codec
	baseTimestamp int64
	maxTimestamp  *int64 // default: baseTimestamp + largest delta
	producerID    int64
	baseSequence  int32
	attrs         int16 // extra attribute bits
	records       []testRecord
}

func encodeRecord(r testRecord) []byte {
	var body []byte
	body = append(body, 0)
	body = binary.AppendVarint(body, r.tsDelta)
	body = binary.AppendVarint(body, int64(r.offsetDelta))
	appendBytes := func(b []byte) {
		if b == nil {
			body = binary.AppendVarint(body, -1)
			return
		}
		body = binary.AppendVarint(body, int64(len(b)))
		body = append(body, b...)
	}
	appendBytes(r.key)
	appendBytes(r.value)
	body = binary.AppendVarint(body, int64(len(r.headers)))
	for _, h := range r.headers {
		appendBytes(h[0])
		appendBytes(h[1])
	}
	return append(binary.AppendVarint(nil, int64(len(body))), body...)
}

// buildBatch encodes a produce batch as a client would (base offset 0,
// producer id -1 unless set). rawRecords, if non-nil, replaces the encoded
// records section.
func buildBatch(t testing.TB, spec batchSpec, rawRecords []byte) []byte {
	t.Helper()
	records := rawRecords
	if records == nil {
		for _, r := range spec.records {
			records = append(records, encodeRecord(r)...)
		}
	}
	payload, err := compress.Compress(spec.codec, nil, records)
	if err != nil {
		t.Fatal(err)
	}
	maxTs := spec.baseTimestamp
	for _, r := range spec.records {
		maxTs = max(maxTs, spec.baseTimestamp+r.tsDelta)
	}
	if spec.maxTimestamp != nil {
		maxTs = *spec.maxTimestamp
	}
	pid, seq := int64(-1), int32(-1)
	if spec.producerID != 0 {
		pid, seq = spec.producerID, spec.baseSequence
	}
	b := make([]byte, recordbatch.HeaderSize, recordbatch.HeaderSize+len(payload))
	be := binary.BigEndian
	be.PutUint32(b[recordbatch.PosBatchLength:], uint32(recordbatch.HeaderSize-recordbatch.LogOverhead+len(payload)))
	be.PutUint32(b[recordbatch.PosLeaderEpoch:], 0xffffffff)
	b[recordbatch.PosMagic] = recordbatch.MagicV2
	be.PutUint16(b[recordbatch.PosAttributes:], uint16(int16(spec.codec)|spec.attrs))
	be.PutUint32(b[recordbatch.PosLastOffsetDelta:], uint32(len(spec.records)-1))
	be.PutUint64(b[recordbatch.PosBaseTimestamp:], uint64(spec.baseTimestamp))
	be.PutUint64(b[recordbatch.PosMaxTimestamp:], uint64(maxTs))
	be.PutUint64(b[recordbatch.PosProducerID:], uint64(pid))
	be.PutUint16(b[recordbatch.PosProducerEpoch:], 0xffff)
	be.PutUint32(b[recordbatch.PosBaseSequence:], uint32(seq))
	be.PutUint32(b[recordbatch.PosRecordCount:], uint32(len(spec.records)))
	b = append(b, payload...)
	recordbatch.Batch(b).SetCRC()
	return b
}

// simpleBatch has n records with values "v<i>", keys "k<i>", timestamps
// baseTs+i.
func simpleBatch(t testing.TB, codec compress.Codec, n int, baseTs int64) []byte {
	spec := batchSpec{codec: codec, baseTimestamp: baseTs}
	for i := 0; i < n; i++ {
		spec.records = append(spec.records, testRecord{
			key: []byte{'k', byte('0' + i%10)}, value: []byte("value-" + string(rune('a'+i%26))),
			tsDelta: int64(i), offsetDelta: int32(i),
		})
	}
	return buildBatch(t, spec, nil)
}

// testClock is a settable clock for Options.Now.
type testClock struct{ t time.Time }

func (c *testClock) now() time.Time { return c.t }

var testEpoch = time.UnixMilli(1_700_000_000_000)

func testConfig() LogConfig {
	cfg := DefaultLogConfig()
	cfg.FileDeleteDelayMs = 0
	return cfg
}

func openTestLog(t testing.TB, dir string, cfg LogConfig, clock *testClock) *Log {
	t.Helper()
	opts := Options{}
	if clock != nil {
		opts.Now = clock.now
	}
	l, err := Open(dir, cfg, opts)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	return l
}

func mustAppend(t testing.TB, l *Log, batch []byte) AppendInfo {
	t.Helper()
	info, err := l.AppendAsLeader(batch, 7)
	if err != nil {
		t.Fatalf("append: %v", err)
	}
	return info
}

// readAll reads the slices' bytes.
func readSlices(t testing.TB, res ReadResult) []byte {
	t.Helper()
	var out []byte
	for _, s := range res.Slices {
		b := make([]byte, s.Len)
		if _, err := s.File.ReadAt(b, s.Pos); err != nil && !errors.Is(err, io.EOF) {
			t.Fatal(err)
		}
		out = append(out, b...)
	}
	if int64(len(out)) != res.Size {
		t.Fatalf("slices hold %d bytes, Size says %d", len(out), res.Size)
	}
	return out
}

// splitBatches parses whole batches, checking each CRC.
func splitBatches(t testing.TB, b []byte) []batchHeader {
	t.Helper()
	var hs []batchHeader
	for len(b) > 0 {
		if len(b) < recordbatch.HeaderSize {
			t.Fatalf("partial batch of %d bytes", len(b))
		}
		h := parseBatchHeader(b)
		if h.Size() > int64(len(b)) {
			t.Fatalf("partial batch: %d of %d bytes", len(b), h.Size())
		}
		if recordbatch.Batch(b[:h.Size()]).ComputeCRC() != h.CRC {
			t.Fatalf("bad crc in batch at offset %d", h.BaseOffset)
		}
		hs = append(hs, h)
		b = b[h.Size():]
	}
	return hs
}

func kerrCode(err error) int16 {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	return 0
}

// crash closes a log's files without the clean shutdown (no flush, no
// marker, indexes left preallocated), as a killed process would; a flush
// of rolled segments under way stops where it is (it must not be blocked).
func crash(l *Log) {
	l.stopFlush.Store(true)
	l.mu.Lock()
	l.closed.Store(true)
	for _, s := range l.segments {
		s.closeFiles()
	}
	l.mu.Unlock()
	l.flushes.Wait()
}

func fileSize(t testing.TB, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

func segPath(dir string, base int64, suffix string) string {
	return filepath.Join(dir, segmentName(base, suffix))
}

func segmentName(base int64, suffix string) string {
	return filepath.Base(segmentPath("", base, suffix))
}
