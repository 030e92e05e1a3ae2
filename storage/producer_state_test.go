package storage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/strait/strait/recordbatch"
)

// producerBatch builds an idempotent producer's batch of n records with
// sequences seq.., timestamps ts...
func producerBatch(t testing.TB, pid int64, epoch int16, seq int32, n int, ts int64) []byte {
	t.Helper()
	spec := batchSpec{producerID: pid, baseSequence: seq, baseTimestamp: ts}
	for i := 0; i < n; i++ {
		spec.records = append(spec.records, testRecord{
			key: []byte("k"), value: []byte(fmt.Sprintf("p%d-e%d-s%d-%d", pid, epoch, seq, i)),
			tsDelta: int64(i), offsetDelta: int32(i),
		})
	}
	b := buildBatch(t, spec, nil)
	binary.BigEndian.PutUint16(b[recordbatch.PosProducerEpoch:], uint16(epoch))
	recordbatch.Batch(b).SetCRC()
	return b
}

// producerClock is a clock at testEpoch: producer timestamps near it are
// neither rejected nor expired.
func producerClock() *testClock { return &testClock{t: testEpoch} }

func appendCode(t *testing.T, l *Log, batch []byte) (AppendInfo, int16) {
	t.Helper()
	info, err := l.AppendAsLeader(batch, 7)
	if err != nil && kerrCode(err) == 0 {
		t.Fatalf("append: %v", err)
	}
	return info, kerrCode(err)
}

func expectCode(t *testing.T, l *Log, batch []byte, want *kerr.Error) {
	t.Helper()
	leo := l.LogEndOffset()
	_, code := appendCode(t, l, batch)
	if code != want.Code {
		t.Fatalf("append: code %d, want %s", code, want.Message)
	}
	if l.LogEndOffset() != leo {
		t.Fatalf("a rejected batch moved the log end offset from %d to %d", leo, l.LogEndOffset())
	}
}

func expectDuplicate(t *testing.T, l *Log, batch []byte, orig AppendInfo) {
	t.Helper()
	leo := l.LogEndOffset()
	info, code := appendCode(t, l, batch)
	if code != 0 {
		t.Fatalf("duplicate: error code %d", code)
	}
	h := parseBatchHeader(batch)
	if info.FirstOffset != orig.FirstOffset || info.LastOffset != orig.LastOffset || info.LogAppendTime != h.MaxTimestamp {
		t.Fatalf("duplicate answered %+v, want offsets [%d, %d] and log append time %d", info, orig.FirstOffset, orig.LastOffset, h.MaxTimestamp)
	}
	if l.LogEndOffset() != leo {
		t.Fatalf("a duplicate moved the log end offset from %d to %d", leo, l.LogEndOffset())
	}
}

// countBatches returns how many batches of producer pid the log holds.
func countBatches(t *testing.T, l *Log, pid int64) (n int, seqs []int32) {
	t.Helper()
	res, err := l.Read(l.LogStartOffset(), math.MaxInt64, l.LogEndOffset(), false)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range splitBatches(t, readSlices(t, res)) {
		if h.ProducerID == pid {
			n++
			seqs = append(seqs, h.BaseSequence)
		}
	}
	return n, seqs
}

func TestProducerDuplicateOfEachOfLastFive(t *testing.T) {
	l := openTestLog(t, t.TempDir(), testConfig(), producerClock())
	defer l.Close()
	ts := testEpoch.UnixMilli()
	var infos []AppendInfo
	for i := 0; i < 6; i++ {
		infos = append(infos, mustAppend(t, l, producerBatch(t, 1, 0, int32(2*i), 2, ts+int64(i))))
		mustAppend(t, l, producerBatch(t, 2, 0, int32(i), 1, ts)) // another producer in between
		mustAppend(t, l, simpleBatch(t, 0, 1, ts))                // and a non-idempotent one
	}
	for i := 1; i < 6; i++ {
		expectDuplicate(t, l, producerBatch(t, 1, 0, int32(2*i), 2, ts+int64(i)), infos[i])
	}
	// The sixth batch from the end is no longer remembered: a retry of it is
	// out of sequence, as in Kafka.
	expectCode(t, l, producerBatch(t, 1, 0, 0, 2, ts), kerr.OutOfOrderSequenceNumber)
	// A batch overlapping a retained one without matching its range is no duplicate.
	expectCode(t, l, producerBatch(t, 1, 0, 10, 1, ts), kerr.OutOfOrderSequenceNumber)
	mustAppend(t, l, producerBatch(t, 1, 0, 12, 2, ts))
	if n, seqs := countBatches(t, l, 1); n != 7 || !slices.Equal(seqs, []int32{0, 2, 4, 6, 8, 10, 12}) {
		t.Fatalf("producer 1 has %d batches in the log with sequences %v", n, seqs)
	}
}

func TestProducerSequenceGap(t *testing.T) {
	l := openTestLog(t, t.TempDir(), testConfig(), producerClock())
	defer l.Close()
	ts := testEpoch.UnixMilli()
	mustAppend(t, l, producerBatch(t, 7, 0, 0, 3, ts))
	_, err := l.AppendAsLeader(producerBatch(t, 7, 0, 4, 1, ts), 7)
	var ae *AppendError
	if !errors.As(err, &ae) || ae.Err != kerr.OutOfOrderSequenceNumber ||
		!strings.Contains(ae.Message, "Out of order sequence number for producer 7 at offset 3 in partition ") ||
		!strings.Contains(ae.Message, ": 4 (incoming seq. number), 2 (current end sequence number)") {
		t.Fatalf("gap: %v", err)
	}
	expectCode(t, l, producerBatch(t, 7, 0, 2, 1, ts), kerr.OutOfOrderSequenceNumber) // overlaps the last
	info := mustAppend(t, l, producerBatch(t, 7, 0, 3, 2, ts))
	if info.FirstOffset != 3 || info.LastOffset != 4 {
		t.Fatalf("in-sequence batch at [%d, %d], want [3, 4]", info.FirstOffset, info.LastOffset)
	}
}

func TestProducerEpochs(t *testing.T) {
	l := openTestLog(t, t.TempDir(), testConfig(), producerClock())
	defer l.Close()
	ts := testEpoch.UnixMilli()
	mustAppend(t, l, producerBatch(t, 3, 4, 0, 2, ts))
	mustAppend(t, l, producerBatch(t, 3, 4, 2, 2, ts))
	// A new epoch must start at 0.
	_, err := l.AppendAsLeader(producerBatch(t, 3, 5, 4, 1, ts), 7)
	var ae *AppendError
	if !errors.As(err, &ae) || ae.Err != kerr.OutOfOrderSequenceNumber ||
		!strings.Contains(ae.Message, "Invalid sequence number for new epoch of producer 3") {
		t.Fatalf("new epoch at sequence 4: %v", err)
	}
	bumped := mustAppend(t, l, producerBatch(t, 3, 5, 0, 1, ts))
	// The old epoch is fenced, retries of its batches included.
	_, err = l.AppendAsLeader(producerBatch(t, 3, 4, 4, 1, ts), 7)
	if !errors.As(err, &ae) || ae.Err != kerr.InvalidProducerEpoch ||
		!strings.Contains(ae.Message, "which is smaller than the last seen epoch 5") {
		t.Fatalf("old epoch: %v", err)
	}
	expectCode(t, l, producerBatch(t, 3, 4, 2, 2, ts), kerr.InvalidProducerEpoch)
	expectDuplicate(t, l, producerBatch(t, 3, 5, 0, 1, ts), bumped)
	mustAppend(t, l, producerBatch(t, 3, 5, 1, 1, ts))
	// A producer the partition does not know may start at any sequence.
	mustAppend(t, l, producerBatch(t, 9, 2, 1000, 2, ts))
	mustAppend(t, l, producerBatch(t, 9, 2, 1002, 1, ts))
	expectCode(t, l, producerBatch(t, 9, 2, 1000, 1, ts), kerr.OutOfOrderSequenceNumber)
}

func TestProducerSequenceWraparound(t *testing.T) {
	l := openTestLog(t, t.TempDir(), testConfig(), producerClock())
	defer l.Close()
	ts := testEpoch.UnixMilli()
	// Records MaxInt32-1, MaxInt32, 0: the batch's last sequence is 0.
	wrapped := mustAppend(t, l, producerBatch(t, 1, 0, math.MaxInt32-1, 3, ts))
	expectDuplicate(t, l, producerBatch(t, 1, 0, math.MaxInt32-1, 3, ts), wrapped)
	expectCode(t, l, producerBatch(t, 1, 0, 0, 1, ts), kerr.OutOfOrderSequenceNumber)
	mustAppend(t, l, producerBatch(t, 1, 0, 1, 1, ts))

	// A batch ending exactly at MaxInt32 is followed by 0.
	mustAppend(t, l, producerBatch(t, 2, 0, math.MaxInt32-1, 2, ts))
	mustAppend(t, l, producerBatch(t, 2, 0, 0, 1, ts))

	if got := incrementSequence(math.MaxInt32, 1); got != 0 {
		t.Fatalf("incrementSequence(MaxInt32, 1) = %d", got)
	}
	if got := decrementSequence(1, 3); got != math.MaxInt32-1 {
		t.Fatalf("decrementSequence(1, 3) = %d", got)
	}
}

func TestProducerExpiry(t *testing.T) {
	dir := t.TempDir()
	clock := producerClock()
	cfg := testConfig()
	if got := cfg.producerIDExpirationMs(); got != 86400000 {
		t.Fatalf("default producer.id.expiration.ms %d", got)
	}
	cfg.ProducerIDExpirationMs = 60000
	l := openTestLog(t, dir, cfg, clock)
	ts := testEpoch.UnixMilli()
	mustAppend(t, l, producerBatch(t, 1, 0, 0, 1, ts))
	mustAppend(t, l, producerBatch(t, 2, 0, 0, 1, ts+30000))
	if n := l.ExpireProducers(testEpoch.Add(59999 * time.Millisecond)); n != 0 {
		t.Fatalf("expired %d producers before their time", n)
	}
	if n := l.ExpireProducers(testEpoch.Add(60000 * time.Millisecond)); n != 1 {
		t.Fatalf("expired %d producers, want 1", n)
	}
	// Producer 1 is unknown now: any sequence goes; producer 2 is still checked.
	mustAppend(t, l, producerBatch(t, 1, 0, 50, 1, ts+60000))
	expectCode(t, l, producerBatch(t, 2, 0, 5, 1, ts), kerr.OutOfOrderSequenceNumber)

	// Loading a snapshot drops the producers expired meanwhile.
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	clock.t = testEpoch.Add(95 * time.Second) // producer 2 expired, producer 1 not
	l = openTestLog(t, dir, cfg, clock)
	defer l.Close()
	mustAppend(t, l, producerBatch(t, 2, 0, 5, 1, ts+95000))
	expectCode(t, l, producerBatch(t, 1, 0, 70, 1, ts+95000), kerr.OutOfOrderSequenceNumber)
	mustAppend(t, l, producerBatch(t, 1, 0, 51, 1, ts+95000))
}

func TestProducerSnapshotFormat(t *testing.T) {
	producers := map[int64]*producerStateEntry{
		0x0102030405060708: {producerID: 0x0102030405060708, epoch: 5, coordinatorEpoch: -1, lastTimestamp: 1234,
			currentTxnFirstOffset: -1, batches: []batchMetadata{
				{lastSeq: 4, lastOffset: 90, offsetDelta: 4, timestamp: 1200},
				{lastSeq: 9, lastOffset: 100, offsetDelta: 4, timestamp: 1234},
			}},
		3: {producerID: 3, epoch: 0, coordinatorEpoch: 2, lastTimestamp: 77, currentTxnFirstOffset: 50}, // no batch
	}
	got := encodeProducerSnapshot(producers)
	// Kafka's ProducerSnapshot v1, laid out by hand: entries by producer id.
	be := binary.BigEndian
	want := []byte{0, 1, 0, 0, 0, 0, 0, 0, 0, 2}
	want = be.AppendUint64(want, 3)
	want = be.AppendUint16(want, 0)
	want = be.AppendUint32(want, math.MaxUint32) // lastSequence -1
	want = be.AppendUint64(want, math.MaxUint64) // lastOffset -1
	want = be.AppendUint32(want, 0)              // offsetDelta
	want = be.AppendUint64(want, 77)
	want = be.AppendUint32(want, 2)
	want = be.AppendUint64(want, 50)
	want = be.AppendUint64(want, 0x0102030405060708)
	want = be.AppendUint16(want, 5)
	want = be.AppendUint32(want, 9)
	want = be.AppendUint64(want, 100)
	want = be.AppendUint32(want, 4)
	want = be.AppendUint64(want, 1234)
	want = be.AppendUint32(want, math.MaxUint32)
	want = be.AppendUint64(want, math.MaxUint64)
	be.PutUint32(want[2:], crc32.Checksum(want[6:], crc32.MakeTable(crc32.Castagnoli)))
	if !bytes.Equal(got, want) {
		t.Fatalf("snapshot bytes\n%x\nwant\n%x", got, want)
	}

	entries, err := decodeProducerSnapshot(got)
	if err != nil || len(entries) != 2 {
		t.Fatalf("decode: %d entries, %v", len(entries), err)
	}
	e := entries[1]
	if e.producerID != 0x0102030405060708 || e.epoch != 5 || e.lastSeq() != 9 || e.lastDataOffset() != 100 ||
		e.lastOffsetDelta() != 4 || e.lastTimestamp != 1234 || len(e.batches) != 1 || e.batches[0].firstSeq() != 5 {
		t.Fatalf("decoded %+v", e)
	}
	if e := entries[0]; e.producerID != 3 || !e.isEmpty() || e.coordinatorEpoch != 2 || e.currentTxnFirstOffset != 50 {
		t.Fatalf("decoded %+v", e)
	}

	for name, bad := range map[string][]byte{
		"crc":       append(append([]byte{}, got[:len(got)-1]...), got[len(got)-1]^1),
		"truncated": got[:len(got)-3],
		"version":   append([]byte{0, 2}, got[2:]...),
		"short":     got[:5],
	} {
		if _, err := decodeProducerSnapshot(bad); !errors.Is(err, errCorruptSnapshot) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// snapshotOffsets lists the .snapshot files of dir.
func snapshotOffsets(t *testing.T, dir string) []int64 {
	t.Helper()
	offs, err := listProducerSnapshots(OSFS{}, dir)
	if err != nil {
		t.Fatal(err)
	}
	return offs
}

func segmentBases(l *Log) []int64 {
	var out []int64
	for _, s := range l.segments {
		out = append(out, s.baseOffset)
	}
	return out
}

// produceSegments appends batches of two producers until the log has at
// least segs segments; it returns each producer's append infos and next
// sequence.
func produceSegments(t *testing.T, l *Log, segs int) (infos map[int64][]AppendInfo, next map[int64]int32) {
	t.Helper()
	infos, next = map[int64][]AppendInfo{}, map[int64]int32{}
	ts := testEpoch.UnixMilli()
	for i := 0; len(l.segments) < segs || i < 12; i++ {
		for _, pid := range []int64{1, 2} {
			n := 1 + i%3
			infos[pid] = append(infos[pid], mustAppend(t, l, producerBatch(t, pid, 0, next[pid], n, ts+int64(i))))
			next[pid] += int32(n)
		}
	}
	return infos, next
}

// checkProducersContinue asserts that the log still knows both producers
// of produceSegments: the last `dups` batches of each are duplicates with
// their original offsets, a gap is out of order, and the next sequence is
// accepted.
func checkProducersContinue(t *testing.T, l *Log, infos map[int64][]AppendInfo, next map[int64]int32, dups int) {
	t.Helper()
	ts := testEpoch.UnixMilli()
	for _, pid := range []int64{1, 2} {
		in := infos[pid]
		seq := next[pid]
		for k := len(in) - 1; k >= len(in)-dups; k-- {
			n := int(in[k].LastOffset - in[k].FirstOffset + 1)
			seq -= int32(n)
			expectDuplicate(t, l, producerBatch(t, pid, 0, seq, n, ts+int64(k)), in[k])
		}
		expectCode(t, l, producerBatch(t, pid, 0, next[pid]+1, 1, ts), kerr.OutOfOrderSequenceNumber)
		mustAppend(t, l, producerBatch(t, pid, 0, next[pid], 1, ts))
	}
}

func TestProducerSnapshotsAtRollAndClose(t *testing.T) {
	dir := t.TempDir()
	l := openTestLog(t, dir, recoveryConfig(), producerClock())
	infos, next := produceSegments(t, l, 4)
	bases := segmentBases(l)
	if got := snapshotOffsets(t, dir); !slices.Equal(got, bases[1:]) {
		t.Fatalf("snapshots at %v, want one at each rolled segment's base %v", got, bases[1:])
	}
	leo := l.LogEndOffset()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if got := snapshotOffsets(t, dir); !slices.Equal(got, append(bases[1:], leo)) {
		t.Fatalf("after close snapshots at %v, want %v and the log end %d", got, bases[1:], leo)
	}
	// The close snapshot holds each producer's last batch.
	entries, err := readProducerSnapshot(OSFS{}, producerSnapshotPath(dir, leo))
	if err != nil || len(entries) != 2 {
		t.Fatalf("close snapshot: %d entries, %v", len(entries), err)
	}
	for _, e := range entries {
		last := infos[e.producerID][len(infos[e.producerID])-1]
		if e.lastSeq() != next[e.producerID]-1 || e.lastDataOffset() != last.LastOffset {
			t.Fatalf("snapshot entry %+v, want last sequence %d at offset %d", e, next[e.producerID]-1, last.LastOffset)
		}
	}

	// A stray snapshot (at no segment's base, not the newest) goes at open.
	stray := producerSnapshotPath(dir, bases[1]+1)
	if err := os.WriteFile(stray, encodeProducerSnapshot(nil), 0o644); err != nil {
		t.Fatal(err)
	}
	l = openTestLog(t, dir, recoveryConfig(), producerClock())
	defer l.Close()
	if _, err := os.Stat(stray); !os.IsNotExist(err) {
		t.Fatalf("stray snapshot still there: %v", err)
	}
	// From the snapshot only the last batch is known, as in Kafka.
	checkProducersContinue(t, l, infos, next, 1)
}

func TestProducerSnapshotsDeletedWithTheirSegments(t *testing.T) {
	dir := t.TempDir()
	l := openTestLog(t, dir, recoveryConfig(), producerClock())
	defer l.Close()
	produceSegments(t, l, 5)
	bases := segmentBases(l)
	l.UpdateHighWatermark(l.LogEndOffset())
	if _, err := l.DeleteRecordsBefore(bases[3]); err != nil {
		t.Fatal(err)
	}
	if n, err := l.DeleteOldSegments(testEpoch); err != nil || n != 3 {
		t.Fatalf("deleted %d segments, %v", n, err)
	}
	if got := snapshotOffsets(t, dir); !slices.Equal(got, bases[3:]) {
		t.Fatalf("snapshots at %v after deleting the first three segments, want %v", got, bases[3:])
	}
}

func TestProducerStateRebuiltAfterCrashWithoutSnapshots(t *testing.T) {
	dir := t.TempDir()
	l := openTestLog(t, dir, recoveryConfig(), producerClock())
	infos, next := produceSegments(t, l, 3)
	crash(l)
	for _, off := range snapshotOffsets(t, dir) {
		if err := os.Remove(producerSnapshotPath(dir, off)); err != nil {
			t.Fatal(err)
		}
	}
	l = openTestLog(t, dir, recoveryConfig(), producerClock())
	defer l.Close()
	// Replaying the whole log restores the last 5 batches of each producer.
	checkProducersContinue(t, l, infos, next, numBatchesToRetain)
	// Recovery left snapshots at the last segments' bases and the end.
	if got := snapshotOffsets(t, dir); len(got) == 0 || got[len(got)-1] != l.LogEndOffset()-2 {
		t.Fatalf("snapshots after recovery at %v", got)
	}
}

func TestProducerStateRebuiltAfterCrashFromRollSnapshot(t *testing.T) {
	dir := t.TempDir()
	l := openTestLog(t, dir, recoveryConfig(), producerClock())
	infos, next := produceSegments(t, l, 3)
	crash(l)
	l = openTestLog(t, dir, recoveryConfig(), producerClock())
	defer l.Close()
	checkProducersContinue(t, l, infos, next, 1)
}

func TestProducerStateAfterTornTail(t *testing.T) {
	dir := t.TempDir()
	l := openTestLog(t, dir, recoveryConfig(), producerClock())
	ts := testEpoch.UnixMilli()
	mustAppend(t, l, producerBatch(t, 1, 0, 0, 2, ts))
	last := mustAppend(t, l, producerBatch(t, 1, 0, 2, 2, ts))
	crash(l)
	logFile := segPath(dir, 0, logFileSuffix)
	if err := os.Truncate(logFile, fileSize(t, logFile)-5); err != nil {
		t.Fatal(err)
	}
	l = openTestLog(t, dir, recoveryConfig(), producerClock())
	defer l.Close()
	if l.LogEndOffset() != last.FirstOffset {
		t.Fatalf("log end offset %d after the torn tail, want %d", l.LogEndOffset(), last.FirstOffset)
	}
	// The lost batch's retry is appended again, neither a duplicate nor out of order.
	info := mustAppend(t, l, producerBatch(t, 1, 0, 2, 2, ts))
	if info.FirstOffset != last.FirstOffset {
		t.Fatalf("retry appended at %d, want %d", info.FirstOffset, last.FirstOffset)
	}
}

func TestProducerCorruptSnapshotFallsBack(t *testing.T) {
	dir := t.TempDir()
	l := openTestLog(t, dir, recoveryConfig(), producerClock())
	infos, next := produceSegments(t, l, 3)
	leo := l.LogEndOffset()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	flipByte(t, producerSnapshotPath(dir, leo), 20)
	l = openTestLog(t, dir, recoveryConfig(), producerClock())
	defer l.Close()
	checkProducersContinue(t, l, infos, next, 1)
}

// TestProducerCleanShutdownWithoutSnapshots: a log closed cleanly before it
// had any snapshot (written by a broker without producer state) is not
// scanned, as Kafka's upgrade path: its producers are unknown and may go on
// at any sequence, and empty snapshots save the question next time.
func TestProducerCleanShutdownWithoutSnapshots(t *testing.T) {
	dir := t.TempDir()
	l := openTestLog(t, dir, recoveryConfig(), producerClock())
	_, next := produceSegments(t, l, 3)
	bases := segmentBases(l)
	leo := l.LogEndOffset()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	for _, off := range snapshotOffsets(t, dir) {
		if err := os.Remove(filepath.Join(dir, segmentName(off, producerSnapshotSuffix))); err != nil {
			t.Fatal(err)
		}
	}
	l = openTestLog(t, dir, recoveryConfig(), producerClock())
	defer l.Close()
	want := []int64{bases[len(bases)-2], bases[len(bases)-1], leo}
	if got := snapshotOffsets(t, dir); !slices.Equal(got, want) {
		t.Fatalf("snapshots %v, want %v", got, want)
	}
	mustAppend(t, l, producerBatch(t, 1, 0, next[1]+100, 1, testEpoch.UnixMilli()))
}
