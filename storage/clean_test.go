package storage

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strait/strait/recordbatch"
	"github.com/strait/strait/storage/compress"
	"github.com/twmb/franz-go/pkg/kerr"
)

func TestCompactionKeepsLatestValuePerKey(t *testing.T) {
	for _, codec := range allCodecs {
		t.Run(codec.String(), func(t *testing.T) {
			dir := t.TempDir()
			l := openTestLog(t, dir, compactConfig(), &testClock{testEpoch})
			orig := keyedLog(t, l, codec, 60, 4, 13, testEpoch.UnixMilli()-60_000)
			l.UpdateHighWatermark(l.LogEndOffset())
			if len(l.segments) < 4 {
				t.Fatalf("only %d segments", len(l.segments))
			}
			active := l.active()
			activeBytes, err := os.ReadFile(segPath(dir, active.baseOffset, logFileSuffix))
			if err != nil {
				t.Fatal(err)
			}
			var sizeBefore int64
			for _, s := range l.segments {
				sizeBefore += s.size
			}

			c := testCleaner(t, l)
			res, cleaned := cleanOnce(t, c, testEpoch)
			if !cleaned || res.EndOffset != active.baseOffset || res.FirstDirtyOffset != 0 || res.RecordsWritten >= res.RecordsRead {
				t.Fatalf("clean result %+v, cleaned %v; want end offset %d", res, cleaned, active.baseOffset)
			}
			if cp, ok, _ := readCheckpoint(l.fs, dir, cleanerOffsetFile); !ok || cp != res.EndOffset {
				t.Fatalf("cleaner checkpoint %d (%v), want %d", cp, ok, res.EndOffset)
			}
			batches := readLog(t, l)
			got := allRecords(batches)
			checkCompacted(t, orig, got, res.EndOffset)
			for _, b := range batches {
				if b.NumRecords > 0 && compress.Codec(b.Attributes&recordbatch.AttrCompressionMask) != codec {
					t.Fatalf("batch %d has codec %d, want %s", b.FirstOffset, b.Attributes&recordbatch.AttrCompressionMask, codec)
				}
				if b.PartitionLeaderEpoch != 7 || b.ProducerID != -1 {
					t.Fatalf("batch %d lost its header fields: %+v", b.FirstOffset, b.RecordBatch)
				}
			}
			var sizeAfter int64
			for _, s := range l.segments {
				sizeAfter += s.size
			}
			if sizeAfter >= sizeBefore {
				t.Fatalf("log did not shrink: %d -> %d bytes", sizeBefore, sizeAfter)
			}

			// The active segment is untouched, on disk and in memory.
			if l.active() != active {
				t.Fatal("the active segment was replaced")
			}
			if after, _ := os.ReadFile(segPath(dir, active.baseOffset, logFileSuffix)); !bytes.Equal(after, activeBytes) {
				t.Fatal("the active segment's bytes changed")
			}

			// A read at any offset, compacted away or not, starts with the
			// first batch reaching it.
			checkReadsAtEveryOffset(t, l, batches)

			// Nothing is dirty any more.
			if _, cleaned := cleanOnce(t, c, testEpoch); cleaned {
				t.Fatal("a clean log was cleaned again")
			}

			// The cleaned segments load cleanly, and recover after a crash.
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			l = openTestLog(t, dir, compactConfig(), nil)
			if again := allRecords(readLog(t, l)); len(again) != len(got) {
				t.Fatalf("reopened log has %d records, want %d", len(again), len(got))
			}
			crash(l)
			_ = os.Remove(filepath.Join(dir, recoveryPointFile))
			l = openTestLog(t, dir, compactConfig(), nil)
			defer l.Close()
			if again := allRecords(readLog(t, l)); len(again) != len(got) {
				t.Fatalf("recovered log has %d records, want %d", len(again), len(got))
			}
		})
	}
}

// checkReadsAtEveryOffset reads one batch at every offset of the log.
func checkReadsAtEveryOffset(t *testing.T, l *Log, batches []loggedBatch) {
	t.Helper()
	leo := l.LogEndOffset()
	for o := l.LogStartOffset(); o < leo; o++ {
		res, err := l.Read(o, 1, leo, true)
		if err != nil {
			t.Fatalf("read at %d: %v", o, err)
		}
		hs := splitBatches(t, readSlices(t, res))
		want := -1
		for i, b := range batches {
			if b.FirstOffset+int64(b.LastOffsetDelta) >= o {
				want = i
				break
			}
		}
		if len(hs) != 1 || hs[0].BaseOffset != batches[want].FirstOffset {
			t.Fatalf("read at %d returned %v, want the batch at %d", o, hs, batches[want].FirstOffset)
		}
	}
}

func TestCompactionTombstonesExpireAfterDeleteRetention(t *testing.T) {
	cfg := compactConfig()
	cfg.DeleteRetentionMs = 1000
	cfg.MinCleanableDirtyRatio = 0
	clock := &testClock{testEpoch}
	l := openTestLog(t, t.TempDir(), cfg, clock)
	defer l.Close()
	c := testCleaner(t, l)
	ts := testEpoch.UnixMilli() - 10_000
	for _, codec := range []compress.Codec{compress.None, compress.Zstd} {
		mustAppend(t, l, keyedBatch(t, codec, ts, rec("a", "a1"), rec("b", "b1")))
	}
	mustAppend(t, l, keyedBatch(t, compress.LZ4, ts+5, tombstone("a"), rec("c", "c1")))
	roll(t, l)
	l.UpdateHighWatermark(l.LogEndOffset())
	// Offsets: a1 0, b1 1, a1 2, b1 3, a-tombstone 4, c1 5.

	cleaned0 := testEpoch
	if _, cleaned := cleanOnce(t, c, cleaned0); !cleaned {
		t.Fatal("not cleaned")
	}
	batches := readLog(t, l)
	got := allRecords(batches)
	if len(got) != 3 || got[0].offset != 3 || got[1].offset != 4 || got[1].value != nil || got[2].offset != 5 {
		t.Fatalf("after the first cleaning: %+v", got)
	}
	last := batches[len(batches)-1]
	if last.Attributes&recordbatch.AttrDeleteHorizon == 0 || last.FirstTimestamp != cleaned0.UnixMilli()+1000 {
		t.Fatalf("tombstone batch: attributes %#x, base timestamp %d; want the delete horizon %d",
			last.Attributes, last.FirstTimestamp, cleaned0.UnixMilli()+1000)
	}
	if got[1].timestamp != ts+5 || got[2].timestamp != ts+6 {
		t.Fatalf("record timestamps changed: %d %d", got[1].timestamp, got[2].timestamp)
	}

	// Dirty the log again, clean before the horizon: the tombstone stays.
	mustAppend(t, l, keyedBatch(t, compress.None, ts+10, rec("d", "d1"), rec("b", "b2")))
	roll(t, l)
	l.UpdateHighWatermark(l.LogEndOffset())
	if _, cleaned := cleanOnce(t, c, cleaned0.Add(999*time.Millisecond)); !cleaned {
		t.Fatal("not cleaned")
	}
	got = allRecords(readLog(t, l))
	if len(got) != 4 || got[0].offset != 4 || got[0].value != nil {
		t.Fatalf("before the horizon: %+v", got)
	}

	// After the horizon the next cleaning removes it.
	mustAppend(t, l, keyedBatch(t, compress.None, ts+20, rec("e", "e1"), rec("d", "d2")))
	roll(t, l)
	l.UpdateHighWatermark(l.LogEndOffset())
	if _, cleaned := cleanOnce(t, c, cleaned0.Add(1000*time.Millisecond)); !cleaned {
		t.Fatal("not cleaned")
	}
	got = allRecords(readLog(t, l))
	for _, r := range got {
		if string(r.key) == "a" {
			t.Fatalf("tombstone still present after delete.retention.ms: %+v", got)
		}
	}
	if len(got) != 4 { // c1, b2, e1, d2
		t.Fatalf("after the horizon: %+v", got)
	}
}

func TestCompactionRespectsMinCompactionLag(t *testing.T) {
	cfg := compactConfig()
	cfg.MinCompactionLagMs = 60_000
	cfg.MinCleanableDirtyRatio = 0
	l := openTestLog(t, t.TempDir(), cfg, nil)
	defer l.Close()
	c := testCleaner(t, l)
	now := testEpoch.UnixMilli()
	old := keyedLog(t, l, compress.None, 5, 4, 3, now-120_000)
	roll(t, l)
	firstYoung := l.LogEndOffset()
	young := keyedLog(t, l, compress.None, 5, 4, 3, now-30_000)
	roll(t, l)
	l.UpdateHighWatermark(l.LogEndOffset())

	res, cleaned := cleanOnce(t, c, testEpoch)
	if !cleaned || res.EndOffset != firstYoung {
		t.Fatalf("clean %+v; want it to stop at the young segment %d", res, firstYoung)
	}
	got := allRecords(readLog(t, l))
	checkCompacted(t, append(old, young...), got, firstYoung)
	for _, r := range young {
		if !containsOffset(got, r.offset) {
			t.Fatalf("record %d within min.compaction.lag.ms was removed", r.offset)
		}
	}

	// Once the lag has passed, the young segment is cleaned too.
	res, cleaned = cleanOnce(t, c, testEpoch.Add(31*time.Second))
	if !cleaned || res.EndOffset != l.LogEndOffset() {
		t.Fatalf("second clean %+v", res)
	}
	got = allRecords(readLog(t, l))
	checkCompacted(t, append(old, young...), got, res.EndOffset)
	if len(got) != 3 {
		t.Fatalf("%d records left, want one per key", len(got))
	}
}

func containsOffset(recs []loggedRecord, offset int64) bool {
	for _, r := range recs {
		if r.offset == offset {
			return true
		}
	}
	return false
}

func TestMaxCompactionLagForcesCleaningAndRolls(t *testing.T) {
	cfg := compactConfig()
	cfg.MinCleanableDirtyRatio = 1 // the ratio alone never qualifies
	clock := &testClock{testEpoch}
	l := openTestLog(t, t.TempDir(), cfg, clock)
	defer l.Close()
	c := testCleaner(t, l)
	keyedLog(t, l, compress.None, 10, 4, 3, testEpoch.UnixMilli())
	roll(t, l)
	l.UpdateHighWatermark(l.LogEndOffset())
	if _, cleaned := cleanOnce(t, c, testEpoch.Add(time.Hour)); cleaned {
		t.Fatal("cleaned below min.cleanable.dirty.ratio")
	}
	cfg.MaxCompactionLagMs = 60_000
	l.SetConfig(cfg)
	if _, cleaned := cleanOnce(t, c, testEpoch.Add(30*time.Second)); cleaned {
		t.Fatal("cleaned before max.compaction.lag.ms")
	}
	if res, cleaned := cleanOnce(t, c, testEpoch.Add(61*time.Second)); !cleaned || res.RecordsWritten != 3 {
		t.Fatalf("not cleaned after max.compaction.lag.ms: %+v", res)
	}

	// The active segment rolls once max.compaction.lag.ms has passed since
	// its first batch, even though segment.ms has not.
	active := l.active().baseOffset
	mustAppend(t, l, keyedBatch(t, compress.None, testEpoch.UnixMilli(), rec("x", "1")))
	mustAppend(t, l, keyedBatch(t, compress.None, testEpoch.UnixMilli()+60_001, rec("x", "2")))
	if l.active().baseOffset == active {
		t.Fatal("active segment did not roll at max.compaction.lag.ms")
	}
}

func TestCompactDeleteAppliesRetentionAndCompaction(t *testing.T) {
	cfg := compactConfig()
	cfg.Delete = true
	cfg.RetentionMs = 60_000
	l := openTestLog(t, t.TempDir(), cfg, nil)
	defer l.Close()
	c := testCleaner(t, l)
	now := testEpoch.UnixMilli()
	// Old records under keys of their own: compaction alone keeps them.
	keyedLog(t, l, compress.None, 10, 4, 3, now-120_000)
	roll(t, l)
	recentStart := l.LogEndOffset()
	var recent []loggedRecord
	for i := 0; i < 30; i++ {
		off := l.LogEndOffset()
		key, value := "recent-"+string(rune('a'+i%4)), "v"+string(rune('0'+i%10))
		mustAppend(t, l, keyedBatch(t, compress.Snappy, now-1000, rec(key, value)))
		recent = append(recent, loggedRecord{offset: off, timestamp: now - 1000, key: []byte(key), value: []byte(value)})
	}
	roll(t, l)
	l.UpdateHighWatermark(l.LogEndOffset())

	if n, err := l.DeleteOldSegments(testEpoch); err != nil || n == 0 || l.LogStartOffset() != recentStart {
		t.Fatalf("retention under compact,delete deleted %d (%v), log start %d, want %d", n, err, l.LogStartOffset(), recentStart)
	}
	if res, cleaned := cleanOnce(t, c, testEpoch); !cleaned || res.FirstDirtyOffset != recentStart || res.RecordsWritten != 4 {
		t.Fatalf("compaction under compact,delete: %+v", res)
	}
	got := allRecords(readLog(t, l))
	checkCompacted(t, recent, got, l.LogEndOffset())
	if len(got) != 4 {
		t.Fatalf("%d records left, want 4", len(got))
	}
}

func TestCompactedTopicRefusesRecordsWithoutKey(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "orders-3")
	l := openTestLog(t, dir, compactConfig(), &testClock{testEpoch})
	defer l.Close()
	_, err := l.AppendAsLeader(keyedBatch(t, compress.Gzip, testEpoch.UnixMilli(), rec("k", "v"), testRecord{value: []byte("v")}), 0)
	var ae *AppendError
	if !errors.As(err, &ae) || !errors.Is(err, kerr.InvalidRecord) || len(ae.RecordErrors) != 1 || ae.RecordErrors[0].BatchIndex != 1 ||
		ae.RecordErrors[0].Message != "Compacted topic cannot accept message without key in topic partition orders-3" {
		t.Fatalf("append without key: %#v", err)
	}
}

func TestCompactionPartialWhenOffsetMapFills(t *testing.T) {
	cfg := compactConfig()
	cfg.MinCleanableDirtyRatio = 0
	l := openTestLog(t, t.TempDir(), cfg, nil)
	defer l.Close()
	ccfg := DefaultCleanerConfig()
	ccfg.DedupeBufferSize = 40 * offsetMapEntrySize // 36 keys at the 0.9 load factor
	c, err := NewCleaner(ccfg, func() []*Log { return []*Log{l} }, Options{})
	if err != nil {
		t.Fatal(err)
	}
	orig := keyedLog(t, l, compress.LZ4, 40, 4, 100, testEpoch.UnixMilli())
	roll(t, l)
	l.UpdateHighWatermark(l.LogEndOffset())
	res, cleaned := cleanOnce(t, c, testEpoch)
	if !cleaned || res.EndOffset >= l.LogEndOffset() || res.EndOffset < 36 {
		t.Fatalf("first clean %+v; want it to stop part way", res)
	}
	checkCompacted(t, orig, allRecords(readLog(t, l)), res.EndOffset)
	for i := 0; i < 10 && res.EndOffset < l.LogEndOffset(); i++ {
		if res, cleaned = cleanOnce(t, c, testEpoch); !cleaned {
			t.Fatal("the rest was not cleaned")
		}
	}
	got := allRecords(readLog(t, l))
	checkCompacted(t, orig, got, l.LogEndOffset())
	if len(got) != len(latestByKey(orig)) {
		t.Fatalf("%d records left, want %d", len(got), len(latestByKey(orig)))
	}
}

func TestCompactionKeepsLastBatchOfActiveProducerEmpty(t *testing.T) {
	cfg := compactConfig()
	cfg.MinCleanableDirtyRatio = 0
	l := openTestLog(t, t.TempDir(), cfg, &testClock{testEpoch})
	defer l.Close()
	c := testCleaner(t, l)
	ts := testEpoch.UnixMilli()
	produce := func(pid int64, seq int32, recs ...testRecord) {
		spec := batchSpec{codec: compress.Zstd, baseTimestamp: ts, producerID: pid, baseSequence: seq}
		for i, r := range recs {
			r.offsetDelta, r.tsDelta = int32(i), int64(i)
			spec.records = append(spec.records, r)
		}
		mustAppend(t, l, buildBatch(t, spec, nil))
	}
	produce(5, 0, rec("a", "1"), rec("b", "1")) // offsets 0-1
	produce(5, 2, rec("a", "2"), rec("b", "2")) // 2-3: producer 5's last batch
	produce(9, 0, rec("a", "3"))                // 4
	produce(9, 1, rec("b", "3"), rec("z", "1")) // 5-6: producer 9's last batch
	mustAppend(t, l, keyedBatch(t, compress.None, ts, rec("z", "2"), rec("a", "4")))
	roll(t, l)
	l.UpdateHighWatermark(l.LogEndOffset())
	if _, cleaned := cleanOnce(t, c, testEpoch); !cleaned {
		t.Fatal("not cleaned")
	}
	batches := readLog(t, l)
	var summary []string
	for _, b := range batches {
		summary = append(summary, strings.Repeat("x", int(b.NumRecords)))
	}
	// Producer 5's first batch goes; its last stays as an empty header with
	// its offsets and sequence; producer 9's first batch goes.
	if len(batches) != 3 || batches[0].FirstOffset != 2 || batches[0].NumRecords != 0 || batches[0].LastOffsetDelta != 1 ||
		batches[0].ProducerID != 5 || batches[0].FirstSequence != 2 || batches[0].Attributes&recordbatch.AttrCompressionMask != 0 ||
		batches[0].FirstTimestamp != -1 || batches[0].MaxTimestamp != ts+1 {
		t.Fatalf("batches after cleaning %v: %+v", summary, batches[0].RecordBatch)
	}
	if batches[1].FirstOffset != 5 || batches[1].NumRecords != 1 || batches[1].LastOffsetDelta != 1 || batches[1].FirstSequence != 1 {
		t.Fatalf("producer 9's last batch: %+v", batches[1].RecordBatch)
	}

	// Once the producers expire, the empty batch goes at the next cleaning.
	mustAppend(t, l, keyedBatch(t, compress.None, ts, rec("y", "1")))
	roll(t, l)
	l.UpdateHighWatermark(l.LogEndOffset())
	if n := l.ExpireProducers(testEpoch.Add(25 * time.Hour)); n != 2 {
		t.Fatalf("%d producers expired, want 2", n)
	}
	if _, cleaned := cleanOnce(t, c, testEpoch.Add(25*time.Hour)); !cleaned {
		t.Fatal("not cleaned")
	}
	for _, b := range readLog(t, l) {
		if b.NumRecords == 0 && b.FirstOffset+int64(b.LastOffsetDelta)+1 != l.LogEndOffset() {
			t.Fatalf("empty batch at %d kept after its producer expired", b.FirstOffset)
		}
	}
}

func TestReadersOfReplacedSegmentsKeepWorking(t *testing.T) {
	cfg := compactConfig()
	cfg.FileDeleteDelayMs = 1000
	dir := t.TempDir()
	l := openTestLog(t, dir, cfg, nil)
	defer l.Close()
	keyedLog(t, l, compress.None, 30, 4, 5, testEpoch.UnixMilli())
	roll(t, l)
	l.UpdateHighWatermark(l.LogEndOffset())
	before, err := l.Read(0, math.MaxInt64, l.LogEndOffset(), true)
	if err != nil {
		t.Fatal(err)
	}
	want := readSlices(t, before)
	if _, cleaned := cleanOnce(t, testCleaner(t, l), testEpoch); !cleaned {
		t.Fatal("not cleaned")
	}
	if got := readSlices(t, before); !bytes.Equal(got, want) {
		t.Fatal("a read taken before the cleaning no longer reads the same bytes")
	}
	if _, err := os.Stat(segPath(dir, 0, logFileSuffix+deletedFileSuffix)); err != nil {
		t.Fatalf("replaced segment not renamed .deleted: %v", err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(segPath(dir, 0, logFileSuffix+deletedFileSuffix)); os.IsNotExist(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("replaced segment not removed after file.delete.delay.ms")
		}
	}
}

func TestCleanerThreadsCleanAndStop(t *testing.T) {
	var logs []*Log
	for i := 0; i < 3; i++ {
		l := openTestLog(t, t.TempDir(), compactConfig(), nil)
		defer l.Close()
		keyedLog(t, l, compress.Snappy, 20, 4, 5, testEpoch.UnixMilli())
		roll(t, l)
		l.UpdateHighWatermark(l.LogEndOffset())
		logs = append(logs, l)
	}
	plain := openTestLog(t, t.TempDir(), testConfig(), nil) // cleanup.policy=delete: never cleaned
	defer plain.Close()
	keyedLog(t, plain, compress.None, 20, 4, 5, testEpoch.UnixMilli())
	roll(t, plain)
	plain.UpdateHighWatermark(plain.LogEndOffset())

	cfg := DefaultCleanerConfig()
	cfg.Threads, cfg.BackoffMs, cfg.DedupeBufferSize = 2, 10, 1<<20
	c, err := NewCleaner(cfg, func() []*Log { return append(logs, plain) }, Options{})
	if err != nil {
		t.Fatal(err)
	}
	c.Start()
	deadline := time.Now().Add(10 * time.Second)
	for _, l := range logs {
		for l.cleanerCheckpoint.Load() != l.LogEndOffset() { // the active segment is empty
			if time.Now().After(deadline) {
				t.Fatalf("log %s not cleaned", l.Dir())
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	c.Close()
	if plain.cleanerCheckpoint.Load() != -1 {
		t.Fatal("a log without cleanup.policy=compact was cleaned")
	}
	for _, l := range logs {
		if n := len(allRecords(readLog(t, l))); n != 5 {
			t.Fatalf("%d records left, want 5", n)
		}
	}
}

func TestCleaningWhileAppendingAndReading(t *testing.T) {
	cfg := compactConfig()
	cfg.MinCleanableDirtyRatio = 0.2
	l := openTestLog(t, t.TempDir(), cfg, nil)
	defer l.Close()
	c := testCleaner(t, l)
	done := make(chan struct{})
	errs := make(chan error, 2)
	var orig []loggedRecord
	var cleanings atomic.Int32
	go func() { // producer and consumer
		defer close(done)
		for i := 0; i < 300; i++ {
			if i == 100 || i == 200 {
				// Paced by the cleaner, so that cleanings happen while
				// appending however the machine schedules the two
				// (bounded: the check below fails if they do not).
				want := int32(i / 100)
				for deadline := time.Now().Add(10 * time.Second); cleanings.Load() < want && time.Now().Before(deadline); {
					time.Sleep(time.Millisecond)
				}
			}
			var recs []testRecord
			for j := 0; j < 3; j++ {
				off := l.LogEndOffset() + int64(j)
				key := fmt.Sprintf("key-%03d", off*7%11)
				recs = append(recs, rec(key, fmt.Sprintf("%s@%d", key, off)))
				orig = append(orig, loggedRecord{offset: off, timestamp: testEpoch.UnixMilli() + int64(j),
					key: []byte(key), value: []byte(fmt.Sprintf("%s@%d", key, off))})
			}
			if _, err := l.AppendAsLeader(keyedBatch(t, compress.Zstd, testEpoch.UnixMilli(), recs...), 0); err != nil {
				errs <- err
				return
			}
			l.UpdateHighWatermark(l.LogEndOffset())
			res, err := l.Read(int64(i)%l.LogEndOffset(), 4096, l.LogEndOffset(), true)
			if err != nil || res.Size == 0 {
				errs <- fmt.Errorf("read during cleaning: %v (%d bytes)", err, res.Size)
				return
			}
		}
	}()
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
		}
		if _, cleaned := cleanOnce(t, c, testEpoch); cleaned {
			cleanings.Add(1)
		}
	}
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
	roll(t, l)
	l.UpdateHighWatermark(l.LogEndOffset())
	cleanOnce(t, c, testEpoch)
	got := allRecords(readLog(t, l))
	checkCompacted(t, orig, got, l.LogEndOffset())
	if n := cleanings.Load(); n < 2 || len(got) != 11 {
		t.Fatalf("%d cleanings while appending, %d records left; want several and 11", n, len(got))
	}
}

// hookFS calls onCreate when a file whose name ends in suffix is created.
type hookFS struct {
	OSFS
	suffix   string
	onCreate func()
}

func (f *hookFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	if flag&os.O_CREATE != 0 && strings.HasSuffix(name, f.suffix) && f.onCreate != nil {
		hook := f.onCreate
		f.onCreate = nil
		hook()
	}
	return f.OSFS.OpenFile(name, flag, perm)
}

func TestCloseAbortsCleaning(t *testing.T) {
	dir := t.TempDir()
	fsys := &hookFS{suffix: logFileSuffix + cleanedFileSuffix}
	l, err := Open(dir, compactConfig(), Options{FS: fsys})
	if err != nil {
		t.Fatal(err)
	}
	orig := keyedLog(t, l, compress.None, 30, 4, 5, testEpoch.UnixMilli())
	roll(t, l)
	l.UpdateHighWatermark(l.LogEndOffset())
	closed := make(chan error, 1)
	fsys.onCreate = func() {
		go func() { closed <- l.Close() }()
		for !l.cleanAbort.Load() {
			time.Sleep(time.Millisecond)
		}
	}
	res, cleaned, err := testCleaner(t, l).runOnce(testEpoch)
	if err != nil || !cleaned || res.SegmentsReplaced != 0 || res.EndOffset != res.FirstDirtyOffset {
		t.Fatalf("cleaning during Close: %+v, %v, %v; want it aborted", res, cleaned, err)
	}
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), cleanedFileSuffix) {
			t.Fatalf("%s left by the aborted cleaning", e.Name())
		}
	}
	l = openTestLog(t, dir, compactConfig(), nil)
	defer l.Close()
	if got := allRecords(readLog(t, l)); len(got) != len(orig) {
		t.Fatalf("%d records after an aborted cleaning, want %d", len(got), len(orig))
	}
}
