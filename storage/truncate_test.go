package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/strait/strait/internal/filetree"
	"github.com/strait/strait/storage/compress"
	"github.com/twmb/franz-go/pkg/kerr"
)

// warnRecorder is a slog handler remembering warnings and errors.
type warnRecorder struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warnRecorder) Enabled(_ context.Context, lvl slog.Level) bool { return lvl >= slog.LevelWarn }
func (w *warnRecorder) Handle(_ context.Context, r slog.Record) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, r.Message)
	return nil
}
func (w *warnRecorder) WithAttrs([]slog.Attr) slog.Handler { return w }
func (w *warnRecorder) WithGroup(string) slog.Handler      { return w }

// openQuietly opens a log and fails the test if opening it logged a
// warning (a recovery, a failed sanity check, a corrupt file...).
func openQuietly(t *testing.T, dir string, cfg LogConfig) *Log {
	t.Helper()
	w := &warnRecorder{}
	clock := producerClock()
	l, err := Open(dir, cfg, Options{Logger: slog.New(w), Now: clock.now})
	if err != nil {
		t.Fatal(err)
	}
	if len(w.msgs) > 0 {
		t.Fatalf("opening %s logged %q", filepath.Base(dir), w.msgs)
	}
	return l
}

// genBatch is the j-th client batch of a test log: every third one from
// idempotent producer 1 (2 records), the others plain batches of every
// codec; variant changes the plain batches' contents. Timestamps increase.
func genBatch(t *testing.T, j, variant int) []byte {
	ts := testEpoch.UnixMilli() + int64(j)*10
	if j%3 == 1 {
		return producerBatch(t, 1, 0, int32(j/3*2), 2, ts)
	}
	return simpleBatch(t, allCodecs[(j+variant)%len(allCodecs)], 1+(j+variant)%4, ts)
}

func genEpoch(j int) int32 { return int32(j / 20) }

// appendGen appends batches [from, to) of a variant, returning each
// batch's base offset.
func appendGen(t *testing.T, l *Log, from, to, variant int) []int64 {
	t.Helper()
	var bases []int64
	for j := from; j < to; j++ {
		info, err := l.AppendAsLeader(genBatch(t, j, variant), genEpoch(j))
		if err != nil {
			t.Fatalf("append %d: %v", j, err)
		}
		bases = append(bases, info.FirstOffset)
	}
	l.UpdateHighWatermark(l.LogEndOffset())
	return bases
}

// compareSegments compares two partition directories' files, ignoring
// producer snapshots (a truncation leaves one at the truncation point)
// and taking an empty file as an absent one (a truncated .txnindex).
func compareSegments(t *testing.T, wantDir, gotDir string) {
	t.Helper()
	load := func(dir string) map[string][]byte {
		m := filetree.Read(t, dir)
		for name, b := range m {
			if strings.HasSuffix(name, producerSnapshotSuffix) || len(b) == 0 {
				delete(m, name)
			}
		}
		return m
	}
	want, got := load(wantDir), load(gotDir)
	for name, b := range want {
		if g, ok := got[name]; !ok {
			t.Errorf("%s missing", name)
		} else if !bytes.Equal(g, b) {
			t.Errorf("%s differs (%d bytes, want %d)", name, len(g), len(b))
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("unexpected file %s", name)
		}
	}
}

// checkReads reads the log from every offset and compares with stored,
// the log's bytes from its start.
func checkReads(t *testing.T, l *Log, stored []byte) {
	t.Helper()
	hs := splitBatches(t, stored)
	leo := l.LogEndOffset()
	var pos int64
	for _, h := range hs {
		for o := h.BaseOffset; o <= h.LastOffset(); o++ {
			res, err := l.Read(o, math.MaxInt64, leo, false)
			if err != nil {
				t.Fatalf("read at %d: %v", o, err)
			}
			if got := readSlices(t, res); !bytes.Equal(got, stored[pos:]) {
				t.Fatalf("read at %d: %d bytes, want %d", o, len(got), len(stored)-int(pos))
			}
		}
		if o, ts, found, err := l.OffsetForTimestamp(h.BaseTimestamp); err != nil || !found || o != h.BaseOffset || ts != h.BaseTimestamp {
			t.Fatalf("offset for timestamp %d: %d %d %v %v, want %d", h.BaseTimestamp, o, ts, found, err, h.BaseOffset)
		}
		pos += h.Size()
	}
	if last := hs[len(hs)-1]; leo != last.NextOffset() {
		t.Fatalf("log end %d, want %d", leo, last.NextOffset())
	}
	if res, err := l.Read(leo, math.MaxInt64, leo, true); err != nil || len(res.Slices) != 0 {
		t.Fatalf("read at the log end: %+v %v", res, err)
	}
	if _, err := l.Read(leo+1, math.MaxInt64, leo, true); kerrCode(err) != kerr.OffsetOutOfRange.Code {
		t.Fatalf("read past the log end: %v", err)
	}
	if _, _, found, err := l.OffsetForTimestamp(hs[len(hs)-1].MaxTimestamp + 1); found || err != nil {
		t.Fatalf("offset for a timestamp after the log: %v %v", found, err)
	}
	wantO, wantTs := int64(-1), int64(-1)
	for _, h := range hs {
		if h.MaxTimestamp > wantTs {
			wantO, wantTs = h.LastOffset(), h.MaxTimestamp
		}
	}
	if o, ts := l.MaxTimestamp(); o != wantO || ts != wantTs {
		t.Fatalf("max timestamp %d at %d, want %d at %d", ts, o, wantTs, wantO)
	}
}

func allBytes(t *testing.T, l *Log) []byte {
	t.Helper()
	res, err := l.Read(l.LogStartOffset(), math.MaxInt64, l.LogEndOffset(), false)
	if err != nil {
		t.Fatal(err)
	}
	return readSlices(t, res)
}

// TestTruncateTo truncates a log of several segments at various points,
// appends different batches and compares everything, files included, with
// a log that had those batches from the start.
func TestTruncateTo(t *testing.T) {
	const n, extra = 60, 12
	cfg := replicationConfig()
	probe := openTestLog(t, t.TempDir(), cfg, producerClock())
	bases := appendGen(t, probe, 0, n, 0)
	segBases := segmentBases(probe)
	probe.Close()
	batchAt := func(base int64) int { return slices.Index(bases, base) }
	activeFirst := batchAt(segBases[len(segBases)-1])
	for _, tc := range []struct {
		name   string
		batch  int   // the first batch removed
		offset int64 // in it
	}{
		{"inside the active segment", n - 2, bases[n-2]},
		{"at the active segment's base", activeFirst, bases[activeFirst]},
		{"inside a sealed segment", batchAt(segBases[1]) + 2, bases[batchAt(segBases[1])+2]},
		{"at a sealed segment's base", batchAt(segBases[2]), bases[batchAt(segBases[2])]},
		{"inside the first segment", 3, bases[3]},
		{"inside a batch", 5, bases[5] + 1},
		{"to zero", 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, refDir := t.TempDir(), t.TempDir()
			l := openTestLog(t, dir, cfg, producerClock())
			appendGen(t, l, 0, n, 0)
			if len(l.segments) < 4 {
				t.Fatalf("%d segments, want several", len(l.segments))
			}
			ref := openTestLog(t, refDir, cfg, producerClock())
			appendGen(t, ref, 0, tc.batch, 0)
			want := bases[tc.batch]

			if err := l.TruncateTo(tc.offset); err != nil {
				t.Fatal(err)
			}
			if l.LogEndOffset() != want || l.HighWatermark() != want || ref.LogEndOffset() != want {
				t.Fatalf("after truncation log end %d, hw %d; want %d (reference %d)", l.LogEndOffset(), l.HighWatermark(), want, ref.LogEndOffset())
			}
			for _, off := range snapshotOffsets(t, dir) {
				if off > want {
					t.Fatalf("producer snapshot at %d left past the truncation point %d", off, want)
				}
			}
			ref.UpdateHighWatermark(ref.LogEndOffset())
			checkSameState(t, ref, l)
			if tc.batch > 0 {
				checkReads(t, l, allBytes(t, ref))
			}
			// As Kafka, a segment starting at the truncation point stays,
			// empty and active; the reference rolls it with its next append.
			if n, nref := len(l.segments), len(ref.segments); n != nref &&
				!(n == nref+1 && l.active().size == 0 && l.active().baseOffset == want) {
				t.Fatalf("%d segments after truncation (%v), reference has %d", n, segmentBases(l), nref)
			}

			// Appending again (producer 1's truncated sequences included).
			appendGen(t, l, tc.batch, n+extra, 1)
			appendGen(t, ref, tc.batch, n+extra, 1)
			checkSameState(t, ref, l)
			checkReads(t, l, allBytes(t, ref))
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			if err := ref.Close(); err != nil {
				t.Fatal(err)
			}
			compareSegments(t, refDir, dir)

			l = openQuietly(t, dir, cfg)
			defer l.Close()
			ref = openQuietly(t, refDir, cfg)
			defer ref.Close()
			checkSameState(t, ref, l)
			checkReads(t, l, allBytes(t, ref))
		})
	}
}

// TestTruncateToCrash: a crash right after a truncation recovers cleanly
// to the truncated log.
func TestTruncateToCrash(t *testing.T) {
	cfg := replicationConfig()
	dir := t.TempDir()
	l := openTestLog(t, dir, cfg, producerClock())
	bases := appendGen(t, l, 0, 50, 0)
	if err := l.flush(); err != nil {
		t.Fatal(err)
	}
	if err := l.TruncateTo(bases[17]); err != nil {
		t.Fatal(err)
	}
	stored := allBytes(t, l)
	producers := l.ActiveProducers()
	crash(l)
	l = openTestLog(t, dir, cfg, producerClock())
	defer l.Close()
	if l.LogEndOffset() != bases[17] {
		t.Fatalf("log end %d after the crash, want %d", l.LogEndOffset(), bases[17])
	}
	checkReads(t, l, stored)
	if got := l.ActiveProducers(); !slices.Equal(got, producers) {
		t.Fatalf("producers %+v, want %+v", got, producers)
	}
	appendGen(t, l, 17, 30, 1)
}

func TestTruncateToKeepsLeaderEpochsAndOffsets(t *testing.T) {
	cfg := replicationConfig()
	l := openTestLog(t, t.TempDir(), cfg, producerClock())
	defer l.Close()
	bases := appendGen(t, l, 0, 50, 0) // epochs 0, 1, 2 from batches 0, 20, 40
	checkEpochs(t, l.epochEntries(), ee(0, 0), ee(1, bases[20]), ee(2, bases[40]))
	if err := l.AssignEpochStartOffset(3, l.LogEndOffset()); err != nil {
		t.Fatal(err)
	}
	// At or past the log end: nothing is removed but the epoch that never
	// wrote (as Kafka, for a leader that lost its leadership at once).
	leo := l.LogEndOffset()
	if err := l.TruncateTo(leo + 10); err != nil {
		t.Fatal(err)
	}
	if l.LogEndOffset() != leo {
		t.Fatal("truncation past the end moved the log end")
	}
	checkEpochs(t, l.epochEntries(), ee(0, 0), ee(1, bases[20]), ee(2, bases[40]))
	// Into epoch 1: epoch 2 goes.
	l.UpdateHighWatermark(bases[45])
	if _, err := l.DeleteRecordsBefore(bases[3] + 1); err != nil {
		t.Fatal(err)
	}
	if err := l.TruncateTo(bases[30]); err != nil {
		t.Fatal(err)
	}
	checkEpochs(t, l.epochEntries(), ee(0, bases[3]+1), ee(1, bases[20]))
	if l.HighWatermark() != bases[30] || l.LogStartOffset() != bases[3]+1 {
		t.Fatalf("hw %d, log start %d", l.HighWatermark(), l.LogStartOffset())
	}
	if e, o := l.EndOffsetForEpoch(0); e != 0 || o != bases[20] {
		t.Fatalf("EndOffsetForEpoch(0) = (%d, %d)", e, o)
	}
	if e, o := l.EndOffsetForEpoch(1); e != 1 || o != bases[30] {
		t.Fatalf("EndOffsetForEpoch(1) = (%d, %d)", e, o)
	}
	// Below the log start offset (inside the first segment): the log start
	// comes down with it.
	if err := l.TruncateTo(bases[2]); err != nil {
		t.Fatal(err)
	}
	if l.LogStartOffset() != bases[2] || l.LogEndOffset() != bases[2] || l.HighWatermark() != bases[2] {
		t.Fatalf("log [%d, %d) hw %d, want all %d", l.LogStartOffset(), l.LogEndOffset(), l.HighWatermark(), bases[2])
	}
	checkEpochs(t, l.epochEntries())
	if err := l.TruncateTo(-1); kerrCode(err) != kerr.OffsetOutOfRange.Code {
		t.Fatalf("truncation to -1: %v", err)
	}
}

func TestTruncateToBelowFirstSegment(t *testing.T) {
	cfg := replicationConfig()
	dir := t.TempDir()
	l := openTestLog(t, dir, cfg, producerClock())
	bases := appendGen(t, l, 0, 40, 0)
	if _, err := l.DeleteRecordsBefore(bases[30]); err != nil {
		t.Fatal(err)
	}
	if _, err := l.DeleteOldSegments(testEpoch); err != nil {
		t.Fatal(err)
	}
	first := l.segments[0].baseOffset
	if first == 0 {
		t.Fatal("retention deleted nothing")
	}
	if err := l.TruncateTo(first - 1); err != nil {
		t.Fatal(err)
	}
	if l.LogStartOffset() != first-1 || l.LogEndOffset() != first-1 || len(l.segments) != 1 || l.segments[0].baseOffset != first-1 {
		t.Fatalf("log [%d, %d) in %d segments", l.LogStartOffset(), l.LogEndOffset(), len(l.segments))
	}
	l.Close()
	l = openQuietly(t, dir, cfg)
	defer l.Close()
	if l.LogStartOffset() != first-1 || l.LogEndOffset() != first-1 {
		t.Fatalf("reopened log [%d, %d)", l.LogStartOffset(), l.LogEndOffset())
	}
}

// TestTruncateTransactions: truncating away a marker reopens its
// transaction, truncating away its first batch forgets it.
func TestTruncateTransactions(t *testing.T) {
	cfg := replicationConfig()
	dir := t.TempDir()
	l := openTestLog(t, dir, cfg, producerClock())
	defer func() { l.Close() }()
	hwUp := func() { l.UpdateHighWatermark(l.LogEndOffset()) }
	appendGen(t, l, 0, 15, 0)
	start := leaderTxn(t, l, 2, 0, 3, 0)
	appendGen(t, l, 15, 25, 0)
	leaderTxn(t, l, 2, 3, 2, 1)
	marker := l.LogEndOffset()
	leaderMarker(t, l, 2, false, 1)
	appendGen(t, l, 25, 30, 0)
	hwUp()
	aborted, err := l.AbortedTransactions(0, l.LogEndOffset())
	if err != nil || len(aborted) != 1 || aborted[0].FirstOffset != start.FirstOffset || aborted[0].LastOffset != marker {
		t.Fatalf("aborted %+v %v", aborted, err)
	}
	if l.LastStableOffset() != l.LogEndOffset() {
		t.Fatalf("LSO %d, log end %d", l.LastStableOffset(), l.LogEndOffset())
	}

	if err := l.TruncateTo(marker); err != nil {
		t.Fatal(err)
	}
	hwUp()
	if got, _ := l.AbortedTransactions(0, l.LogEndOffset()); len(got) != 0 {
		t.Fatalf("aborted after the marker was truncated: %+v", got)
	}
	if !l.hasOngoingTransaction(2) || l.LastStableOffset() != start.FirstOffset {
		t.Fatalf("transaction not open again: LSO %d", l.LastStableOffset())
	}
	// It can be aborted again, and that survives a restart.
	leaderMarker(t, l, 2, false, 1)
	hwUp()
	if got, _ := l.AbortedTransactions(0, l.LogEndOffset()); !slices.Equal(got, aborted) {
		t.Fatalf("aborted %+v, want %+v", got, aborted)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openQuietly(t, dir, cfg)
	if got, _ := l.AbortedTransactions(0, l.LogEndOffset()); !slices.Equal(got, aborted) {
		t.Fatalf("aborted after reopening %+v, want %+v", got, aborted)
	}

	if err := l.TruncateTo(start.FirstOffset); err != nil {
		t.Fatal(err)
	}
	hwUp()
	if l.hasOngoingTransaction(2) || l.LastStableOffset() != l.LogEndOffset() {
		t.Fatalf("transaction still open after its start was truncated: LSO %d, log end %d", l.LastStableOffset(), l.LogEndOffset())
	}
	if got, _ := l.AbortedTransactions(0, l.LogEndOffset()); len(got) != 0 {
		t.Fatalf("aborted %+v", got)
	}
	crash(l)
	l = openTestLog(t, dir, cfg, producerClock())
	if l.hasOngoingTransaction(2) || l.LogEndOffset() != start.FirstOffset {
		t.Fatalf("after a crash: open %v, log end %d", l.hasOngoingTransaction(2), l.LogEndOffset())
	}
}

func TestTruncateFullyAndStartAt(t *testing.T) {
	cfg := replicationConfig()
	dir := t.TempDir()
	l := openTestLog(t, dir, cfg, producerClock())
	appendGen(t, l, 0, 40, 0)
	leaderTxn(t, l, 2, 0, 3, 2)
	l.UpdateHighWatermark(l.LogEndOffset())
	old := slices.Clone(l.segments)
	if err := l.TruncateFullyAndStartAt(1000); err != nil {
		t.Fatal(err)
	}
	if l.LogStartOffset() != 1000 || l.LogEndOffset() != 1000 || l.HighWatermark() != 1000 || l.LastStableOffset() != 1000 {
		t.Fatalf("log [%d, %d) hw %d lso %d, want all 1000", l.LogStartOffset(), l.LogEndOffset(), l.HighWatermark(), l.LastStableOffset())
	}
	if len(l.segments) != 1 || l.segments[0].baseOffset != 1000 || slices.Contains(old, l.segments[0]) {
		t.Fatalf("segments %v", segmentBases(l))
	}
	checkEpochs(t, l.epochEntries())
	if len(l.ActiveProducers()) != 0 || l.hasOngoingTransaction(2) {
		t.Fatalf("producers left: %+v", l.ActiveProducers())
	}
	if offs := snapshotOffsets(t, dir); len(offs) > 1 || (len(offs) == 1 && offs[0] != 1000) {
		t.Fatalf("snapshots %v", offs)
	}
	if _, err := l.Read(0, 100, 2000, true); kerrCode(err) != kerr.OffsetOutOfRange.Code {
		t.Fatalf("read below the new start: %v", err)
	}
	if r, err := l.Read(1000, 100, 2000, true); err != nil || len(r.Slices) != 0 {
		t.Fatalf("read at the new start: %+v %v", r, err)
	}
	info := mustAppend(t, l, simpleBatch(t, compress.None, 3, testEpoch.UnixMilli()))
	if info.FirstOffset != 1000 {
		t.Fatalf("append at %d, want 1000", info.FirstOffset)
	}
	// Producer 1 is unknown now: any sequence goes.
	if _, err := l.AppendAsLeader(producerBatch(t, 1, 0, 77, 1, testEpoch.UnixMilli()), 7); err != nil {
		t.Fatal(err)
	}
	l.UpdateHighWatermark(l.LogEndOffset())
	checkEpochs(t, l.epochEntries(), ee(7, 1000))
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openQuietly(t, dir, cfg)
	defer l.Close()
	if l.LogStartOffset() != 1000 || l.LogEndOffset() != 1004 || l.HighWatermark() != 1004 {
		t.Fatalf("reopened log [%d, %d) hw %d", l.LogStartOffset(), l.LogEndOffset(), l.HighWatermark())
	}
	// And back below the old offsets.
	if err := l.TruncateFullyAndStartAt(3); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, simpleBatch(t, compress.None, 3, testEpoch.UnixMilli()))
	if l.LogStartOffset() != 3 || l.LogEndOffset() != 6 {
		t.Fatalf("log [%d, %d)", l.LogStartOffset(), l.LogEndOffset())
	}
	if err := l.TruncateFullyAndStartAt(-1); kerrCode(err) != kerr.OffsetOutOfRange.Code {
		t.Fatalf("start at -1: %v", err)
	}
}

// TestTruncateConcurrentWithReads: reads, truncations and appends at once
// (run with -race): reads see a consistent log or OFFSET_OUT_OF_RANGE.
func TestTruncateConcurrentWithReads(t *testing.T) {
	cfg := replicationConfig()
	cfg.FileDeleteDelayMs = 20
	l := openTestLog(t, t.TempDir(), cfg, producerClock())
	defer l.Close()
	appendGen(t, l, 0, 60, 0)
	var stop atomic.Bool
	var wg sync.WaitGroup
	var reads atomic.Int64
	errs := make(chan error, 8)
	for r := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(r), 1))
			buf := make([]byte, 64<<10)
			for !stop.Load() {
				leo := l.LogEndOffset()
				off := rng.Int64N(leo + 2)
				res, err := l.Read(off, int64(rng.IntN(8000)), leo, true)
				if err != nil {
					if !errors.Is(err, kerr.OffsetOutOfRange) {
						errs <- fmt.Errorf("read at %d: %w", off, err)
						return
					}
					continue
				}
				for _, s := range res.Slices {
					n := min(s.Len, int64(len(buf)))
					_, _ = s.File.ReadAt(buf[:n], s.Pos) // may be short: truncated meanwhile
				}
				if _, err := l.AbortedTransactions(off, leo); err != nil {
					errs <- err
					return
				}
				if _, _, _, err := l.OffsetForTimestamp(testEpoch.UnixMilli() + rng.Int64N(600)); err != nil {
					errs <- err
					return
				}
				l.EndOffsetForEpoch(int32(rng.IntN(4)))
				l.MaxTimestamp()
				reads.Add(1)
			}
		}()
	}
	rng := rand.New(rand.NewPCG(7, 7))
	for range 40 {
		keep := 1 + rng.IntN(59)
		// Truncate at a batch boundary found by reading.
		res, err := l.Read(0, math.MaxInt64, l.LogEndOffset(), false)
		if err != nil {
			t.Fatal(err)
		}
		hs := splitBatches(t, readSlices(t, res))
		if keep >= len(hs) {
			keep = len(hs) - 1
		}
		if err := l.TruncateTo(hs[keep].BaseOffset); err != nil {
			t.Fatal(err)
		}
		appendGen(t, l, keep, 60, rng.IntN(3))
	}
	stop.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if reads.Load() == 0 {
		t.Fatal("no reads")
	}
}

// TestTruncateWhileCleaning: truncations abort a cleaning in progress and
// keep the cleaner away until done; the log stays consistent.
func TestTruncateWhileCleaning(t *testing.T) {
	cfg := compactConfig()
	dir := t.TempDir()
	l := openTestLog(t, dir, cfg, producerClock())
	keyedLog(t, l, compress.None, 120, 5, 30, testEpoch.UnixMilli())
	l.UpdateHighWatermark(l.LogEndOffset())
	c := testCleaner(t, l)
	var stop atomic.Bool
	done := make(chan error, 1)
	go func() {
		for !stop.Load() {
			if _, _, err := c.runOnce(testEpoch); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	for i := range 15 {
		target := max(l.LogEndOffset()-int64(10+(i%5)*60), 1)
		if err := l.TruncateTo(target); err != nil {
			t.Fatal(err)
		}
		keyedLog(t, l, compress.None, 4, 5, 30, testEpoch.UnixMilli())
		l.UpdateHighWatermark(l.LogEndOffset())
	}
	stop.Store(true)
	if err := <-done; err != nil {
		t.Fatalf("cleaner: %v", err)
	}
	if l.uncleanable.Load() {
		t.Fatal("log marked uncleanable")
	}
	readLog(t, l) // CRCs and increasing offsets
	leo := l.LogEndOffset()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openQuietly(t, dir, cfg)
	defer l.Close()
	if l.LogEndOffset() != leo {
		t.Fatalf("reopened at %d, want %d", l.LogEndOffset(), leo)
	}
	readLog(t, l)
}
