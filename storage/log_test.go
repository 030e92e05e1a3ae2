package storage

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/strait/strait/recordbatch"
	"github.com/strait/strait/storage/compress"
	"github.com/twmb/franz-go/pkg/kerr"
)

var allCodecs = []compress.Codec{compress.None, compress.Gzip, compress.Snappy, compress.LZ4, compress.Zstd}

// appendBatches appends batches of 1..5 records and returns the appended
// bytes (as stored) per batch.
func appendBatches(t *testing.T, l *Log, codec compress.Codec, n int, baseTs int64) [][]byte {
	t.Helper()
	var stored [][]byte
	for i := 0; i < n; i++ {
		b := simpleBatch(t, codec, 1+i%5, baseTs+int64(i)*10)
		info := mustAppend(t, l, b)
		if info.RecordCount != int64(1+i%5) || info.LastOffset-info.FirstOffset+1 != info.RecordCount {
			t.Fatalf("append info %+v", info)
		}
		stored = append(stored, b) // b was updated in place
	}
	return stored
}

func TestAppendReadRoundTripEveryCodec(t *testing.T) {
	for _, codec := range allCodecs {
		t.Run(codec.String(), func(t *testing.T) {
			l := openTestLog(t, t.TempDir(), testConfig(), nil)
			defer l.Close()
			stored := appendBatches(t, l, codec, 20, testEpoch.UnixMilli())
			leo := l.LogEndOffset()
			if leo != 60 { // 20 batches of 1,2,3,4,5 records
				t.Fatalf("LEO %d, want 60", leo)
			}
			// Read from every offset: the first batch returned contains it and
			// everything up to the end comes back byte for byte.
			var offsets []int64
			var starts []int
			off := int64(0)
			for i, b := range stored {
				h := parseBatchHeader(b)
				if h.BaseOffset != off || h.LeaderEpoch != 7 {
					t.Fatalf("batch %d stored with base %d epoch %d, want %d 7", i, h.BaseOffset, h.LeaderEpoch, off)
				}
				for o := h.BaseOffset; o <= h.LastOffset(); o++ {
					offsets = append(offsets, o)
					starts = append(starts, i)
				}
				off = h.NextOffset()
			}
			for k, o := range offsets {
				res, err := l.Read(o, math.MaxInt32, leo, false)
				if err != nil {
					t.Fatalf("read %d: %v", o, err)
				}
				got := readSlices(t, res)
				want := bytes.Join(stored[starts[k]:], nil)
				if !bytes.Equal(got, want) {
					t.Fatalf("read at %d: %d bytes, want %d", o, len(got), len(want))
				}
			}
			res, err := l.Read(leo, 1<<20, leo, true)
			if err != nil || len(res.Slices) != 0 || res.LogEndOffset != leo {
				t.Fatalf("read at LEO: %+v %v", res, err)
			}
		})
	}
}

func TestReadLimits(t *testing.T) {
	l := openTestLog(t, t.TempDir(), testConfig(), nil)
	defer l.Close()
	stored := appendBatches(t, l, compress.None, 10, testEpoch.UnixMilli())
	size0 := int64(len(stored[0]))
	size01 := size0 + int64(len(stored[1]))

	// maxBytes below the first batch: nothing, unless minOneBatch.
	res, _ := l.Read(0, size0-1, 100, false)
	if res.Size != 0 {
		t.Fatalf("maxBytes < batch without minOneBatch returned %d bytes", res.Size)
	}
	res, _ = l.Read(0, 1, 100, true)
	if res.Size != size0 {
		t.Fatalf("minOneBatch returned %d bytes, want %d", res.Size, size0)
	}
	// maxBytes between two batch boundaries: whole batches only.
	res, _ = l.Read(0, size01+5, 100, false)
	if res.Size != size01 {
		t.Fatalf("read %d bytes, want %d", res.Size, size01)
	}
	// upTo (high watermark) stops before batches starting at or after it,
	// and keeps a batch it falls inside.
	hs := splitBatches(t, bytes.Join(stored, nil))
	res, _ = l.Read(0, 1<<20, hs[3].BaseOffset, false)
	if got := splitBatches(t, readSlices(t, res)); len(got) != 3 {
		t.Fatalf("upTo at a batch start: %d batches, want 3", len(got))
	}
	res, _ = l.Read(0, 1<<20, hs[3].BaseOffset+1, false)
	if got := splitBatches(t, readSlices(t, res)); len(got) != 4 {
		t.Fatalf("upTo inside a batch: %d batches, want 4", len(got))
	}
	res, err := l.Read(hs[3].BaseOffset, 1<<20, hs[3].BaseOffset, true)
	if err != nil || res.Size != 0 {
		t.Fatalf("offset == upTo: %d bytes, %v", res.Size, err)
	}
	// Out of range.
	if _, err := l.Read(l.LogEndOffset()+1, 100, 1000, true); kerrCode(err) != kerr.OffsetOutOfRange.Code {
		t.Fatalf("read past LEO: %v", err)
	}
	if _, err := l.Read(-1, 100, 1000, true); kerrCode(err) != kerr.OffsetOutOfRange.Code {
		t.Fatalf("read below log start: %v", err)
	}
}

// TestReadOfNothingTakesNoLock: a read with nothing to return (at the read
// bound, or no room left) answers with the offsets without the log's lock,
// so a fetch visiting thousands of caught-up partitions never waits behind
// a writer holding one of them; out-of-range offsets are still refused.
func TestReadOfNothingTakesNoLock(t *testing.T) {
	l := openTestLog(t, t.TempDir(), testConfig(), nil)
	appendBatches(t, l, compress.None, 3, testEpoch.UnixMilli())
	leo := l.LogEndOffset()
	l.UpdateHighWatermark(leo)
	type read struct {
		offset, max, upTo int64
		minOne            bool
		wantErr           int16
	}
	reads := []read{
		{offset: leo, max: 1 << 20, upTo: leo, minOne: true}, // caught up
		{offset: 1, max: 1 << 20, upTo: 1, minOne: true},     // at the read bound
		{offset: 0, max: 0, upTo: leo, minOne: false},        // no room left
		{offset: leo + 1, max: 0, upTo: leo + 1, minOne: false, wantErr: kerr.OffsetOutOfRange.Code},
		{offset: -1, max: 0, upTo: leo, minOne: false, wantErr: kerr.OffsetOutOfRange.Code},
	}
	l.mu.Lock() // a writer holding the log, as a roll or a truncation does
	done := make(chan error, len(reads))
	go func() {
		for _, r := range reads {
			res, err := l.ReadWithinFileBound(r.offset, r.max, r.upTo, r.minOne)
			switch {
			case kerrCode(err) != r.wantErr:
				done <- fmt.Errorf("read at %d: error %v, want code %d", r.offset, err, r.wantErr)
			case err == nil && (res.Size != 0 || res.HighWatermark != leo || res.LogEndOffset != leo || res.LogStartOffset != 0):
				done <- fmt.Errorf("read at %d: %d bytes, offsets %d/%d/%d, want none and 0/%d/%d",
					r.offset, res.Size, res.LogStartOffset, res.HighWatermark, res.LogEndOffset, leo, leo)
			default:
				done <- nil
			}
		}
	}()
	timeout := time.After(10 * time.Second)
	for range reads {
		select {
		case err := <-done:
			if err != nil {
				t.Error(err)
			}
		case <-timeout:
			l.mu.Unlock()
			t.Fatal("a read of nothing waited for the log's lock")
		}
	}
	l.mu.Unlock()
	// With room and records past the offset, the read takes the lock and
	// returns them.
	if res, err := l.ReadWithinFileBound(0, 1<<20, leo, true); err != nil || res.Size == 0 {
		t.Fatalf("read from 0: %d bytes, %v", res.Size, err)
	} else {
		res.Release()
	}
	// A closed log (deleted, or its directory failed) is an error to
	// every read, a read of nothing included, as under the lock.
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.ReadWithinFileBound(leo, 1<<20, leo, true); err == nil {
		t.Fatal("a read of nothing from a closed log succeeded")
	}
}

func TestRollAndIndexLookupsAcrossSegments(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytes = 4096
	cfg.IndexIntervalBytes = 300
	dir := t.TempDir()
	l := openTestLog(t, dir, cfg, nil)
	stored := appendBatches(t, l, compress.None, 300, testEpoch.UnixMilli())
	if len(l.segments) < 5 {
		t.Fatalf("%d segments, expected rolling", len(l.segments))
	}
	for _, s := range l.segments[:len(l.segments)-1] {
		if s.size > cfg.SegmentBytes {
			t.Fatalf("segment %d has %d bytes > segment.bytes", s.baseOffset, s.size)
		}
		if s.offsetIndex.n == 0 {
			t.Fatalf("segment %d has no index entries", s.baseOffset)
		}
		// sealed indexes are trimmed to their entries
		if got := fileSize(t, segPath(dir, s.baseOffset, indexFileSuffix)); got != int64(s.offsetIndex.n*8) {
			t.Fatalf("sealed index of %d is %d bytes, want %d", s.baseOffset, got, s.offsetIndex.n*8)
		}
	}
	if got := fileSize(t, segPath(dir, l.active().baseOffset, indexFileSuffix)); got != int64(cfg.SegmentIndexBytes/8*8) {
		t.Fatalf("active index is %d bytes, want preallocated %d", got, cfg.SegmentIndexBytes)
	}
	all := bytes.Join(stored, nil)
	hs := splitBatches(t, all)
	leo := l.LogEndOffset()
	for _, h := range hs {
		for o := h.BaseOffset; o <= h.LastOffset(); o++ {
			res, err := l.Read(o, 1, leo, true)
			if err != nil {
				t.Fatal(err)
			}
			got := splitBatches(t, readSlices(t, res))
			if len(got) != 1 || got[0].BaseOffset != h.BaseOffset {
				t.Fatalf("read %d: got %+v, want batch %d", o, got, h.BaseOffset)
			}
		}
	}
	// A large read crosses segments (one slice each) and returns everything.
	res, err := l.Read(0, math.MaxInt64, leo, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Slices) != len(l.segments) || !bytes.Equal(readSlices(t, res), all) {
		t.Fatalf("cross-segment read: %d slices for %d segments", len(res.Slices), len(l.segments))
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestRollWhenIndexFull(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentIndexBytes = 24 // 3 offset entries, 2 time entries
	cfg.IndexIntervalBytes = 1
	l := openTestLog(t, t.TempDir(), cfg, nil)
	defer l.Close()
	appendBatches(t, l, compress.None, 20, testEpoch.UnixMilli())
	if len(l.segments) < 4 {
		t.Fatalf("%d segments: full indexes did not roll", len(l.segments))
	}
	for _, s := range l.segments {
		if s.offsetIndex.n > 3 || s.timeIndex.n > 2 {
			t.Fatalf("index overfilled: %d %d", s.offsetIndex.n, s.timeIndex.n)
		}
	}
}

func TestRollOnSegmentMs(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentMs = 1000
	clock := &testClock{testEpoch}
	l := openTestLog(t, t.TempDir(), cfg, clock)
	defer l.Close()
	ts := testEpoch.UnixMilli()
	mustAppend(t, l, simpleBatch(t, compress.None, 1, ts))
	mustAppend(t, l, simpleBatch(t, compress.None, 1, ts+1000)) // exactly segment.ms: no roll
	if len(l.segments) != 1 {
		t.Fatalf("rolled early: %d segments", len(l.segments))
	}
	mustAppend(t, l, simpleBatch(t, compress.None, 1, ts+1001))
	if len(l.segments) != 2 || l.active().baseOffset != 2 {
		t.Fatalf("no time roll: %d segments", len(l.segments))
	}
	// Without record timestamps, the wall clock since creation counts.
	noTs := func() []byte {
		m := int64(-1)
		return buildBatch(t, batchSpec{baseTimestamp: -1, maxTimestamp: &m, records: []testRecord{{value: []byte("x")}}}, nil)
	}
	clock.t = testEpoch.Add(5000 * 1e6)
	cfg2 := cfg
	l.SetConfig(cfg2)
	l.mu.Lock()
	_, err := l.rollLocked(clock.t)
	l.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, noTs())
	clock.t = clock.t.Add(1001 * 1e6)
	mustAppend(t, l, noTs())
	if len(l.segments) != 4 {
		t.Fatalf("no wall-clock roll: %d segments", len(l.segments))
	}
}

func TestLogAppendTime(t *testing.T) {
	for _, codec := range []compress.Codec{compress.None, compress.Zstd} {
		cfg := testConfig()
		cfg.TimestampType = LogAppendTime
		clock := &testClock{testEpoch}
		l := openTestLog(t, t.TempDir(), cfg, clock)
		b := simpleBatch(t, codec, 3, 5) // old create times are fine under LogAppendTime
		info := mustAppend(t, l, b)
		if info.LogAppendTime != testEpoch.UnixMilli() {
			t.Fatalf("LogAppendTime %d", info.LogAppendTime)
		}
		res, _ := l.Read(0, 1<<20, 100, true)
		h := splitBatches(t, readSlices(t, res))[0] // checks the recomputed CRC
		if h.timestampType() != LogAppendTime || h.MaxTimestamp != testEpoch.UnixMilli() {
			t.Fatalf("%s: stored attrs %x max ts %d", codec, h.Attributes, h.MaxTimestamp)
		}
		if o, ts := l.MaxTimestamp(); o != 0 || ts != testEpoch.UnixMilli() {
			t.Fatalf("%s: MaxTimestamp %d %d", codec, o, ts)
		}
		if o, ts, ok, err := l.OffsetForTimestamp(testEpoch.UnixMilli()); !ok || err != nil || o != 0 || ts != testEpoch.UnixMilli() {
			t.Fatalf("%s: OffsetForTimestamp %d %d %v %v", codec, o, ts, ok, err)
		}
		// A producer may not set the LogAppendTime bit itself.
		bad := buildBatch(t, batchSpec{attrs: recordbatch.AttrTimestampType, baseTimestamp: 5, records: []testRecord{{value: []byte("x")}}}, nil)
		if _, err := l.AppendAsLeader(bad, 0); kerrCode(err) != kerr.InvalidTimestamp.Code {
			t.Fatalf("producer-set LogAppendTime: %v", err)
		}
		l.Close()
	}
}

func TestCreateTimeMaxTimestampRewritten(t *testing.T) {
	l := openTestLog(t, t.TempDir(), testConfig(), nil)
	defer l.Close()
	wrong := int64(1)
	ts := testEpoch.UnixMilli()
	b := buildBatch(t, batchSpec{baseTimestamp: ts, maxTimestamp: &wrong, records: []testRecord{
		{value: []byte("a"), tsDelta: 5}, {value: []byte("b"), tsDelta: 9, offsetDelta: 1}, {value: []byte("c"), tsDelta: 2, offsetDelta: 2},
	}}, nil)
	mustAppend(t, l, b)
	res, _ := l.Read(0, 1<<20, 100, true)
	h := splitBatches(t, readSlices(t, res))[0]
	if h.MaxTimestamp != ts+9 {
		t.Fatalf("max timestamp %d, want %d", h.MaxTimestamp, ts+9)
	}
	if o, got := l.MaxTimestamp(); o != 1 || got != ts+9 {
		t.Fatalf("MaxTimestamp %d %d, want 1 %d", o, got, ts+9)
	}
}

func TestOffsetForTimestampRecordLevel(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytes = 2048
	cfg.IndexIntervalBytes = 200
	for _, codec := range []compress.Codec{compress.None, compress.LZ4} {
		l := openTestLog(t, t.TempDir(), cfg, nil)
		base := testEpoch.UnixMilli()
		// batch i has records with timestamps base+10i .. base+10i+n-1
		appendBatches(t, l, codec, 200, base)
		if len(l.segments) < 3 {
			t.Fatalf("expected several segments")
		}
		off := int64(0)
		for i := 0; i < 200; i++ {
			n := int64(1 + i%5)
			for j := int64(0); j < n; j++ {
				o, ts, ok, err := l.OffsetForTimestamp(base + int64(i)*10 + j)
				if err != nil || !ok || o != off+j || ts != base+int64(i)*10+j {
					t.Fatalf("%s: ts %d -> %d %d %v %v, want offset %d", codec, base+int64(i)*10+j, o, ts, ok, err, off+j)
				}
			}
			// a timestamp in the gap after the batch finds the next batch's first record
			if i < 199 {
				o, _, ok, _ := l.OffsetForTimestamp(base + int64(i)*10 + n)
				if !ok || o != off+n {
					t.Fatalf("gap timestamp -> %d %v, want %d", o, ok, off+n)
				}
			}
			off += n
		}
		if _, _, ok, _ := l.OffsetForTimestamp(base + 10000); ok {
			t.Fatal("timestamp after every record found something")
		}
		o, ts, ok, _ := l.OffsetForTimestamp(0)
		if !ok || o != 0 || ts != base {
			t.Fatalf("timestamp 0 -> %d %d %v", o, ts, ok)
		}
		if o, ts := l.MaxTimestamp(); o != l.LogEndOffset()-1 || ts != base+1990+4 {
			t.Fatalf("MaxTimestamp %d %d", o, ts)
		}
		l.Close()
	}
}

func TestEmptyLog(t *testing.T) {
	l := openTestLog(t, t.TempDir(), testConfig(), nil)
	defer l.Close()
	if l.LogEndOffset() != 0 || l.LogStartOffset() != 0 || l.HighWatermark() != 0 {
		t.Fatal("fresh log offsets not zero")
	}
	if o, ts := l.MaxTimestamp(); o != -1 || ts != -1 {
		t.Fatalf("MaxTimestamp of empty log %d %d", o, ts)
	}
	if _, _, ok, err := l.OffsetForTimestamp(0); ok || err != nil {
		t.Fatal("OffsetForTimestamp on empty log found something")
	}
	res, err := l.Read(0, 100, 0, true)
	if err != nil || res.Size != 0 {
		t.Fatalf("read empty: %v", err)
	}
}

func TestHighWatermarkClamped(t *testing.T) {
	l := openTestLog(t, t.TempDir(), testConfig(), nil)
	defer l.Close()
	appendBatches(t, l, compress.None, 3, 0)
	l.UpdateHighWatermark(2)
	if l.HighWatermark() != 2 {
		t.Fatal("HW not set")
	}
	l.UpdateHighWatermark(100)
	if l.HighWatermark() != l.LogEndOffset() {
		t.Fatal("HW not clamped to LEO")
	}
	res, _ := l.Read(0, 1<<20, 1, true)
	if hs := splitBatches(t, readSlices(t, res)); len(hs) != 1 {
		t.Fatalf("read below HW returned %d batches", len(hs))
	}
}

func TestReopenAfterClose(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig()
	cfg.SegmentBytes = 3000
	cfg.IndexIntervalBytes = 250
	l := openTestLog(t, dir, cfg, nil)
	stored := appendBatches(t, l, compress.Snappy, 120, testEpoch.UnixMilli())
	leo := l.LogEndOffset()
	l.UpdateHighWatermark(leo) // checkpointed by Close
	maxO, maxTs := l.MaxTimestamp()
	nseg := len(l.segments)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, cleanShutdownFile)); err != nil {
		t.Fatalf("no clean shutdown marker: %v", err)
	}
	if _, err := l.AppendAsLeader(simpleBatch(t, compress.None, 1, 0), 0); kerrCode(err) != kerr.KafkaStorageError.Code {
		t.Fatalf("append after close: %v", err)
	}
	activeIndex := fileSize(t, segPath(dir, l.active().baseOffset, indexFileSuffix))
	if activeIndex%8 != 0 || activeIndex >= int64(cfg.SegmentIndexBytes) {
		t.Fatalf("active index not trimmed on close: %d bytes", activeIndex)
	}

	l2 := openTestLog(t, dir, cfg, nil)
	defer l2.Close()
	if _, err := os.Stat(filepath.Join(dir, cleanShutdownFile)); !os.IsNotExist(err) {
		t.Fatal("clean shutdown marker left after open")
	}
	if l2.LogEndOffset() != leo || len(l2.segments) != nseg || l2.HighWatermark() != leo {
		t.Fatalf("reopened LEO %d (%d segments), want %d (%d)", l2.LogEndOffset(), len(l2.segments), leo, nseg)
	}
	if o, ts := l2.MaxTimestamp(); o != maxO || ts != maxTs {
		t.Fatalf("MaxTimestamp after reopen %d %d, want %d %d", o, ts, maxO, maxTs)
	}
	res, err := l2.Read(0, math.MaxInt64, leo, false)
	if err != nil || !bytes.Equal(readSlices(t, res), bytes.Join(stored, nil)) {
		t.Fatalf("data differs after reopen: %v", err)
	}
	info := mustAppend(t, l2, simpleBatch(t, compress.None, 2, testEpoch.UnixMilli()))
	if info.FirstOffset != leo {
		t.Fatalf("append after reopen at %d, want %d", info.FirstOffset, leo)
	}
}

func TestFlushPolicy(t *testing.T) {
	cfg := testConfig()
	cfg.FlushMessages = 3
	dir := t.TempDir()
	clock := &testClock{testEpoch}
	l := openTestLog(t, dir, cfg, clock)
	defer l.Close()
	mustAppend(t, l, simpleBatch(t, compress.None, 2, 0))
	if l.unflushedMessages != 2 {
		t.Fatalf("unflushed %d", l.unflushedMessages)
	}
	mustAppend(t, l, simpleBatch(t, compress.None, 1, 0))
	if l.unflushedMessages != 0 {
		t.Fatalf("flush.messages not honoured: unflushed %d", l.unflushedMessages)
	}

	cfg.FlushMessages = math.MaxInt64
	cfg.FlushMs = 1000
	l.SetConfig(cfg)
	mustAppend(t, l, simpleBatch(t, compress.None, 1, 0))
	if err := l.MaybeFlush(clock.t.Add(999e6)); err != nil || l.unflushedMessages != 1 {
		t.Fatalf("flushed before flush.ms: %v %d", err, l.unflushedMessages)
	}
	if err := l.MaybeFlush(clock.t.Add(1000e6)); err != nil || l.unflushedMessages != 0 {
		t.Fatalf("not flushed after flush.ms: %v %d", err, l.unflushedMessages)
	}
	if rp, ok, _ := readCheckpoint(OSFS{}, dir, recoveryPointFile); !ok || rp != l.LogEndOffset() {
		t.Fatalf("recovery point checkpoint %d %v, want %d", rp, ok, l.LogEndOffset())
	}
}

func TestDelete(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "topic-0")
	l := openTestLog(t, dir, testConfig(), nil)
	appendBatches(t, l, compress.None, 3, 0)
	if err := l.Delete(); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(parent)
	if len(entries) != 0 {
		t.Fatalf("left after delete: %v", entries)
	}
	if _, err := l.Read(0, 10, 10, true); kerrCode(err) != kerr.KafkaStorageError.Code {
		t.Fatalf("read after delete: %v", err)
	}
}

func TestConcurrentAppendAndRead(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytes = 8192
	l := openTestLog(t, t.TempDir(), cfg, nil)
	defer l.Close()
	done := make(chan error)
	go func() {
		for i := 0; i < 300; i++ {
			if _, err := l.AppendAsLeader(simpleBatch(t, compress.None, 2, 0), 1); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	for reading := true; reading; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			reading = false
		default:
			leo := l.LogEndOffset()
			res, err := l.Read(0, math.MaxInt64, leo, true)
			if err != nil {
				t.Fatal(err)
			}
			hs := splitBatches(t, readSlices(t, res))
			if leo > 0 && hs[len(hs)-1].NextOffset() != leo {
				t.Fatalf("read up to %d, LEO was %d", hs[len(hs)-1].NextOffset(), leo)
			}
		}
	}
	if l.LogEndOffset() != 600 {
		t.Fatalf("LEO %d", l.LogEndOffset())
	}
}
