package storage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/strait/strait/recordbatch"
	"github.com/strait/strait/storage/compress"
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// zeroChunk is the unit of the synthetic large values below: this many
// zeros compress to one small zstd frame, repeated as needed.
const zeroChunk = 4 << 20

// zeroValueRecord returns zstd frames that decompress to one record whose
// key is key, offset delta off, timestamp delta 0, no headers, and whose
// value is n zero bytes (n a multiple of zeroChunk): a value of hundreds
// of MiB costs a few KiB of batch and no memory to build.
func zeroValueRecord(t testing.TB, key []byte, off int, n int64) []byte {
	t.Helper()
	zeroFrameOnce.Do(func() { zeroFrame, zeroFrameErr = compress.Compress(compress.Zstd, nil, make([]byte, zeroChunk)) })
	zeros, err := zeroFrame, zeroFrameErr
	if err != nil {
		t.Fatal(err)
	}
	var head []byte
	head = append(head, 0)                       // attributes
	head = binary.AppendVarint(head, 0)          // timestamp delta
	head = binary.AppendVarint(head, int64(off)) // offset delta
	head = binary.AppendVarint(head, int64(len(key)))
	head = append(head, key...)
	head = binary.AppendVarint(head, n)
	pre := binary.AppendVarint(nil, int64(len(head))+n+1)
	out, err := compress.Compress(compress.Zstd, nil, append(pre, head...))
	if err != nil {
		t.Fatal(err)
	}
	for i := int64(0); i < n/zeroChunk; i++ {
		out = append(out, zeros...)
	}
	tail, err := compress.Compress(compress.Zstd, nil, []byte{0}) // no headers
	if err != nil {
		t.Fatal(err)
	}
	return append(out, tail...)
}

var (
	zeroFrameOnce sync.Once
	zeroFrame     []byte
	zeroFrameErr  error
)

// logFiles returns the bytes of every .log file of dir, by name.
func logFiles(t testing.TB, dir string) map[string][]byte {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*"+logFileSuffix))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(n)] = b
	}
	return out
}

// syncBuffer is a log sink safe for the cleaner's goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Issue 17: a batch the cleaner cannot afford (over
// strait.max.decompressed.batch.bytes) or cannot decode marks its partition
// uncleanable, with one log line naming it, as Kafka's LogCleanerManager
// does; its data stays as it was, and the other partitions are compacted.
func TestCleanerMarksUncleanableAndCarriesOn(t *testing.T) {
	root := t.TempDir()
	clock := &testClock{testEpoch}
	cfg := compactConfig()
	cfg.SegmentBytes = 1 << 20

	// A zstd bomb: 64 MiB of value in a batch of a few KiB, appended while
	// the cap allowed it; the cap then drops to 16 MiB.
	bomb := openTestLog(t, filepath.Join(root, "bomb-0"), cfg, clock)
	defer bomb.Close()
	mustAppend(t, bomb, withPayload(t, compress.Zstd, 1, zeroValueRecord(t, []byte("k"), 0, 64<<20)))
	mustAppend(t, bomb, keyedBatch(t, compress.None, testEpoch.UnixMilli(), rec("k", "small")))
	roll(t, bomb)
	bomb.UpdateHighWatermark(bomb.LogEndOffset())
	capped := cfg
	capped.MaxDecompressedBatchBytes = 16 << 20
	bomb.SetConfig(capped)

	// A batch whose zstd payload is junk under a valid CRC, as a follower
	// stores what its leader sent without decompressing it.
	corrupt := openTestLog(t, filepath.Join(root, "corrupt-0"), cfg, clock)
	defer corrupt.Close()
	junk := withPayload(t, compress.Zstd, 2, []byte("\x28\xb5\x2f\xfd not really zstd at all"))
	if _, err := corrupt.AppendAsFollower(junk); err != nil {
		t.Fatalf("follower append: %v", err)
	}
	mustAppend(t, corrupt, keyedBatch(t, compress.None, testEpoch.UnixMilli(), rec("k", "v")))
	roll(t, corrupt)
	corrupt.UpdateHighWatermark(corrupt.LogEndOffset())

	fine := openTestLog(t, filepath.Join(root, "fine-0"), compactConfig(), clock)
	defer fine.Close()
	orig := keyedLog(t, fine, compress.Zstd, 30, 4, 5, testEpoch.UnixMilli())
	fine.UpdateHighWatermark(fine.LogEndOffset())

	bombFiles, corruptFiles := logFiles(t, bomb.dir), logFiles(t, corrupt.dir)

	var logs syncBuffer
	ccfg := DefaultCleanerConfig()
	ccfg.DedupeBufferSize = 1 << 20
	ccfg.IOBufferSize = 16 << 10
	c, err := NewCleaner(ccfg, func() []*Log { return []*Log{bomb, corrupt, fine} },
		Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	var failed []error
	cleanedFine := false
	for i := 0; i < 6; i++ {
		res, cleaned, err := c.runOnce(testEpoch)
		if !cleaned {
			break
		}
		if err != nil {
			failed = append(failed, err)
		} else if res.Dir == fine.dir {
			cleanedFine = true
		}
	}
	if len(failed) != 2 || !cleanedFine {
		t.Fatalf("failures %v, fine log cleaned %v; want the bomb and the corrupt batch to fail and the fine log cleaned", failed, cleanedFine)
	}
	if !errors.Is(failed[0], errDecompressedTooLarge) && !errors.Is(failed[1], errDecompressedTooLarge) {
		t.Fatalf("no failure is the cap: %v", failed)
	}
	if !bomb.uncleanable.Load() || !corrupt.uncleanable.Load() || fine.uncleanable.Load() {
		t.Fatalf("uncleanable: bomb %v, corrupt %v, fine %v", bomb.uncleanable.Load(), corrupt.uncleanable.Load(), fine.uncleanable.Load())
	}
	for _, name := range []string{"bomb-0", "corrupt-0"} {
		if n := strings.Count(logs.String(), "partition="+name); n != 1 {
			t.Fatalf("%d log lines name %s, want 1:\n%s", n, name, logs.String())
		}
	}
	if !strings.Contains(logs.String(), "uncleanable") {
		t.Fatalf("no line says uncleanable:\n%s", logs.String())
	}

	// Untouched: same segment files, same bytes, no checkpoint.
	for _, p := range []struct {
		l     *Log
		files map[string][]byte
	}{{bomb, bombFiles}, {corrupt, corruptFiles}} {
		after := logFiles(t, p.l.dir)
		if len(after) != len(p.files) {
			t.Fatalf("%s: %d segment files, had %d", p.l.dir, len(after), len(p.files))
		}
		for name, b := range p.files {
			if !bytes.Equal(after[name], b) {
				t.Fatalf("%s: %s changed", p.l.dir, name)
			}
		}
		if cp := p.l.cleanerCheckpoint.Load(); cp > 0 {
			t.Fatalf("%s: cleaner checkpoint moved to %d", p.l.dir, cp)
		}
	}
	checkCompacted(t, orig, allRecords(readLog(t, fine)), fine.cleanerCheckpoint.Load())

	// The uncleanable logs are not picked again.
	if res, cleaned, err := c.runOnce(testEpoch); cleaned {
		t.Fatalf("cleaned %s again (%v)", res.Dir, err)
	}
}

// decodedRecords reads every record of the log with franz-go's decoder,
// headers included, keyed by offset.
func decodedRecords(t testing.TB, l *Log) map[int64]kmsg.Record {
	t.Helper()
	res, err := l.Read(l.LogStartOffset(), math.MaxInt64, l.LogEndOffset(), true)
	if err != nil {
		t.Fatal(err)
	}
	b := readSlices(t, res)
	out := map[int64]kmsg.Record{}
	for len(b) > 0 {
		var rb kmsg.RecordBatch
		if err := rb.ReadFrom(b); err != nil {
			t.Fatal(err)
		}
		if recordbatch.Batch(b[:12+int(rb.Length)]).ComputeCRC() != uint32(rb.CRC) {
			t.Fatalf("bad crc in batch at offset %d", rb.FirstOffset)
		}
		b = b[12+int(rb.Length):]
		raw, err := compress.Decompress(compress.Codec(rb.Attributes&recordbatch.AttrCompressionMask), rb.Records, 64<<20)
		if err != nil {
			t.Fatal(err)
		}
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
			r.TimestampDelta64 += rb.FirstTimestamp // the record's own timestamp
			out[rb.FirstOffset+int64(r.OffsetDelta)] = r
		}
		if len(raw) != 0 {
			t.Fatalf("batch %d: %d bytes after its records", rb.FirstOffset, len(raw))
		}
	}
	return out
}

// A rewritten batch streams its kept records: one with a key larger than
// the stream's window (its head cannot be looked at whole), values larger
// than the window, headers, and a tombstone given its delete horizon, all
// come out as they went in, whatever the codec.
func TestCleanerRewritesLargeRecordsStreaming(t *testing.T) {
	bigKey := bytes.Repeat([]byte("K"), 100<<10)
	bigValue := bytes.Repeat([]byte("value "), 20<<10)
	hdrs := [][2][]byte{{[]byte("h1"), []byte("v1")}, {[]byte("h2"), bytes.Repeat([]byte("H"), 70<<10)}}
	for _, codec := range allCodecs {
		t.Run(codec.String(), func(t *testing.T) {
			cfg := compactConfig()
			cfg.SegmentBytes = 4 << 20
			l := openTestLog(t, t.TempDir(), cfg, &testClock{testEpoch})
			defer l.Close()
			ts := testEpoch.UnixMilli() - 10_000
			recs := []testRecord{
				{key: []byte("a"), value: []byte("a0"), headers: hdrs[:1]},
				{key: bigKey, value: []byte("big0"), headers: hdrs},
				{key: []byte("b"), value: bigValue},
				{key: []byte("c")}, // tombstone
				{key: bigKey, value: bigValue},
				{key: []byte("d"), value: bigValue, headers: hdrs},
			}
			spec := batchSpec{codec: codec, baseTimestamp: ts}
			for i, r := range recs {
				r.offsetDelta, r.tsDelta = int32(i), int64(3*i)
				spec.records = append(spec.records, r)
			}
			mustAppend(t, l, buildBatch(t, spec, nil))
			mustAppend(t, l, keyedBatch(t, compress.None, ts+100, rec("a", "a1"), rec("b", "b1")))
			roll(t, l)
			l.UpdateHighWatermark(l.LogEndOffset())
			before := decodedRecords(t, l)

			c := testCleaner(t, l)
			res, cleaned := cleanOnce(t, c, testEpoch)
			if !cleaned || res.RecordsWritten != 5 {
				t.Fatalf("clean result %+v (cleaned %v); want 5 records kept", res, cleaned)
			}
			after := decodedRecords(t, l)
			for _, off := range []int64{3, 4, 5, 6, 7} {
				a, b := after[off], before[off]
				if !bytes.Equal(a.Key, b.Key) || !bytes.Equal(a.Value, b.Value) || (a.Value == nil) != (b.Value == nil) ||
					a.TimestampDelta64 != b.TimestampDelta64 || len(a.Headers) != len(b.Headers) {
					t.Fatalf("record %d: key %d bytes, value %d bytes, ts %d, %d headers; was %d, %d, %d, %d", off,
						len(a.Key), len(a.Value), a.TimestampDelta64, len(a.Headers), len(b.Key), len(b.Value), b.TimestampDelta64, len(b.Headers))
				}
				for i := range a.Headers {
					if a.Headers[i].Key != b.Headers[i].Key || !bytes.Equal(a.Headers[i].Value, b.Headers[i].Value) {
						t.Fatalf("record %d: header %d changed", off, i)
					}
				}
			}
			for _, off := range []int64{0, 1, 2} {
				if _, ok := after[off]; ok {
					t.Fatalf("record %d was kept", off)
				}
			}
			batches := readLog(t, l)
			if first := batches[0]; first.FirstOffset != 0 || first.NumRecords != 3 ||
				compress.Codec(first.Attributes&recordbatch.AttrCompressionMask) != codec ||
				first.Attributes&recordbatch.AttrDeleteHorizon == 0 || first.FirstTimestamp != testEpoch.UnixMilli()+compactConfig().DeleteRetentionMs {
				t.Fatalf("rewritten batch %+v", first.RecordBatch)
			}
		})
	}
}
