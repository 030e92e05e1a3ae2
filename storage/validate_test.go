package storage

import (
	"encoding/binary"
	"testing"

	"github.com/strait/strait/recordbatch"
	"github.com/strait/strait/storage/compress"
	"github.com/twmb/franz-go/pkg/kerr"
)

func recs(n int) []testRecord {
	var rs []testRecord
	for i := 0; i < n; i++ {
		rs = append(rs, testRecord{key: []byte("k"), value: []byte("v"), offsetDelta: int32(i)})
	}
	return rs
}

// refreshCRC recomputes a hand-damaged batch's CRC so that the check under
// test, not the CRC, rejects it.
func refreshCRC(b []byte) []byte {
	recordbatch.Batch(b).SetCRC()
	return b
}

func TestValidationErrors(t *testing.T) {
	now := testEpoch.UnixMilli()
	good := func() []byte { return buildBatch(t, batchSpec{baseTimestamp: now, records: recs(3)}, nil) }
	be := binary.BigEndian
	cases := []struct {
		name   string
		cfg    func(*LogConfig)
		batch  func() []byte
		code   int16
		recErr int // expected RecordErrors, -1 = don't care
	}{
		{"empty", nil, func() []byte { return nil }, kerr.InvalidRecord.Code, -1},
		{"partial batch only", nil, func() []byte { return good()[:40] }, kerr.InvalidRecord.Code, -1},
		{"magic 1", nil, func() []byte { b := good(); b[recordbatch.PosMagic] = 1; return b }, kerr.InvalidRecord.Code, -1},
		{"magic 3", nil, func() []byte { b := good(); b[recordbatch.PosMagic] = 3; return b }, kerr.CorruptMessage.Code, -1},
		{"batch length below 14", nil, func() []byte { b := good(); be.PutUint32(b[recordbatch.PosBatchLength:], 13); return b }, kerr.CorruptMessage.Code, -1},
		{"batch length below header", nil, func() []byte { b := good()[:40]; be.PutUint32(b[recordbatch.PosBatchLength:], 28); return b }, kerr.CorruptMessage.Code, -1},
		{"two batches", nil, func() []byte { return append(good(), good()...) }, kerr.InvalidRecord.Code, -1},
		{"base offset not 0", nil, func() []byte { b := good(); recordbatch.Batch(b).SetBaseOffset(5); return b }, kerr.InvalidRecord.Code, -1},
		{"crc mismatch", nil, func() []byte { b := good(); b[len(b)-1] ^= 0x40; return b }, kerr.CorruptMessage.Code, -1},
		{"too large", func(c *LogConfig) { c.MaxMessageBytes = 50 }, good, kerr.MessageTooLarge.Code, -1},
		{"larger than segment", func(c *LogConfig) { c.SegmentBytes = 50 }, good, kerr.RecordListTooLarge.Code, -1},
		{"count mismatch", nil, func() []byte { b := good(); be.PutUint32(b[recordbatch.PosRecordCount:], 2); return refreshCRC(b) }, kerr.InvalidRecord.Code, -1},
		{"count zero", nil, func() []byte {
			b := good()
			be.PutUint32(b[recordbatch.PosRecordCount:], 0)
			be.PutUint32(b[recordbatch.PosLastOffsetDelta:], 0xffffffff)
			return refreshCRC(b)
		}, kerr.InvalidRecord.Code, -1},
		{"fewer records than count", nil, func() []byte {
			b := good()
			be.PutUint32(b[recordbatch.PosRecordCount:], 4)
			be.PutUint32(b[recordbatch.PosLastOffsetDelta:], 3)
			return refreshCRC(b)
		}, kerr.InvalidRecord.Code, -1},
		{"bytes after the last record", nil, func() []byte {
			raw := append(encodeRecord(testRecord{value: []byte("a")}), 0, 0)
			return buildBatch(t, batchSpec{baseTimestamp: now, records: recs(1)}, raw)
		}, kerr.InvalidRecord.Code, -1},
		{"record length past the batch", nil, func() []byte {
			raw := encodeRecord(testRecord{value: []byte("abc")})
			raw[0] = 40 // zigzag 20: longer than the body
			return buildBatch(t, batchSpec{baseTimestamp: now, records: recs(1)}, raw)
		}, kerr.InvalidRecord.Code, -1},
		{"value length past the record", nil, func() []byte {
			raw := encodeRecord(testRecord{value: []byte("abc")})
			raw[len(raw)-5] = 0x7e // value length 63
			return buildBatch(t, batchSpec{baseTimestamp: now, records: recs(1)}, raw)
		}, kerr.InvalidRecord.Code, -1},
		{"overlong varint", nil, func() []byte {
			raw := []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0x01}
			return buildBatch(t, batchSpec{baseTimestamp: now, records: recs(1)}, raw)
		}, kerr.InvalidRecord.Code, -1},
		{"too large once recompressed", func(c *LogConfig) { c.MaxMessageBytes = 200; c.CompressionType = "uncompressed" }, func() []byte {
			// 40 records of one repeated value: under 200 bytes as zstd,
			// over it uncompressed.
			spec := batchSpec{codec: compress.Zstd, baseTimestamp: now}
			for i := 0; i < 40; i++ {
				spec.records = append(spec.records, testRecord{value: []byte("same value"), offsetDelta: int32(i)})
			}
			return buildBatch(t, spec, nil)
		}, kerr.MessageTooLarge.Code, -1},
		{"control batch", nil, func() []byte {
			return buildBatch(t, batchSpec{attrs: recordbatch.AttrControl, baseTimestamp: now, records: recs(1)}, nil)
		}, kerr.InvalidRecord.Code, -1},
		{"producer id without sequence", nil, func() []byte {
			return buildBatch(t, batchSpec{producerID: 9, baseSequence: -1, baseTimestamp: now, records: recs(1)}, nil)
		}, kerr.InvalidRecord.Code, -1},
		{"unknown codec", nil, func() []byte {
			return buildBatch(t, batchSpec{attrs: 5, baseTimestamp: now, records: recs(1)}, nil)
		}, kerr.UnknownServerError.Code, -1},
		{"corrupt compressed payload", nil, func() []byte {
			b := buildBatch(t, batchSpec{codec: compress.Zstd, baseTimestamp: now, records: recs(20)}, nil)
			for i := recordbatch.HeaderSize + 8; i < len(b); i++ {
				b[i] ^= 0x5a
			}
			return refreshCRC(b)
		}, kerr.CorruptMessage.Code, -1},
		{"timestamp too far in the future", nil, func() []byte {
			rs := recs(3)
			rs[1].tsDelta = 3600001
			return buildBatch(t, batchSpec{baseTimestamp: now, records: rs}, nil)
		}, kerr.InvalidTimestamp.Code, 1},
		{"timestamp too old", func(c *LogConfig) { c.TimestampBeforeMaxMs = 1000 }, func() []byte {
			return buildBatch(t, batchSpec{baseTimestamp: now - 1001, records: recs(2)}, nil)
		}, kerr.InvalidTimestamp.Code, 2},
		{"compacted topic without key", func(c *LogConfig) { c.Compact = true }, func() []byte {
			rs := recs(3)
			rs[0].key, rs[2].key = nil, nil
			return buildBatch(t, batchSpec{baseTimestamp: now, records: rs}, nil)
		}, kerr.InvalidRecord.Code, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig()
			if tc.cfg != nil {
				tc.cfg(&cfg)
			}
			l := openTestLog(t, t.TempDir(), cfg, &testClock{testEpoch})
			defer l.Close()
			_, err := l.AppendAsLeader(tc.batch(), 0)
			if got := kerrCode(err); got != tc.code {
				t.Fatalf("error %v (code %d), want code %d", err, got, tc.code)
			}
			if ae, ok := err.(*AppendError); tc.recErr >= 0 && (!ok || len(ae.RecordErrors) != tc.recErr) {
				t.Fatalf("record errors: %#v", err)
			}
			if l.LogEndOffset() != 0 || l.active().size != 0 {
				t.Fatal("rejected batch changed the log")
			}
			// The log still takes good batches.
			l.SetConfig(testConfig())
			mustAppend(t, l, good())
		})
	}
}

func TestValidationAcceptsEdgeCases(t *testing.T) {
	now := testEpoch.UnixMilli()
	l := openTestLog(t, t.TempDir(), testConfig(), &testClock{testEpoch})
	defer l.Close()
	// Trailing partial bytes after the one batch are dropped, as Kafka does.
	b := buildBatch(t, batchSpec{baseTimestamp: now, records: recs(2)}, nil)
	n := len(b)
	info := mustAppend(t, l, append(b, 0, 0, 0, 0, 0))
	if l.active().size != int64(n) || info.LastOffset != 1 {
		t.Fatalf("stored %d bytes, want %d", l.active().size, n)
	}
	// Null keys and values, headers, timestamp -1 (no timestamp check).
	spec := batchSpec{baseTimestamp: -1, records: []testRecord{
		{key: nil, value: nil, headers: [][2][]byte{{[]byte("h"), nil}, {[]byte("h2"), []byte("v")}}},
		{key: []byte("k"), value: []byte{}, offsetDelta: 1},
	}}
	for _, codec := range allCodecs {
		spec.codec = codec
		mustAppend(t, l, buildBatch(t, spec, nil))
	}
	// A timestamp exactly at the limit is accepted.
	rs := recs(1)
	rs[0].tsDelta = 3600000
	mustAppend(t, l, buildBatch(t, batchSpec{baseTimestamp: now, records: rs}, nil))
	// Idempotent producer batch with a sequence.
	mustAppend(t, l, buildBatch(t, batchSpec{producerID: 3, baseSequence: 0, baseTimestamp: now, records: recs(2)}, nil))
}
