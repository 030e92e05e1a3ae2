package storage

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/recordbatch"
)

// txnBatch is a transactional producer's batch.
func txnBatch(t testing.TB, pid int64, epoch int16, seq int32, n int, ts int64) []byte {
	t.Helper()
	b := producerBatch(t, pid, epoch, seq, n, ts)
	attrs := binary.BigEndian.Uint16(b[recordbatch.PosAttributes:])
	binary.BigEndian.PutUint16(b[recordbatch.PosAttributes:], attrs|recordbatch.AttrTransactional)
	recordbatch.Batch(b).SetCRC()
	return b
}

// appendTxn appends a transactional batch after a verification.
func appendTxn(t *testing.T, l *Log, pid int64, epoch int16, seq int32, n int) AppendInfo {
	t.Helper()
	g := l.StartTxnVerification(pid, epoch, seq, false)
	info, err := l.AppendAsLeaderVerified(txnBatch(t, pid, epoch, seq, n, testEpoch.UnixMilli()), 7, g)
	if err != nil {
		t.Fatalf("transactional append: %v", err)
	}
	return info
}

func appendMarker(t *testing.T, l *Log, pid int64, epoch int16, commit bool) AppendInfo {
	t.Helper()
	info, err := l.AppendMarker(TxnMarker{ProducerID: pid, ProducerEpoch: epoch, Commit: commit, CoordinatorEpoch: 3}, 7)
	if err != nil {
		t.Fatalf("marker: %v", err)
	}
	l.UpdateHighWatermark(l.LogEndOffset())
	return info
}

func TestTxnLastStableOffsetAndAbortedIndex(t *testing.T) {
	dir := t.TempDir()
	l := openTestLog(t, dir, testConfig(), producerClock())
	defer l.Close()
	hwUp := func() { l.UpdateHighWatermark(l.LogEndOffset()) }

	mustAppend(t, l, simpleBatch(t, 0, 2, testEpoch.UnixMilli())) // 0-1
	a := appendTxn(t, l, 100, 0, 0, 3)                            // 2-4
	hwUp()
	if got := l.LastStableOffset(); got != a.FirstOffset {
		t.Fatalf("LSO %d with an open transaction at %d", got, a.FirstOffset)
	}
	b := appendTxn(t, l, 200, 0, 0, 2) // 5-6
	hwUp()
	appendTxn(t, l, 100, 0, 3, 1) // 7
	hwUp()
	abortA := appendMarker(t, l, 100, 0, false) // 8
	if got := l.LastStableOffset(); got != b.FirstOffset {
		t.Fatalf("LSO %d after aborting the first transaction, want %d (the second is open)", got, b.FirstOffset)
	}
	commitB := appendMarker(t, l, 200, 0, true) // 9
	if got, want := l.LastStableOffset(), l.HighWatermark(); got != want || want != commitB.LastOffset+1 {
		t.Fatalf("LSO %d, HW %d, want both %d", got, want, commitB.LastOffset+1)
	}

	aborted, err := l.AbortedTransactions(0, l.LogEndOffset())
	if err != nil {
		t.Fatal(err)
	}
	want := []AbortedTxn{{ProducerID: 100, FirstOffset: a.FirstOffset, LastOffset: abortA.FirstOffset, LastStableOffset: b.FirstOffset}}
	if !slices.Equal(aborted, want) {
		t.Fatalf("aborted transactions %+v, want %+v", aborted, want)
	}
	if got, _ := l.AbortedTransactions(abortA.FirstOffset+1, l.LogEndOffset()); len(got) != 0 {
		t.Fatalf("aborted transactions after the marker: %+v", got)
	}

	// Kafka's file: 34-byte version-0 entries.
	raw, err := os.ReadFile(segPath(dir, 0, txnIndexFileSuffix))
	if err != nil {
		t.Fatal(err)
	}
	if len(raw) != abortedTxnSize || binary.BigEndian.Uint16(raw) != 0 ||
		int64(binary.BigEndian.Uint64(raw[2:])) != 100 || int64(binary.BigEndian.Uint64(raw[18:])) != abortA.FirstOffset {
		t.Fatalf("txnindex bytes %x", raw)
	}

	// The marker as Kafka writes it: one control record, key version 0 +
	// type, value version 0 + coordinator epoch.
	res, err := l.Read(abortA.FirstOffset, 1<<20, l.LogEndOffset(), true)
	if err != nil {
		t.Fatal(err)
	}
	var batch kmsg.RecordBatch
	if err := batch.ReadFrom(readSlices(t, res)); err != nil {
		t.Fatal(err)
	}
	if batch.Attributes&0x30 != 0x30 || batch.ProducerID != 100 || batch.NumRecords != 1 {
		t.Fatalf("marker batch %+v", batch)
	}
	recs := batch.Records
	rec := kmsg.NewRecord()
	length, n := binary.Varint(recs)
	if err := rec.ReadFrom(recs[:n+int(length)]); err != nil {
		t.Fatal(err)
	}
	var key kmsg.ControlRecordKey
	var val kmsg.EndTxnMarker
	if err := key.ReadFrom(rec.Key); err != nil || key.Type != kmsg.ControlRecordKeyTypeAbort {
		t.Fatalf("marker key %+v (%v)", key, err)
	}
	if err := val.ReadFrom(rec.Value); err != nil || val.CoordinatorEpoch != 3 {
		t.Fatalf("marker value %+v (%v)", val, err)
	}
	if res.EndOffset != commitB.FirstOffset+1 {
		t.Fatalf("read end offset %d, want %d", res.EndOffset, commitB.FirstOffset+1)
	}
}

func TestTxnStateErrors(t *testing.T) {
	l := openTestLog(t, t.TempDir(), testConfig(), producerClock())
	defer l.Close()
	ts := testEpoch.UnixMilli()

	// No verification guard: the coordinator never confirmed the partition.
	if _, err := l.AppendAsLeaderVerified(txnBatch(t, 1, 0, 0, 1, ts), 7, nil); kerrCode(err) != kerr.InvalidTxnState.Code {
		t.Fatalf("unverified transactional append: %v", err)
	}
	// A marker between verification and append voids the guard.
	g := l.StartTxnVerification(1, 0, 0, false)
	if _, err := l.AppendMarker(TxnMarker{ProducerID: 1, ProducerEpoch: 0}, 7); err != nil {
		t.Fatal(err)
	}
	if _, err := l.AppendAsLeaderVerified(txnBatch(t, 1, 0, 0, 1, ts), 7, g); kerrCode(err) != kerr.InvalidTxnState.Code {
		t.Fatalf("append with a guard voided by a marker: %v", err)
	}
	appendTxn(t, l, 1, 0, 0, 1)
	// Once open, later batches need no guard; no verification is started.
	if g := l.StartTxnVerification(1, 0, 1, false); g != nil {
		t.Fatal("a verification started for an open transaction")
	}
	if _, err := l.AppendAsLeaderVerified(txnBatch(t, 1, 0, 1, 1, ts), 7, nil); err != nil {
		t.Fatal(err)
	}
	// A non-transactional batch inside the transaction.
	if _, err := l.AppendAsLeader(producerBatch(t, 1, 0, 2, 1, ts), 7); kerrCode(err) != kerr.InvalidTxnState.Code {
		t.Fatalf("non-transactional batch in a transaction: %v", err)
	}
	// Transaction version 2: the marker bumps the epoch, fencing the old one.
	if _, err := l.AppendMarker(TxnMarker{ProducerID: 1, ProducerEpoch: 1, Commit: true, CoordinatorEpoch: 5}, 7); err != nil {
		t.Fatal(err)
	}
	if _, err := l.AppendAsLeader(producerBatch(t, 1, 0, 2, 1, ts), 7); kerrCode(err) != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("old epoch after a bumping marker: %v", err)
	}
	if _, err := l.AppendMarker(TxnMarker{ProducerID: 1, ProducerEpoch: 0}, 7); kerrCode(err) != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("marker at an old epoch: %v", err)
	}
	if _, err := l.AppendMarker(TxnMarker{ProducerID: 1, ProducerEpoch: 1, CoordinatorEpoch: 4}, 7); kerrCode(err) != kerr.TransactionCoordinatorFenced.Code {
		t.Fatalf("marker from an older coordinator: %v", err)
	}
	// The new epoch starts at sequence 0.
	appendTxn(t, l, 1, 1, 0, 2)
	if got := l.ActiveProducers(); len(got) != 1 || got[0].ProducerEpoch != 1 || got[0].LastSequence != 1 ||
		got[0].CoordinatorEpoch != 5 || got[0].CurrentTxnStartOffset < 0 {
		t.Fatalf("producers %+v", got)
	}
	// Clients cannot write control batches.
	b := txnBatch(t, 1, 1, 2, 1, ts)
	binary.BigEndian.PutUint16(b[recordbatch.PosAttributes:], binary.BigEndian.Uint16(b[recordbatch.PosAttributes:])|recordbatch.AttrControl)
	recordbatch.Batch(b).SetCRC()
	if _, err := l.AppendAsLeaderVerified(b, 7, nil); kerrCode(err) != kerr.InvalidRecord.Code {
		t.Fatalf("client control batch: %v", err)
	}
}

// buildTxnLog writes: committed txn of 1, open txn of 2, aborted txn of 3
// spread over several segments.
func buildTxnLog(t *testing.T, l *Log) (open AppendInfo, aborted AbortedTxn) {
	appendTxn(t, l, 1, 0, 0, 2)
	open = appendTxn(t, l, 2, 0, 0, 1)
	first := appendTxn(t, l, 3, 0, 0, 2)
	for i := 0; i < 20; i++ {
		mustAppend(t, l, simpleBatch(t, 0, 5, testEpoch.UnixMilli()))
	}
	appendTxn(t, l, 3, 0, 2, 2)
	appendMarker(t, l, 1, 0, true)
	ab := appendMarker(t, l, 3, 0, false)
	return open, AbortedTxn{ProducerID: 3, FirstOffset: first.FirstOffset, LastOffset: ab.FirstOffset, LastStableOffset: open.FirstOffset}
}

func TestTxnStateSurvivesRestart(t *testing.T) {
	for _, tc := range []struct {
		name  string
		close func(t *testing.T, dir string, l *Log)
	}{
		{"clean", func(t *testing.T, dir string, l *Log) {
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
		}},
		{"crash", func(t *testing.T, dir string, l *Log) { crash(l) }},
		{"crash without snapshots or index", func(t *testing.T, dir string, l *Log) {
			crash(l)
			ents, _ := os.ReadDir(dir)
			for _, e := range ents {
				if filepath.Ext(e.Name()) == ".snapshot" || filepath.Ext(e.Name()) == ".txnindex" {
					os.Remove(filepath.Join(dir, e.Name()))
				}
			}
		}},
		{"corrupt index", func(t *testing.T, dir string, l *Log) {
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			for _, path := range txnIndexFiles(t, dir) {
				os.WriteFile(path, make([]byte, 2*abortedTxnSize+5), 0o644)
			}
		}},
		{"index claiming a terabyte", func(t *testing.T, dir string, l *Log) {
			// Sparse: no disk taken. Read whole it would allocate 1 TiB.
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			for _, path := range txnIndexFiles(t, dir) {
				if err := os.Truncate(path, 1<<40); err != nil {
					t.Fatal(err)
				}
			}
		}},
		{"torn trailing entry", func(t *testing.T, dir string, l *Log) {
			// Half an entry after the whole ones, as a crash mid-append
			// leaves: cut off, the entries before it kept.
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			paths := txnIndexFiles(t, dir)
			if len(paths) == 0 {
				t.Fatal("no transaction index to tear")
			}
			for _, path := range paths {
				f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
				if err != nil {
					t.Fatal(err)
				}
				f.Write(make([]byte, abortedTxnSize/2))
				f.Close()
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := testConfig()
			cfg.SegmentBytes = 700
			l := openTestLog(t, dir, cfg, producerClock())
			open, wantAborted := buildTxnLog(t, l)
			if len(l.segments) < 3 {
				t.Fatalf("%d segments, want several", len(l.segments))
			}
			leo := l.LogEndOffset()
			tc.close(t, dir, l)

			l = openTestLog(t, dir, cfg, producerClock())
			defer l.Close()
			for _, path := range txnIndexFiles(t, dir) {
				if fi, err := os.Stat(path); err != nil || fi.Size()%abortedTxnSize != 0 {
					t.Fatalf("%s after reopening: %v, %v; want whole entries", path, fi, err)
				}
			}
			if l.LogEndOffset() != leo {
				t.Fatalf("log end %d, want %d", l.LogEndOffset(), leo)
			}
			if got := l.LastStableOffset(); got != open.FirstOffset {
				t.Fatalf("LSO after reopening %d, want %d", got, open.FirstOffset)
			}
			got, err := l.AbortedTransactions(0, leo)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, []AbortedTxn{wantAborted}) {
				t.Fatalf("aborted %+v, want %+v", got, wantAborted)
			}
			// The open transaction can still be closed, and the LSO moves.
			appendMarker(t, l, 2, 0, true)
			if l.LastStableOffset() != l.LogEndOffset() {
				t.Fatalf("LSO %d after the last commit, log end %d", l.LastStableOffset(), l.LogEndOffset())
			}
		})
	}
}

func TestTxnCompactionDropsAbortedRecords(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig()
	cfg.Compact, cfg.Delete = true, false
	cfg.SegmentBytes = 400
	clock := producerClock()
	l := openTestLog(t, dir, cfg, clock)
	defer l.Close()
	ts := testEpoch.UnixMilli()
	keyed := func(pid int64, seq int32, key, value string, txn bool) []byte {
		spec := batchSpec{producerID: pid, baseSequence: seq, baseTimestamp: ts,
			records: []testRecord{{key: []byte(key), value: []byte(value)}}}
		if txn {
			spec.attrs = recordbatch.AttrTransactional
		}
		b := buildBatch(t, spec, nil)
		binary.BigEndian.PutUint16(b[recordbatch.PosProducerEpoch:], 0)
		recordbatch.Batch(b).SetCRC()
		return b
	}
	mustAppend(t, l, keyed(5, 0, "k", "committed", false))
	g := l.StartTxnVerification(9, 0, 0, false)
	if _, err := l.AppendAsLeaderVerified(keyed(9, 0, "k", "aborted", true), 7, g); err != nil {
		t.Fatal(err)
	}
	appendMarker(t, l, 9, 0, false)
	for i := 0; i < 30; i++ {
		mustAppend(t, l, keyed(5, int32(i+1), "other", "x", false))
	}
	l.UpdateHighWatermark(l.LogEndOffset())

	w := newCleanerWorker(&CleanerConfig{Threads: 1, DedupeBufferSize: 1 << 20, IOBufferSize: 1 << 16, DedupeBufferLoadFactor: 0.9}, func() bool { return false })
	c, ok := l.cleanCandidate(clock.now().UnixMilli())
	if !ok {
		t.Fatal("no candidate")
	}
	if _, err := w.clean(&c, clock.now()); err != nil {
		t.Fatal(err)
	}
	res, err := l.Read(0, 1<<20, l.LogEndOffset(), true)
	if err != nil {
		t.Fatal(err)
	}
	values := map[string]bool{}
	markers := 0
	for _, h := range splitBatches(t, readSlices(t, res)) {
		if h.IsControl() {
			markers++
		}
	}
	raw := readSlices(t, res)
	for len(raw) > 0 {
		h := parseBatchHeader(raw)
		var b kmsg.RecordBatch
		if err := b.ReadFrom(raw[:h.Size()]); err != nil {
			t.Fatal(err)
		}
		if !h.IsControl() {
			recs := b.Records
			for i := int32(0); i < b.NumRecords; i++ {
				length, n := binary.Varint(recs)
				r := kmsg.NewRecord()
				if err := r.ReadFrom(recs[:n+int(length)]); err != nil {
					t.Fatal(err)
				}
				values[string(r.Value)] = true
				recs = recs[n+int(length):]
			}
		}
		raw = raw[h.Size():]
	}
	if !values["committed"] || values["aborted"] {
		t.Fatalf("after compaction values %v: the committed value must stay, the aborted one go", values)
	}
	if markers != 1 {
		t.Fatalf("%d markers after compaction, want the one kept", markers)
	}
	if got, _ := l.AbortedTransactions(0, l.LogEndOffset()); len(got) != 1 {
		t.Fatalf("aborted transactions after compaction: %+v", got)
	}
}

// TestTxnCoordinatorAppend: the group coordinator's transactional offset
// commits carry no sequence; their epoch is checked, and opening a
// transaction takes a verification guard.
func TestTxnCoordinatorAppend(t *testing.T) {
	l := openTestLog(t, t.TempDir(), testConfig(), producerClock())
	defer l.Close()
	b := txnBatch(t, 42, 3, 0, 2, testEpoch.UnixMilli())
	binary.BigEndian.PutUint32(b[recordbatch.PosBaseSequence:], 0xffffffff) // no sequence
	recordbatch.Batch(b).SetCRC()
	if _, err := l.AppendAsLeader(b, 7); kerrCode(err) != kerr.InvalidRecord.Code {
		t.Fatalf("a client batch without a sequence: %v", err)
	}
	if _, err := l.AppendAsCoordinator(b, 7, true, nil); kerrCode(err) != kerr.InvalidTxnState.Code {
		t.Fatalf("unverified coordinator append: %v", err)
	}
	g := l.StartTxnVerification(42, 3, -1, false)
	if _, err := l.AppendAsCoordinator(b, 7, true, g); err != nil {
		t.Fatal(err)
	}
	// The next commit of the transaction needs no guard, whatever its sequence.
	if _, err := l.AppendAsCoordinator(b, 7, true, nil); err != nil {
		t.Fatal(err)
	}
	appendMarker(t, l, 42, 3, true)
	old := txnBatch(t, 42, 2, 0, 1, testEpoch.UnixMilli())
	binary.BigEndian.PutUint32(old[recordbatch.PosBaseSequence:], 0xffffffff)
	recordbatch.Batch(old).SetCRC()
	if _, err := l.AppendAsCoordinator(old, 7, true, l.StartTxnVerification(42, 2, -1, false)); kerrCode(err) != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("coordinator append at an old epoch: %v", err)
	}
	if l.LastStableOffset() != l.LogEndOffset() {
		t.Fatalf("LSO %d, log end %d", l.LastStableOffset(), l.LogEndOffset())
	}
}

// TestTxnV2GuardSurvivesPredecessorMarker: a transaction version 2
// producer's next transaction starts verifying with the bumped epoch its
// previous transaction's markers carry; that marker landing afterwards
// leaves the guard valid (Kafka's isV2NextTransactionStarted), while a
// transaction version 1 guard is ended by any marker of its producer.
func TestTxnV2GuardSurvivesPredecessorMarker(t *testing.T) {
	for _, tc := range []struct {
		name      string
		epochBump bool
		wantErr   bool
	}{{"v2", true, false}, {"v1", false, true}} {
		t.Run(tc.name, func(t *testing.T) {
			l := openTestLog(t, t.TempDir(), testConfig(), producerClock())
			defer l.Close()
			appendTxn(t, l, 300, 0, 0, 2) // transaction 1 at epoch 0, sequences 0-1
			// Its commit marker carries the bumped epoch 1 under version 2
			// (epoch 0 under version 1); transaction 2 starts verifying first.
			next, seq := int16(0), int32(2)
			if tc.epochBump {
				next, seq = 1, 0 // a new epoch starts its sequences at 0
			}
			g := l.StartTxnVerification(300, next, seq, tc.epochBump)
			appendMarker(t, l, 300, next, true)
			_, err := l.AppendAsLeaderVerified(txnBatch(t, 300, next, seq, 1, testEpoch.UnixMilli()), 7, g)
			if (err != nil) != tc.wantErr {
				t.Fatalf("append after the predecessor's marker: %v, want error %v", err, tc.wantErr)
			}
		})
	}
}

// txnIndexFiles lists the transaction index files in dir.
func txnIndexFiles(t *testing.T, dir string) []string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*.txnindex"))
	if err != nil {
		t.Fatal(err)
	}
	return paths
}
