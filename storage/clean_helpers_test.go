package storage

import (
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/strait/strait/recordbatch"
	"github.com/strait/strait/storage/compress"
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// compactConfig is cleanup.policy=compact with small segments.
func compactConfig() LogConfig {
	cfg := testConfig()
	cfg.Compact, cfg.Delete = true, false
	cfg.SegmentBytes = 2048
	cfg.IndexIntervalBytes = 200
	return cfg
}

func testCleaner(t testing.TB, logs ...*Log) *Cleaner {
	t.Helper()
	cfg := DefaultCleanerConfig()
	cfg.DedupeBufferSize = 1 << 20
	cfg.IOBufferSize = 16 << 10
	c, err := NewCleaner(cfg, func() []*Log { return logs }, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func cleanOnce(t testing.TB, c *Cleaner, now time.Time) (CleanResult, bool) {
	t.Helper()
	res, cleaned, err := c.runOnce(now)
	if err != nil {
		t.Fatalf("clean: %v", err)
	}
	return res, cleaned
}

func rec(key, value string) testRecord { return testRecord{key: []byte(key), value: []byte(value)} }
func tombstone(key string) testRecord  { return testRecord{key: []byte(key)} }

// keyedBatch is a produce batch of recs at timestamps ts, ts+1, ...
func keyedBatch(t testing.TB, codec compress.Codec, ts int64, recs ...testRecord) []byte {
	spec := batchSpec{codec: codec, baseTimestamp: ts}
	for i, r := range recs {
		r.offsetDelta, r.tsDelta = int32(i), int64(i)
		spec.records = append(spec.records, r)
	}
	return buildBatch(t, spec, nil)
}

// roll seals the active segment.
func roll(t testing.TB, l *Log) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, err := l.rollLocked(l.now()); err != nil {
		t.Fatal(err)
	}
}

// loggedRecord is a record as read back from the log with franz-go's
// decoder, independent of the cleaner's.
type loggedRecord struct {
	offset, timestamp int64
	key, value        []byte // nil = null
}

type loggedBatch struct {
	kmsg.RecordBatch
	records []loggedRecord
}

// readLog reads every batch from the log start to the log end, checking
// CRCs and increasing offsets.
func readLog(t testing.TB, l *Log) []loggedBatch {
	t.Helper()
	res, err := l.Read(l.LogStartOffset(), math.MaxInt64, l.LogEndOffset(), true)
	if err != nil {
		t.Fatal(err)
	}
	b := readSlices(t, res)
	var out []loggedBatch
	next := int64(-1)
	for len(b) > 0 {
		var rb kmsg.RecordBatch
		if err := rb.ReadFrom(b); err != nil {
			t.Fatalf("decode batch: %v", err)
		}
		size := 12 + int(rb.Length)
		if recordbatch.Batch(b[:size]).ComputeCRC() != uint32(rb.CRC) {
			t.Fatalf("bad crc in batch at offset %d", rb.FirstOffset)
		}
		b = b[size:]
		if rb.FirstOffset < next {
			t.Fatalf("batch at offset %d after offset %d", rb.FirstOffset, next-1)
		}
		next = rb.FirstOffset + int64(rb.LastOffsetDelta) + 1
		raw, err := compress.Decompress(compress.Codec(rb.Attributes&recordbatch.AttrCompressionMask), rb.Records, 64<<20)
		if err != nil {
			t.Fatal(err)
		}
		lb := loggedBatch{RecordBatch: rb}
		for i := int32(0); i < rb.NumRecords; i++ {
			length, n := kbin.Varint(raw)
			if n <= 0 || int(length) > len(raw)-n {
				t.Fatalf("bad record length in batch %d", rb.FirstOffset)
			}
			var r kmsg.Record
			if err := r.ReadFrom(raw[:n+int(length)]); err != nil {
				t.Fatal(err)
			}
			raw = raw[n+int(length):]
			ts := rb.FirstTimestamp + r.TimestampDelta64
			if rb.Attributes&recordbatch.AttrTimestampType != 0 {
				ts = rb.MaxTimestamp
			}
			off := rb.FirstOffset + int64(r.OffsetDelta)
			if off < rb.FirstOffset || off > next-1 || (len(lb.records) > 0 && off <= lb.records[len(lb.records)-1].offset) {
				t.Fatalf("record offset %d out of place in batch [%d, %d]", off, rb.FirstOffset, next-1)
			}
			lb.records = append(lb.records, loggedRecord{offset: off, timestamp: ts, key: r.Key, value: r.Value})
		}
		if len(raw) != 0 {
			t.Fatalf("batch %d: %d bytes after the records", rb.FirstOffset, len(raw))
		}
		out = append(out, lb)
	}
	return out
}

func allRecords(batches []loggedBatch) []loggedRecord {
	var out []loggedRecord
	for _, b := range batches {
		out = append(out, b.records...)
	}
	return out
}

// keyedLog appends to l nBatches batches of perBatch records whose keys
// cycle through nKeys keys and whose values name their offset, and returns
// every record appended.
func keyedLog(t testing.TB, l *Log, codec compress.Codec, nBatches, perBatch, nKeys int, ts int64) []loggedRecord {
	t.Helper()
	var all []loggedRecord
	for i := 0; i < nBatches; i++ {
		base := l.LogEndOffset()
		var recs []testRecord
		for j := 0; j < perBatch; j++ {
			off := base + int64(j)
			key := fmt.Sprintf("key-%03d", (int(off)*7)%nKeys)
			value := fmt.Sprintf("%s@%d", key, off)
			recs = append(recs, rec(key, value))
			all = append(all, loggedRecord{offset: off, timestamp: ts + int64(i) + int64(j), key: []byte(key), value: []byte(value)})
		}
		mustAppend(t, l, keyedBatch(t, codec, ts+int64(i), recs...))
	}
	return all
}

// latestByKey returns the offset of each key's last record.
func latestByKey(recs []loggedRecord) map[string]int64 {
	m := map[string]int64{}
	for _, r := range recs {
		m[string(r.key)] = r.offset
	}
	return m
}

// checkCompacted checks that got is what compacting orig below end leaves:
// every record is an original one (same offset, key, value and timestamp),
// below end only the latest record of each key among those below end
// remains (a later one at or above end is not known to that cleaning), and
// at or above end nothing is missing.
func checkCompacted(t testing.TB, orig, got []loggedRecord, end int64) {
	t.Helper()
	byOffset := map[int64]loggedRecord{}
	var below []loggedRecord
	for _, r := range orig {
		byOffset[r.offset] = r
		if r.offset < end {
			below = append(below, r)
		}
	}
	latest := latestByKey(below)
	present := map[int64]bool{}
	for _, r := range got {
		o, ok := byOffset[r.offset]
		if !ok || string(o.key) != string(r.key) || !slices.Equal(o.value, r.value) || (o.value == nil) != (r.value == nil) {
			t.Fatalf("record at offset %d is %q=%q, originally %q=%q", r.offset, r.key, r.value, o.key, o.value)
		}
		if r.timestamp != o.timestamp {
			t.Fatalf("record at offset %d has timestamp %d, originally %d", r.offset, r.timestamp, o.timestamp)
		}
		if r.offset < end && latest[string(r.key)] != r.offset {
			t.Fatalf("record at offset %d (key %s) survived though offset %d has the same key", r.offset, r.key, latest[string(r.key)])
		}
		present[r.offset] = true
	}
	for _, r := range orig {
		if (r.offset >= end || latest[string(r.key)] == r.offset) && !present[r.offset] && r.value != nil {
			t.Fatalf("record at offset %d (key %s) is missing", r.offset, r.key)
		}
	}
}
