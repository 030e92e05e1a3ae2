package storage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/strait/strait/internal/filetree"
	"github.com/strait/strait/recordbatch"
	"github.com/strait/strait/storage/compress"
	"github.com/twmb/franz-go/pkg/kerr"
)

func replicationConfig() LogConfig {
	cfg := testConfig()
	cfg.SegmentBytes = 1500
	cfg.IndexIntervalBytes = 200
	return cfg
}

// leaderAppend appends a batch as leader at epoch, failing the test on error.
func leaderAppend(t *testing.T, l *Log, batch []byte, epoch int32) AppendInfo {
	t.Helper()
	info, err := l.AppendAsLeader(batch, epoch)
	if err != nil {
		t.Fatalf("append at epoch %d: %v", epoch, err)
	}
	return info
}

func leaderTxn(t *testing.T, l *Log, pid int64, seq int32, n int, epoch int32) AppendInfo {
	t.Helper()
	g := l.StartTxnVerification(pid, 0, seq, false)
	info, err := l.AppendAsLeaderVerified(txnBatch(t, pid, 0, seq, n, testEpoch.UnixMilli()+int64(seq)), epoch, g)
	if err != nil {
		t.Fatalf("transactional append: %v", err)
	}
	return info
}

func leaderMarker(t *testing.T, l *Log, pid int64, commit bool, epoch int32) {
	t.Helper()
	if _, err := l.AppendMarker(TxnMarker{ProducerID: pid, ProducerEpoch: 0, Commit: commit, CoordinatorEpoch: 3}, epoch); err != nil {
		t.Fatalf("marker: %v", err)
	}
}

// buildReplicatedLeader fills a leader log over three leader epochs with
// plain batches of every codec, an idempotent producer (1), an aborted (2)
// and a committed (3) transaction and one left open (4). It returns the
// last batch producer 1 appended, and its append info.
func buildReplicatedLeader(t *testing.T, l *Log) ([]byte, AppendInfo) {
	t.Helper()
	ts := testEpoch.UnixMilli()
	if err := l.AssignEpochStartOffset(1, l.LogEndOffset()); err != nil {
		t.Fatal(err)
	}
	seq := int32(0)
	var last []byte
	var lastInfo AppendInfo
	idem := func(n int, epoch int32) {
		last = producerBatch(t, 1, 0, seq, n, ts+int64(seq))
		lastInfo = leaderAppend(t, l, slices.Clone(last), epoch)
		seq += int32(n)
	}
	for i, codec := range allCodecs {
		leaderAppend(t, l, simpleBatch(t, codec, 1+i%4, ts+int64(i)), 1)
		idem(2, 1)
	}
	// Epoch 2 was elected but never wrote; epoch 3 did.
	if err := l.AssignEpochStartOffset(2, l.LogEndOffset()); err != nil {
		t.Fatal(err)
	}
	if err := l.AssignEpochStartOffset(3, l.LogEndOffset()); err != nil {
		t.Fatal(err)
	}
	leaderTxn(t, l, 2, 0, 3, 3)
	leaderTxn(t, l, 3, 0, 2, 3)
	idem(3, 3)
	leaderTxn(t, l, 2, 3, 2, 3)
	leaderMarker(t, l, 2, false, 3)
	for i := range 6 {
		leaderAppend(t, l, simpleBatch(t, compress.LZ4, 4, ts+100+int64(i)), 3)
	}
	leaderMarker(t, l, 3, true, 3)
	if err := l.AssignEpochStartOffset(4, l.LogEndOffset()); err != nil {
		t.Fatal(err)
	}
	leaderTxn(t, l, 4, 0, 2, 4)
	for range 8 {
		idem(2, 4)
		leaderAppend(t, l, simpleBatch(t, compress.Zstd, 5, ts+200), 4)
	}
	l.UpdateHighWatermark(l.LogEndOffset())
	return last, lastInfo
}

// replicate copies the leader's batches from the follower's log end on, in
// chunks of at most maxBytes as Fetch would return them.
func replicate(t *testing.T, leader, follower *Log, maxBytes int64) int {
	t.Helper()
	fetches := 0
	for follower.LogEndOffset() < leader.LogEndOffset() {
		res, err := leader.Read(follower.LogEndOffset(), maxBytes, leader.LogEndOffset(), true)
		if err != nil {
			t.Fatal(err)
		}
		records := readSlices(t, res)
		hs := splitBatches(t, records)
		info, err := follower.AppendAsFollower(records)
		if err != nil {
			t.Fatalf("follower append at %d: %v", follower.LogEndOffset(), err)
		}
		if info.FirstOffset != hs[0].BaseOffset || info.LastOffset != hs[len(hs)-1].LastOffset() {
			t.Fatalf("append info %+v for batches [%d, %d]", info, hs[0].BaseOffset, hs[len(hs)-1].LastOffset())
		}
		var count int64
		for _, h := range hs {
			count += int64(h.RecordCount)
		}
		if info.RecordCount != count {
			t.Fatalf("append info counts %d records, want %d", info.RecordCount, count)
		}
		fetches++
	}
	follower.UpdateHighWatermark(leader.HighWatermark())
	return fetches
}

func compareDirs(t *testing.T, wantDir, gotDir string) {
	t.Helper()
	want, got := filetree.Read(t, wantDir), filetree.Read(t, gotDir)
	for name, b := range want {
		g, ok := got[name]
		switch {
		case !ok:
			t.Errorf("%s missing", name)
		case !bytes.Equal(b, g):
			t.Errorf("%s differs (%d bytes, want %d)", name, len(g), len(b))
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("unexpected file %s", name)
		}
	}
}

func checkSameState(t *testing.T, want, got *Log) {
	t.Helper()
	if got.LogEndOffset() != want.LogEndOffset() || got.LogStartOffset() != want.LogStartOffset() ||
		got.HighWatermark() != want.HighWatermark() || got.LastStableOffset() != want.LastStableOffset() {
		t.Fatalf("offsets (start %d, end %d, hw %d, lso %d), want (%d, %d, %d, %d)",
			got.LogStartOffset(), got.LogEndOffset(), got.HighWatermark(), got.LastStableOffset(),
			want.LogStartOffset(), want.LogEndOffset(), want.HighWatermark(), want.LastStableOffset())
	}
	if g, w := got.ActiveProducers(), want.ActiveProducers(); !slices.Equal(g, w) {
		t.Fatalf("producers %+v, want %+v", g, w)
	}
	if g, w := got.epochEntries(), want.epochEntries(); !slices.Equal(g, w) {
		t.Fatalf("epochs %v, want %v", g, w)
	}
	ga, err := got.AbortedTransactions(0, got.LogEndOffset())
	if err != nil {
		t.Fatal(err)
	}
	wa, err := want.AbortedTransactions(0, want.LogEndOffset())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ga, wa) {
		t.Fatalf("aborted transactions %+v, want %+v", ga, wa)
	}
}

func TestFollowerReplicatesByteForByte(t *testing.T) {
	for _, maxBytes := range []int64{1, 700, math.MaxInt32} {
		t.Run(fmt.Sprint("fetch max bytes ", maxBytes), func(t *testing.T) {
			cfg := replicationConfig()
			leaderDir, followerDir := t.TempDir(), t.TempDir()
			leader := openTestLog(t, leaderDir, cfg, producerClock())
			follower := openTestLog(t, followerDir, cfg, producerClock())
			lastBatch, lastInfo := buildReplicatedLeader(t, leader)
			if len(leader.segments) < 4 {
				t.Fatalf("%d leader segments, want several", len(leader.segments))
			}
			replicate(t, leader, follower, maxBytes)
			checkSameState(t, leader, follower)
			if lso := follower.LastStableOffset(); lso >= follower.LogEndOffset() {
				t.Fatalf("LSO %d: the open transaction is not holding it", lso)
			}
			if len(follower.epochEntries()) != 3 {
				t.Fatalf("epochs %v", follower.epochEntries())
			}
			if err := leader.Close(); err != nil {
				t.Fatal(err)
			}
			if err := follower.Close(); err != nil {
				t.Fatal(err)
			}
			compareDirs(t, leaderDir, followerDir)

			// The follower becomes the leader: a producer retrying its last
			// batch after the failover gets the original offsets.
			f := openTestLog(t, followerDir, cfg, producerClock())
			defer f.Close()
			l := openTestLog(t, leaderDir, cfg, producerClock())
			defer l.Close()
			checkSameState(t, l, f)
			if err := f.AssignEpochStartOffset(5, f.LogEndOffset()); err != nil {
				t.Fatal(err)
			}
			leo := f.LogEndOffset()
			info, err := f.AppendAsLeader(lastBatch, 5)
			if err != nil || info.FirstOffset != lastInfo.FirstOffset || info.LastOffset != lastInfo.LastOffset || f.LogEndOffset() != leo {
				t.Fatalf("retry after failover: %+v %v, want the duplicate of %+v", info, err, lastInfo)
			}
			lastHeader := parseBatchHeader(lastBatch)
			next := lastHeader.lastSequence() + 1
			expectCode(t, f, producerBatch(t, 1, 0, next+1, 1, testEpoch.UnixMilli()), kerr.OutOfOrderSequenceNumber)
			if _, err := f.AppendAsLeader(producerBatch(t, 1, 0, next, 1, testEpoch.UnixMilli()), 5); err != nil {
				t.Fatal(err)
			}
			if e, o := f.EndOffsetForEpoch(4); e != 4 || o != leo {
				t.Fatalf("EndOffsetForEpoch(4) on the new leader = (%d, %d), want (4, %d)", e, o, leo)
			}
		})
	}
}

// TestFollowerKeepsProducerStateAcrossRestart: a follower that crashed
// rebuilds the same producer and transaction state, and goes on following.
func TestFollowerKeepsProducerStateAcrossRestart(t *testing.T) {
	cfg := replicationConfig()
	leader := openTestLog(t, t.TempDir(), cfg, producerClock())
	defer leader.Close()
	followerDir := t.TempDir()
	follower := openTestLog(t, followerDir, cfg, producerClock())
	buildReplicatedLeader(t, leader)
	replicate(t, leader, follower, 2000)
	crash(follower)
	follower = openTestLog(t, followerDir, cfg, producerClock())
	defer follower.Close()
	follower.UpdateHighWatermark(leader.HighWatermark())
	checkSameState(t, leader, follower)
	// The open transaction commits on the leader and replicates.
	leaderMarker(t, leader, 4, true, 4)
	leader.UpdateHighWatermark(leader.LogEndOffset())
	replicate(t, leader, follower, 2000)
	checkSameState(t, leader, follower)
	if follower.LastStableOffset() != follower.LogEndOffset() {
		t.Fatalf("LSO %d after the commit, log end %d", follower.LastStableOffset(), follower.LogEndOffset())
	}
}

func TestFollowerAppendRefusals(t *testing.T) {
	cfg := replicationConfig()
	leader := openTestLog(t, t.TempDir(), cfg, producerClock())
	defer leader.Close()
	for i := range 6 {
		leaderAppend(t, leader, simpleBatch(t, compress.None, 3, testEpoch.UnixMilli()+int64(i)), 2)
	}
	read := func(from int64) []byte {
		res, err := leader.Read(from, math.MaxInt32, leader.LogEndOffset(), true)
		if err != nil {
			t.Fatal(err)
		}
		return readSlices(t, res)
	}
	all := read(0)
	hs := splitBatches(t, all)
	batch := func(i int) []byte {
		var pos int64
		for _, h := range hs[:i] {
			pos += h.Size()
		}
		return slices.Clone(all[pos : pos+hs[i].Size()])
	}

	follower := openTestLog(t, t.TempDir(), cfg, producerClock())
	defer follower.Close()
	if _, err := follower.AppendAsFollower(batch(0)); err != nil {
		t.Fatal(err)
	}
	size := follower.active().size
	refuse := func(name string, records []byte, want *kerr.Error) error {
		t.Helper()
		info, err := follower.AppendAsFollower(records)
		if kerrCode(err) != want.Code {
			t.Fatalf("%s: %v, want %s", name, err, want.Message)
		}
		if follower.LogEndOffset() != 3 || follower.active().size != size || info.RecordCount != 0 {
			t.Fatalf("%s: appended something (log end %d, %d bytes, %+v)", name, follower.LogEndOffset(), follower.active().size, info)
		}
		return err
	}
	err := refuse("gap", batch(2), kerr.OffsetOutOfRange)
	var uao *UnexpectedAppendOffsetError
	if !errors.As(err, &uao) || uao.FirstOffset != 6 || uao.LastOffset != 8 || uao.LogEndOffset != 3 {
		t.Fatalf("gap error %#v", err)
	}
	err = refuse("overlap", slices.Concat(batch(0), batch(1)), kerr.OffsetOutOfRange)
	if !errors.As(err, &uao) || uao.FirstOffset != 0 || uao.LastOffset != 5 {
		t.Fatalf("overlap error %#v", err)
	}
	refuse("gap between batches", slices.Concat(batch(1), batch(3)), kerr.InvalidRecord)
	refuse("batches out of order", slices.Concat(batch(1), batch(2), batch(1)), kerr.InvalidRecord)
	bad := slices.Concat(batch(1), batch(2))
	bad[len(bad)-1] ^= 1
	refuse("bad crc in the second batch", bad, kerr.CorruptMessage)
	old := batch(1)
	old[recordbatch.PosMagic] = 1
	refuse("magic 1", old, kerr.CorruptMessage)
	short := batch(1)
	binary.BigEndian.PutUint32(short[recordbatch.PosBatchLength:], 20)
	refuse("short batch", short[:32], kerr.CorruptMessage)
	neg := batch(1)
	binary.BigEndian.PutUint32(neg[recordbatch.PosLastOffsetDelta:], math.MaxUint32)
	recordbatch.Batch(neg).SetCRC()
	refuse("negative offset delta", neg, kerr.CorruptMessage)

	// Nothing, or only part of a batch: nothing to do.
	for _, records := range [][]byte{nil, batch(1)[:40], batch(1)[:5]} {
		info, err := follower.AppendAsFollower(records)
		if err != nil || info.RecordCount != 0 || follower.LogEndOffset() != 3 {
			t.Fatalf("append of %d bytes: %+v %v", len(records), info, err)
		}
	}
	// A trailing partial batch is left for the next fetch.
	info, err := follower.AppendAsFollower(slices.Concat(batch(1), batch(2)[:70]))
	if err != nil || info.FirstOffset != 3 || info.LastOffset != 5 || follower.LogEndOffset() != 6 {
		t.Fatalf("append with a partial tail: %+v %v", info, err)
	}
	if _, err := follower.AppendAsFollower(slices.Concat(batch(2), batch(3))); err != nil {
		t.Fatal(err)
	}
	// Closed.
	follower.Close()
	if _, err := follower.AppendAsFollower(batch(4)); kerrCode(err) != kerr.KafkaStorageError.Code {
		t.Fatalf("append to a closed log: %v", err)
	}
}

// TestFollowerOfCompactedLog: the leader's cleaner leaves offset gaps,
// which a follower of a compacted log takes as they are.
func TestFollowerOfCompactedLog(t *testing.T) {
	cfg := compactConfig()
	leader := openTestLog(t, t.TempDir(), cfg, producerClock())
	defer leader.Close()
	orig := keyedLog(t, leader, compress.None, 40, 5, 4, testEpoch.UnixMilli())
	leader.UpdateHighWatermark(leader.LogEndOffset())
	if _, cleaned := cleanOnce(t, testCleaner(t, leader), testEpoch); !cleaned {
		t.Fatal("nothing cleaned")
	}
	got := allRecords(readLog(t, leader))
	if len(got) >= len(orig) {
		t.Fatalf("cleaning kept %d of %d records", len(got), len(orig))
	}
	followerDir := t.TempDir()
	follower := openTestLog(t, followerDir, cfg, producerClock())
	// Fetching from 0, where the leader's first batch may now start later.
	fetches := replicate(t, leader, follower, 300)
	if fetches < 2 {
		t.Fatalf("%d fetches", fetches)
	}
	if follower.LogEndOffset() != leader.LogEndOffset() || follower.HighWatermark() != leader.HighWatermark() ||
		follower.LastStableOffset() != leader.LastStableOffset() {
		t.Fatalf("follower at %d (hw %d), leader at %d (hw %d)", follower.LogEndOffset(), follower.HighWatermark(),
			leader.LogEndOffset(), leader.HighWatermark())
	}
	if g := allRecords(readLog(t, follower)); !slices.EqualFunc(g, got, func(a, b loggedRecord) bool {
		return a.offset == b.offset && bytes.Equal(a.key, b.key) && bytes.Equal(a.value, b.value)
	}) {
		t.Fatalf("follower records differ from the leader's")
	}
	if err := follower.Close(); err != nil {
		t.Fatal(err)
	}
	follower = openTestLog(t, followerDir, cfg, producerClock())
	defer follower.Close()
	if follower.LogEndOffset() != leader.LogEndOffset() {
		t.Fatalf("reopened follower ends at %d, want %d", follower.LogEndOffset(), leader.LogEndOffset())
	}
}

// TestFollowerStartsInsideLeadersFirstBatch: after DeleteRecords the
// leader's log start offset is inside a batch; a follower started there
// (TruncateFullyAndStartAt) takes that whole batch and keeps its log start.
func TestFollowerStartsInsideLeadersFirstBatch(t *testing.T) {
	cfg := replicationConfig()
	leader := openTestLog(t, t.TempDir(), cfg, producerClock())
	defer leader.Close()
	for i := range 4 {
		leaderAppend(t, leader, simpleBatch(t, compress.Snappy, 5, testEpoch.UnixMilli()+int64(i)), 3)
	}
	leader.UpdateHighWatermark(leader.LogEndOffset())
	if _, err := leader.DeleteRecordsBefore(7); err != nil {
		t.Fatal(err)
	}
	follower := openTestLog(t, t.TempDir(), cfg, producerClock())
	defer follower.Close()
	mustAppend(t, follower, simpleBatch(t, compress.None, 2, testEpoch.UnixMilli()))
	if err := follower.TruncateFullyAndStartAt(leader.LogStartOffset()); err != nil {
		t.Fatal(err)
	}
	res, err := leader.Read(7, math.MaxInt32, leader.LogEndOffset(), true)
	if err != nil {
		t.Fatal(err)
	}
	info, err := follower.AppendAsFollower(readSlices(t, res))
	if err != nil || info.FirstOffset != 5 || info.LastOffset != 19 {
		t.Fatalf("append: %+v %v", info, err)
	}
	if follower.LogStartOffset() != 7 || follower.LogEndOffset() != 20 || follower.active().baseOffset != 5 {
		t.Fatalf("follower log [%d, %d) in a segment at %d, want [7, 20) at 5",
			follower.LogStartOffset(), follower.LogEndOffset(), follower.active().baseOffset)
	}
	checkEpochs(t, follower.epochEntries(), ee(3, 7))
	// Not on a log with records: the overlap is refused.
	if _, err := follower.AppendAsFollower(readSlices(t, res)); kerrCode(err) != kerr.OffsetOutOfRange.Code {
		t.Fatalf("overlapping append: %v", err)
	}
}

func TestFollowerFlushMessages(t *testing.T) {
	cfg := replicationConfig()
	cfg.FlushMessages = 5
	leader := openTestLog(t, t.TempDir(), cfg, producerClock())
	defer leader.Close()
	follower := openTestLog(t, t.TempDir(), cfg, producerClock())
	defer follower.Close()
	leaderAppend(t, leader, simpleBatch(t, compress.None, 3, testEpoch.UnixMilli()), 0)
	replicate(t, leader, follower, math.MaxInt32)
	if follower.unflushedMessages != 3 {
		t.Fatalf("%d unflushed messages, want 3", follower.unflushedMessages)
	}
	leaderAppend(t, leader, simpleBatch(t, compress.None, 3, testEpoch.UnixMilli()), 0)
	replicate(t, leader, follower, math.MaxInt32)
	if follower.unflushedMessages != 0 {
		t.Fatalf("%d unflushed messages after flush.messages was reached", follower.unflushedMessages)
	}
}
