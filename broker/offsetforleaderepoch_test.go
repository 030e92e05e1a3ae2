package broker

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/recordbatch"
	"github.com/strait/strait/storage"
)

// plainBatch is a magic-v2 batch of n records without a producer id.
func plainBatch(n int) []byte {
	var recs []byte
	for i := range n {
		rec := kmsg.NewRecord()
		rec.OffsetDelta = int32(i)
		rec.Value = []byte("v")
		rec.Length = int32(len(rec.AppendTo(nil)) - 1)
		recs = rec.AppendTo(recs)
	}
	b := kmsg.NewRecordBatch()
	b.Magic = 2
	b.ProducerID, b.ProducerEpoch, b.FirstSequence = -1, -1, -1
	now := time.Now().UnixMilli()
	b.FirstTimestamp, b.MaxTimestamp = now, now
	b.LastOffsetDelta = int32(n - 1)
	b.NumRecords = int32(n)
	b.Records = recs
	raw := b.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[recordbatch.PosBatchLength:], uint32(len(raw)-recordbatch.LogOverhead))
	recordbatch.Batch(raw).SetCRC()
	return raw
}

// TestEndOffsetForEpoch: the leader epoch cache filled by leader appends
// and by a leadership starting (epoch 6 at offset 9) answers as Kafka's,
// also once the log start offset has moved into the middle of an epoch.
func TestEndOffsetForEpoch(t *testing.T) {
	l, err := storage.Open(t.TempDir(), storage.DefaultLogConfig(), storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	// Offsets 0-2 and 3-4 in epoch 0, 5-7 in epoch 2, 8 in epoch 5; the
	// partition is now at epoch 6, not written to yet.
	for _, b := range []struct{ n, epoch int }{{3, 0}, {2, 0}, {3, 2}, {1, 5}} {
		if _, err := l.AppendAsLeader(plainBatch(b.n), int32(b.epoch)); err != nil {
			t.Fatal(err)
		}
	}
	l.UpdateHighWatermark(l.LogEndOffset())
	if err := l.AssignEpochStartOffset(6, l.LogEndOffset()); err != nil {
		t.Fatal(err)
	}
	check := func(requested, wantEpoch int32, wantEnd int64) {
		t.Helper()
		epoch, end := l.EndOffsetForEpoch(requested)
		if epoch != wantEpoch || end != wantEnd {
			t.Errorf("epoch %d: (%d, %d), want (%d, %d)", requested, epoch, end, wantEpoch, wantEnd)
		}
	}
	check(0, 0, 5)
	check(1, 0, 5)
	check(2, 2, 8)
	check(3, 2, 8)
	check(5, 5, 9)
	check(6, 6, 9)
	check(7, -1, -1)
	check(-1, -1, -1)

	if _, err := l.DeleteRecordsBefore(6); err != nil {
		t.Fatal(err)
	}
	check(0, 0, 6) // epoch 2 now starts at the log start offset
	check(1, 1, 6)
	check(2, 2, 8)
}
