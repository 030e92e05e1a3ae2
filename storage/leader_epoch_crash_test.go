package storage

import (
	"encoding/binary"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/strait/strait/recordbatch"
	"github.com/strait/strait/storage/compress"
)

// The leader epoch checkpoint is written when the recovery point moves and
// at Close, not on each change (leader_epoch.go): these tests check that a
// change costs no write, that the file is durable before the recovery
// point moves past its entries, and that after a power loss dropping what
// was not written, recovery answers as the log did before it.

// epochBatch is a batch of n records at base offset base stamped with
// leader epoch epoch, as a leader serves it to its followers.
func epochBatch(t *testing.T, base int64, epoch int32, n int) []byte {
	t.Helper()
	b := simpleBatch(t, compress.None, n, testEpoch.UnixMilli())
	binary.BigEndian.PutUint64(b[recordbatch.PosBaseOffset:], uint64(base))
	binary.BigEndian.PutUint32(b[recordbatch.PosLeaderEpoch:], uint32(epoch))
	return b
}

// epochAnswers is what OffsetForLeaderEpoch answers for epochs -1 to 9.
func epochAnswers(l *Log) [][2]int64 {
	var out [][2]int64
	for e := int32(-1); e <= 9; e++ {
		epoch, end := l.EndOffsetForEpoch(e)
		out = append(out, [2]int64{int64(epoch), end})
	}
	return out
}

func epochFileEntries(t *testing.T, dir string) []EpochEntry {
	t.Helper()
	entries, err := readEpochCheckpoint(OSFS{}, filepath.Join(dir, leaderEpochFile))
	if err != nil {
		t.Fatalf("reading %s: %v", leaderEpochFile, err)
	}
	return entries
}

func epochOps(ops []string) []string {
	var out []string
	for _, op := range ops {
		if strings.Contains(op, leaderEpochFile) {
			out = append(out, op)
		}
	}
	return out
}

// TestLeaderEpochChangesAreWrittenWithTheRecoveryPoint: a new leader's
// epoch, a first batch of a new epoch, a truncation and a new log start
// write nothing; a flush writes the checkpoint (contents fsynced, renamed,
// directory fsynced) before the recovery point, and a flush with nothing
// changed does not write it again; Close writes it before the
// clean-shutdown marker.
func TestLeaderEpochChangesAreWrittenWithTheRecoveryPoint(t *testing.T) {
	dir := t.TempDir()
	fsys := &opFS{}
	l, err := Open(dir, testConfig(), Options{FS: fsys})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.AppendAsFollower(epochBatch(t, 0, 0, 3)); err != nil {
		t.Fatal(err)
	}
	if err := l.AssignEpochStartOffset(2, 3); err != nil {
		t.Fatal(err)
	}
	if _, err := l.AppendAsFollower(epochBatch(t, 3, 2, 3)); err != nil {
		t.Fatal(err)
	}
	if _, err := l.AppendAsFollower(epochBatch(t, 6, 4, 3)); err != nil {
		t.Fatal(err)
	}
	if err := l.TruncateTo(6); err != nil {
		t.Fatal(err)
	}
	if _, err := l.AppendAsFollower(epochBatch(t, 6, 5, 3)); err != nil {
		t.Fatal(err)
	}
	l.UpdateHighWatermark(9)
	if _, err := l.DeleteRecordsBefore(1); err != nil {
		t.Fatal(err)
	}
	want := []EpochEntry{ee(0, 1), ee(2, 3), ee(5, 6)}
	checkEpochs(t, l.epochEntries(), want...)
	if ops := epochOps(fsys.take()); len(ops) != 0 {
		t.Fatalf("epoch changes wrote the checkpoint: %q", ops)
	}

	if err := l.flush(); err != nil {
		t.Fatal(err)
	}
	ops := fsys.take()
	idx := func(op string) int {
		t.Helper()
		i := slices.Index(ops, op)
		if i < 0 {
			t.Fatalf("flush did not %q; it did %q", op, ops)
		}
		return i
	}
	synced, renamed, rp := idx("sync "+leaderEpochFile+checkpointTmp), idx("rename "+leaderEpochFile), idx("rename "+recoveryPointFile)
	dirSynced := slices.Index(ops[renamed:], "syncdir")
	if !(synced < renamed && dirSynced >= 0 && renamed+dirSynced < rp) {
		t.Fatalf("the checkpoint was not durable before the recovery point was written: %q", ops)
	}
	checkEpochs(t, epochFileEntries(t, dir), want...)
	if _, err := l.AppendAsFollower(epochBatch(t, 9, 5, 1)); err != nil {
		t.Fatal(err)
	}
	if err := l.flush(); err != nil {
		t.Fatal(err)
	}
	if ops := epochOps(fsys.take()); len(ops) != 0 {
		t.Fatalf("a flush without epoch changes wrote the checkpoint: %q", ops)
	}

	if err := l.AssignEpochStartOffset(7, 10); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	ops = fsys.take()
	renamed, marker := idx("rename "+leaderEpochFile), idx("create "+cleanShutdownFile)
	if idx("sync "+leaderEpochFile+checkpointTmp) > renamed || !slices.Contains(ops[renamed:marker], "syncdir") {
		t.Fatalf("Close did not make the checkpoint durable before the marker: %q", ops)
	}
	checkEpochs(t, epochFileEntries(t, dir), append(want, ee(7, 10))...)
}

// TestLeaderEpochsAfterPowerLoss: a follower's log whose epochs changed in
// memory only (an entry truncated away, its epoch continued by the new
// leader's data past the stale entry's start, a new epoch) loses the power
// with its data fsynced (flush.messages 1) but not the checkpoint. The
// recovered log answers OffsetForLeaderEpoch as before, which Kafka's
// recovery rule alone (assign an epoch above the latest) would not: the
// stale entry must go first. Then the same after a roll whose flush wrote
// the checkpoint before moving the recovery point: the entries below it
// come from the file.
func TestLeaderEpochsAfterPowerLoss(t *testing.T) {
	s := NewStrictFS(nil)
	dir := t.TempDir()
	cfg := testConfig()
	cfg.FlushMessages = 1
	size := len(epochBatch(t, 0, 0, 2))
	cfg.SegmentBytes = int64(2 * size) // two batches a segment
	open := func() *Log {
		t.Helper()
		return openLogWith(t, dir, cfg, s)
	}
	l := open()
	var leo int64
	follow := func(epoch int32) {
		t.Helper()
		if _, err := l.AppendAsFollower(epochBatch(t, leo, epoch, 2)); err != nil {
			t.Fatalf("append at %d, epoch %d: %v", leo, epoch, err)
		}
		leo += 2
	}
	follow(0)
	follow(0)
	follow(1) // 4: the second segment, which the rest goes to
	big := cfg
	big.SegmentBytes = 1 << 20
	l.SetConfig(big)
	for _, e := range []int32{1, 3, 3, 4} {
		follow(e)
	}
	if err := l.flush(); err != nil {
		t.Fatal(err)
	}
	l.flushes.Wait() // the roll's flush: it may not write later
	durable := []EpochEntry{ee(0, 0), ee(1, 4), ee(3, 8), ee(4, 12)}
	checkEpochs(t, epochFileEntries(t, dir), durable...)

	// In memory only from here; the truncation stays in the active
	// segment (a deleted segment's removal is not made durable).
	if err := l.TruncateTo(10); err != nil {
		t.Fatal(err)
	}
	leo = 10
	follow(3) // 10
	follow(3) // 12: epoch 3 goes on past the stale (4, 12)
	if err := l.AssignEpochStartOffset(5, leo); err != nil {
		t.Fatal(err)
	}
	follow(5) // 14
	want := []EpochEntry{ee(0, 0), ee(1, 4), ee(3, 8), ee(5, 14)}
	checkEpochs(t, l.epochEntries(), want...)
	answers := epochAnswers(l)

	s.CutPower()
	crash(l)
	mustCrash(t, s)
	checkEpochs(t, epochFileEntries(t, dir), durable...)
	l = open()
	if l.LogEndOffset() != leo {
		t.Fatalf("log end %d after the power loss, want %d (all fsynced)", l.LogEndOffset(), leo)
	}
	checkEpochs(t, l.epochEntries(), want...)
	if got := epochAnswers(l); !slices.Equal(got, answers) {
		t.Fatalf("OffsetForLeaderEpoch after the power loss %v, before %v", got, answers)
	}

	// Epoch 6 starts in memory only (Open moved the recovery point to the
	// log end, 16); then a roll without flush.messages: its flush writes
	// the checkpoint, then moves the recovery point to the new segment, 18.
	// Epoch 7 then starts in memory only, its data alone fsynced: recovery
	// rescans from 18 only, so (6, 16) must come from the file.
	big.FlushMessages = DefaultLogConfig().FlushMessages
	l.SetConfig(big)
	follow(6) // 16
	rolling := big
	rolling.SegmentBytes = cfg.SegmentBytes
	l.SetConfig(rolling)
	follow(6) // 18, a new segment
	l.flushes.Wait()
	want = append(want, ee(6, 16))
	checkEpochs(t, epochFileEntries(t, dir), want...)
	if rp, ok, err := readCheckpoint(OSFS{}, dir, recoveryPointFile); err != nil || !ok || rp != 18 {
		t.Fatalf("recovery point %d (%v, %v) after the roll's flush, want 18", rp, ok, err)
	}
	follow(7) // 20
	l.mu.Lock()
	err := l.active().flush()
	l.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	want = append(want, ee(7, 20))
	checkEpochs(t, l.epochEntries(), want...)
	answers = epochAnswers(l)
	s.CutPower()
	crash(l)
	mustCrash(t, s)
	l = open()
	defer l.Close()
	if l.LogEndOffset() != leo {
		t.Fatalf("log end %d after the second power loss, want %d", l.LogEndOffset(), leo)
	}
	checkEpochs(t, l.epochEntries(), want...)
	if got := epochAnswers(l); !slices.Equal(got, answers) {
		t.Fatalf("OffsetForLeaderEpoch after the second power loss %v, before %v", got, answers)
	}
}

// TestCleanOpenKeepsTheEpochFile: a leader that recorded its epoch without
// writing leaves an entry at the log end in the file, which every load
// drops. A clean open does not rewrite the file for that (a new file per
// partition at every start); the file is written before the recovery point
// moves past the log end, here by a roll's flush after the new leader's
// data continued the older epoch, and the log answers OffsetForLeaderEpoch
// the same after a power loss.
func TestCleanOpenKeepsTheEpochFile(t *testing.T) {
	s := NewStrictFS(nil)
	dir := t.TempDir()
	cfg := testConfig()
	cfg.FlushMessages = 1
	size := len(epochBatch(t, 0, 0, 2))
	l := openLogWith(t, dir, cfg, s)
	if _, err := l.AppendAsFollower(epochBatch(t, 0, 0, 2)); err != nil {
		t.Fatal(err)
	}
	if err := l.AssignEpochStartOffset(4, 2); err != nil { // a leadership that wrote nothing
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	checkEpochs(t, epochFileEntries(t, dir), ee(0, 0), ee(4, 2))

	l = openLogWith(t, dir, cfg, s)
	checkEpochs(t, l.epochEntries(), ee(0, 0))
	checkEpochs(t, epochFileEntries(t, dir), ee(0, 0), ee(4, 2))

	// The next leader's data continues epoch 0 (no new entry); the roll's
	// flush moves the recovery point past 2 and must write the file first.
	rolling := cfg
	rolling.SegmentBytes = int64(2 * size)
	rolling.FlushMessages = DefaultLogConfig().FlushMessages
	l.SetConfig(rolling)
	for _, base := range []int64{2, 4} {
		if _, err := l.AppendAsFollower(epochBatch(t, base, 0, 2)); err != nil {
			t.Fatal(err)
		}
	}
	l.flushes.Wait()
	l.mu.Lock()
	err := l.active().flush() // the new segment's data, not its recovery point
	l.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	if rp, ok, err := readCheckpoint(OSFS{}, dir, recoveryPointFile); err != nil || !ok || rp != 4 {
		t.Fatalf("recovery point %d (%v, %v) after the roll's flush, want 4", rp, ok, err)
	}
	checkEpochs(t, epochFileEntries(t, dir), ee(0, 0))
	answers := epochAnswers(l)
	s.CutPower()
	crash(l)
	mustCrash(t, s)
	l = openLogWith(t, dir, rolling, s)
	defer l.Close()
	if l.LogEndOffset() != 6 {
		t.Fatalf("log end %d after the power loss, want 6 (all fsynced)", l.LogEndOffset())
	}
	checkEpochs(t, l.epochEntries(), ee(0, 0))
	if got := epochAnswers(l); !slices.Equal(got, answers) {
		t.Fatalf("OffsetForLeaderEpoch after the power loss %v, before %v", got, answers)
	}
}
