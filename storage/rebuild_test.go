package storage

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/recordbatch"
	"github.com/strait/strait/storage/compress"
)

// segmentBatches reads the active segment's file as it is on disk and
// splits it into batches with franz-go's kmsg decoder (independent of this
// package's parsing), checking each CRC.
func segmentBatches(t *testing.T, l *Log) []kmsg.RecordBatch {
	t.Helper()
	raw, err := os.ReadFile(segPath(l.Dir(), l.active().baseOffset, ".log"))
	if err != nil {
		t.Fatal(err)
	}
	raw = raw[:l.active().size]
	var out []kmsg.RecordBatch
	for len(raw) > 0 {
		var rb kmsg.RecordBatch
		if err := rb.ReadFrom(raw); err != nil {
			t.Fatal(err)
		}
		n := recordbatch.LogOverhead + int(rb.Length)
		if !recordbatch.Batch(raw[:n]).CRCValid() {
			t.Fatalf("batch at offset %d: CRC does not match", rb.FirstOffset)
		}
		raw = raw[n:]
		out = append(out, rb)
	}
	return out
}

// kmsgRecords decodes a stored batch's records with kmsg.
func kmsgRecords(t *testing.T, rb kmsg.RecordBatch) []kmsg.Record {
	t.Helper()
	raw, err := compress.Decompress(compress.Codec(rb.Attributes&7), rb.Records, 1<<24)
	if err != nil {
		t.Fatal(err)
	}
	var out []kmsg.Record
	for len(raw) > 0 {
		length, n := kbin.Varint(raw)
		if n <= 0 || int(length) > len(raw)-n {
			t.Fatalf("bad record length")
		}
		var r kmsg.Record
		if err := r.ReadFrom(raw[:n+int(length)]); err != nil {
			t.Fatal(err)
		}
		raw = raw[n+int(length):]
		out = append(out, r)
	}
	if len(out) != int(rb.NumRecords) {
		t.Fatalf("%d records, header says %d", len(out), rb.NumRecords)
	}
	return out
}

// A produced batch is stored in the topic's compression.type, as Kafka's
// LogValidator stores it: recompressed when the codecs differ (records,
// timestamps, headers and producer fields kept, offsets assigned in the
// new batch), byte for byte when they match or the type is "producer".
func TestCompressionTypeRecompresses(t *testing.T) {
	now := testEpoch.UnixMilli()
	types := []struct {
		name string
		want func(source compress.Codec) compress.Codec
	}{
		{"producer", func(s compress.Codec) compress.Codec { return s }},
		{"uncompressed", func(compress.Codec) compress.Codec { return compress.None }},
		{"gzip", func(compress.Codec) compress.Codec { return compress.Gzip }},
		{"snappy", func(compress.Codec) compress.Codec { return compress.Snappy }},
		{"lz4", func(compress.Codec) compress.Codec { return compress.LZ4 }},
		{"zstd", func(compress.Codec) compress.Codec { return compress.Zstd }},
	}
	for _, tt := range types {
		for _, source := range allCodecs {
			t.Run(fmt.Sprintf("%s from %s", tt.name, source), func(t *testing.T) {
				cfg := testConfig()
				cfg.CompressionType = tt.name
				l := openTestLog(t, t.TempDir(), cfg, &testClock{testEpoch})
				defer l.Close()
				mustAppend(t, l, simpleBatch(t, compress.None, 2, now)) // offsets 0-1
				spec := batchSpec{codec: source, baseTimestamp: now, producerID: 11, baseSequence: 0}
				for i := 0; i < 50; i++ {
					spec.records = append(spec.records, testRecord{
						key: []byte(fmt.Sprintf("key-%d", i)), value: bytes.Repeat([]byte{byte('a' + i%26)}, 100+i),
						tsDelta: int64(50 - i), offsetDelta: int32(i),
						headers: [][2][]byte{{[]byte("h"), []byte(fmt.Sprint(i))}},
					})
				}
				spec.records[3].value = nil
				produced := buildBatch(t, spec, nil)
				original := bytes.Clone(produced)
				info := mustAppend(t, l, produced)
				if info.FirstOffset != 2 || info.LastOffset != 51 {
					t.Fatalf("offsets %d-%d, want 2-51", info.FirstOffset, info.LastOffset)
				}
				batches := segmentBatches(t, l)
				rb := batches[1]
				want := tt.want(source)
				if got := compress.Codec(rb.Attributes & 7); got != want {
					t.Fatalf("stored codec %s, want %s", got, want)
				}
				if want == source {
					// Byte for byte but for the broker's fields.
					stored := rb.AppendTo(nil)
					if !bytes.Equal(stored[recordbatch.PosMagic:], original[recordbatch.PosMagic:]) {
						t.Fatal("a batch already in the topic's codec was rewritten")
					}
				}
				if rb.FirstOffset != 2 || rb.LastOffsetDelta != 49 || rb.NumRecords != 50 ||
					rb.ProducerID != 11 || rb.FirstSequence != 0 || rb.PartitionLeaderEpoch != 7 {
					t.Fatalf("stored header: offset %d, last delta %d, %d records, producer %d seq %d, epoch %d",
						rb.FirstOffset, rb.LastOffsetDelta, rb.NumRecords, rb.ProducerID, rb.FirstSequence, rb.PartitionLeaderEpoch)
				}
				// A rebuilt batch's base timestamp is its first record's, as
				// Kafka's MemoryRecordsBuilder writes it.
				wantBase := now + 50
				if want == source {
					wantBase = now
				}
				if rb.FirstTimestamp != wantBase || rb.MaxTimestamp != now+50 {
					t.Fatalf("timestamps base %d max %d, want %d and %d", rb.FirstTimestamp, rb.MaxTimestamp, wantBase, now+50)
				}
				for i, r := range kmsgRecords(t, rb) {
					ts := rb.FirstTimestamp + r.TimestampDelta64
					w := spec.records[i]
					if r.OffsetDelta != int32(i) || ts != now+w.tsDelta || string(r.Key) != string(w.key) ||
						!bytes.Equal(r.Value, w.value) || (r.Value == nil) != (w.value == nil) ||
						len(r.Headers) != 1 || string(r.Headers[0].Value) != fmt.Sprint(i) {
						t.Fatalf("record %d: %+v", i, r)
					}
				}
				// Storage's own read path agrees, and a duplicate of the
				// batch is still recognised by its producer sequence.
				res, err := l.Read(0, math.MaxInt64, l.LogEndOffset(), true)
				if err != nil {
					t.Fatal(err)
				}
				if hs := splitBatches(t, readSlices(t, res)); len(hs) != 2 || hs[1].NextOffset() != 52 {
					t.Fatalf("read back %d batches", len(hs))
				}
				dup := mustAppend(t, l, original)
				if dup.FirstOffset != 2 || l.LogEndOffset() != 52 {
					t.Fatalf("duplicate appended at %d, log end %d", dup.FirstOffset, l.LogEndOffset())
				}
			})
		}
	}
}

// LogAppendTime on a recompressed batch: the append time is the max
// timestamp, the records keep the producer's timestamps.
func TestRecompressLogAppendTime(t *testing.T) {
	cfg := testConfig()
	cfg.CompressionType, cfg.TimestampType = "lz4", LogAppendTime
	clock := &testClock{testEpoch}
	l := openTestLog(t, t.TempDir(), cfg, clock)
	defer l.Close()
	info := mustAppend(t, l, simpleBatch(t, compress.None, 5, testEpoch.UnixMilli()-1000))
	rb := segmentBatches(t, l)[0]
	if compress.Codec(rb.Attributes&7) != compress.LZ4 || rb.Attributes&recordbatch.AttrTimestampType == 0 ||
		rb.MaxTimestamp != testEpoch.UnixMilli() || info.LogAppendTime != testEpoch.UnixMilli() ||
		rb.FirstTimestamp != testEpoch.UnixMilli()-1000 {
		t.Fatalf("stored attributes %#x, base %d max %d; append time %d", rb.Attributes, rb.FirstTimestamp, rb.MaxTimestamp, info.LogAppendTime)
	}
}

// Offset deltas that do not run 0..n-1 (Kafka's "older clients that do
// not implement the internal offsets correctly"): a compressed batch is
// rewritten with deltas by position; an uncompressed one kept uncompressed
// is stored as it came, as Kafka's assignOffsetsNonCompressed does.
func TestOffsetDeltasRewrittenAsKafka(t *testing.T) {
	now := testEpoch.UnixMilli()
	for _, source := range allCodecs {
		t.Run(source.String(), func(t *testing.T) {
			l := openTestLog(t, t.TempDir(), testConfig(), &testClock{testEpoch})
			defer l.Close()
			rs := recs(4)
			rs[0].offsetDelta, rs[1].offsetDelta, rs[2].offsetDelta, rs[3].offsetDelta = 0, 5, 5, -2
			produced := buildBatch(t, batchSpec{codec: source, baseTimestamp: now, records: rs}, nil)
			original := bytes.Clone(produced)
			info := mustAppend(t, l, produced)
			if info.FirstOffset != 0 || info.LastOffset != 3 || l.LogEndOffset() != 4 {
				t.Fatalf("offsets %d-%d", info.FirstOffset, info.LastOffset)
			}
			rb := segmentBatches(t, l)[0]
			if compress.Codec(rb.Attributes&7) != source {
				t.Fatalf("codec changed to %d", rb.Attributes&7)
			}
			stored := rb.AppendTo(nil)
			for i, r := range kmsgRecords(t, rb) {
				want := int32(i)
				if source == compress.None {
					want = rs[i].offsetDelta
				}
				if r.OffsetDelta != want {
					t.Fatalf("record %d has delta %d, want %d", i, r.OffsetDelta, want)
				}
			}
			if kept := bytes.Equal(stored[recordbatch.PosMagic:], original[recordbatch.PosMagic:]); kept != (source == compress.None) {
				t.Fatalf("stored byte for byte: %v", kept)
			}
		})
	}
}

// Rebuilds on several partitions at once share the pooled encoders and
// buffers; each log still reads back its own records (run under -race).
func TestRecompressConcurrent(t *testing.T) {
	const logs, appends = 4, 20
	errs := make(chan error, logs)
	for g := 0; g < logs; g++ {
		go func(g int) {
			var err error
			// Reported once the log is closed: the test's temporary
			// directories are removed once every result is in.
			defer func() { errs <- err }()
			cfg := testConfig()
			cfg.CompressionType = []string{"zstd", "lz4", "gzip", "snappy"}[g]
			l, err := Open(t.TempDir(), cfg, Options{Now: (&testClock{testEpoch}).now})
			if err != nil {
				return
			}
			defer l.Close()
			for i := 0; i < appends; i++ {
				spec := batchSpec{codec: compress.None, baseTimestamp: testEpoch.UnixMilli()}
				for j := 0; j < 10; j++ {
					spec.records = append(spec.records, testRecord{key: []byte(fmt.Sprint(g)), value: []byte(fmt.Sprintf("%d-%d-%d", g, i, j)), offsetDelta: int32(j)})
				}
				if _, err = l.AppendAsLeader(buildBatch(t, spec, nil), 0); err != nil {
					return
				}
			}
			res, err := l.Read(0, math.MaxInt64, l.LogEndOffset(), true)
			if err != nil {
				return
			}
			defer res.Release()
			n := 0
			for rest := readSlices(t, res); len(rest) > 0 && err == nil; {
				var batch []byte
				var ok bool
				if batch, rest, ok = recordbatch.Split(rest); !ok {
					err = fmt.Errorf("log %d: a partial batch", g)
					break
				}
				err = recordbatch.ForEach(batch, compress.Limited(1<<20), func(_ *recordbatch.Header, r *recordbatch.Record) error {
					if want := fmt.Sprintf("%d-%d-%d", g, n/10, n%10); string(r.Value) != want {
						return fmt.Errorf("log %d record %d: %q, want %q", g, n, r.Value, want)
					}
					n++
					return nil
				})
			}
			if err == nil && n != appends*10 {
				err = fmt.Errorf("log %d: %d records", g, n)
			}
		}(g)
	}
	deadline := time.After(60 * time.Second)
	for g := 0; g < logs; g++ {
		select {
		case err := <-errs:
			if err != nil {
				t.Fatal(err)
			}
		case <-deadline:
			t.Fatal("the appending goroutines did not finish in 60 s")
		}
	}
}

// A record larger than the stream's window (its head read a byte at a
// time) is rebuilt whole.
func TestRecompressLargeRecord(t *testing.T) {
	cfg := testConfig()
	cfg.CompressionType = "zstd"
	l := openTestLog(t, t.TempDir(), cfg, &testClock{testEpoch})
	defer l.Close()
	big := bytes.Repeat([]byte("0123456789abcdef"), 20000) // 320 KB
	spec := batchSpec{codec: compress.Gzip, baseTimestamp: testEpoch.UnixMilli(), records: []testRecord{
		{key: bytes.Repeat([]byte("k"), 100_000), value: big},
		{key: []byte("small"), value: []byte("v"), offsetDelta: 1},
	}}
	mustAppend(t, l, buildBatch(t, spec, nil))
	rb := segmentBatches(t, l)[0]
	recs := kmsgRecords(t, rb)
	if compress.Codec(rb.Attributes&7) != compress.Zstd || len(recs) != 2 || !bytes.Equal(recs[0].Value, big) ||
		len(recs[0].Key) != 100_000 || string(recs[1].Key) != "small" || recs[1].OffsetDelta != 1 {
		t.Fatalf("codec %d, %d records", rb.Attributes&7, len(recs))
	}
}
