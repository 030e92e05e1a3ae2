package share

import (
	"reflect"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Writes become snapshot and update records that a new leader's replay
// turns back into the same state; old epochs are fenced; a snapshot comes
// every snapshotEvery writes; a tombstone deletes.
func TestStateShardWriteReplayFence(t *testing.T) {
	k := StateKey{Group: "g", Topic: [16]byte{1}, Partition: 3}
	sh := NewStateShard(nil)
	var log []StateRecord
	write := func(stateEpoch, leaderEpoch int32, start int64, bs ...StateBatch) int16 {
		rec, apply, code, _ := sh.Write(k, stateEpoch, leaderEpoch, start, bs, 3, 1000)
		if code == 0 {
			log = append(log, rec)
			apply()
		}
		return code
	}
	write(0, 1, 0, StateBatch{0, 4, DeliveryAvailable, 1})
	write(0, 1, 2, StateBatch{2, 3, DeliveryAcknowledged, 1}, StateBatch{4, 6, DeliveryAvailable, 2})
	write(0, 2, 3, StateBatch{7, 7, DeliveryArchived, 5})
	write(0, 2, 4)
	if code := write(0, 1, 5); code != kerr.FencedLeaderEpoch.Code {
		t.Fatalf("older leader epoch: %d", code)
	}
	want := []StateBatch{{4, 6, DeliveryAvailable, 2}, {7, 7, DeliveryArchived, 5}}
	st, _ := sh.Get(k)
	if st.StartOffset != 4 || !reflect.DeepEqual(st.Batches, want) || st.LeaderEpoch != 2 {
		t.Fatalf("state %+v", st)
	}
	snaps := 0
	for _, r := range log {
		if typ, _, _ := decodeKey(r.Key); typ == recSnapshot {
			snaps++
		}
	}
	if snaps != 2 {
		t.Fatalf("%d snapshots in %d records, want 2 (the first write and the third update)", snaps, len(log))
	}
	re := NewStateShard(nil)
	for _, r := range log {
		if err := re.Replay(r.Key, r.Value); err != nil {
			t.Fatal(err)
		}
	}
	got, ok := re.Get(k)
	if !ok || got.StartOffset != 4 || !reflect.DeepEqual(got.Batches, want) || DeliveryComplete(got) != 1 {
		t.Fatalf("replayed %+v", got)
	}
	rec, apply, _, _ := sh.Initialize(k, 1, 50, 2000)
	apply()
	if code := write(0, 3, 60); code != kerr.FencedStateEpoch.Code {
		t.Fatalf("older state epoch: %d", code)
	}
	if err := re.Replay(rec.Key, rec.Value); err != nil {
		t.Fatal(err)
	}
	recs, apply, ok := re.Delete(k)
	if !ok {
		t.Fatal("nothing to delete")
	}
	apply()
	for _, r := range recs {
		if err := re.Replay(r.Key, r.Value); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok := re.Get(k); ok {
		t.Fatal("state left after its tombstones")
	}
	if err := re.Replay([]byte{0, 0, 0, 9, 'x'}, []byte{1}); err == nil {
		t.Fatal("a malformed key was replayed")
	}
	if err := re.Replay(encodeKey(recSnapshot, k), []byte{0, 0, 1}); err == nil {
		t.Fatal("a malformed value was replayed")
	}
}

// A share-partition's window persisted and restored keeps each record's
// state and delivery count; acquired records come back available.
func TestPartitionSnapshotRestore(t *testing.T) {
	lim := Limits{LockDuration: 1e9, DeliveryLimit: 5, MaxLocks: 100}
	p := NewPartition()
	p.Init(10)
	got := p.Acquire("m", []Batch{{First: 10, Last: 15}}, 10, timeZero, lim)
	if len(got) != 1 {
		t.Fatalf("acquired %v", got)
	}
	if code, msg := p.AcknowledgeMsg("m", []AckBatch{{First: 10, Last: 11, Types: []int8{AckAccept}}}, timeZero, lim); code != 0 {
		t.Fatal(code, msg)
	}
	if code, msg := p.AcknowledgeMsg("m", []AckBatch{{First: 20, Last: 20, Types: []int8{AckAccept}}}, timeZero, lim); code != kerr.InvalidRecordState.Code || msg != msgBatchNotFound {
		t.Fatalf("never acquired: %d %q", code, msg)
	}
	start, bs, _, changed := p.Snapshot()
	if !changed || start != 12 || !reflect.DeepEqual(bs, []StateBatch{{12, 15, DeliveryAvailable, 1}}) {
		t.Fatalf("snapshot %d %v %v", start, bs, changed)
	}
	q := NewPartition()
	q.Restore(start, bs, lim)
	got = q.Acquire("n", []Batch{{First: 10, Last: 15}}, 10, timeZero, lim)
	if len(got) != 1 || got[0].First != 12 || got[0].Last != 15 || got[0].DeliveryCount != 2 {
		t.Fatalf("after restore: %+v", got)
	}
}

var timeZero = time.Unix(1_700_000_000, 0)

// The budget bounds the states and batches the shards hold: past it a
// new state or a write adding batches is INVALID_REQUEST; deleting and
// reloading give entries back; replayed states are always taken.
func TestStateBudget(t *testing.T) {
	b := &Budget{Max: 10}
	a, c := NewStateShard(b), NewStateShard(b)
	key := func(p int32) StateKey { return StateKey{Group: "g", Partition: p} }
	put := func(sh *StateShard, k StateKey, bs []StateBatch) int16 {
		_, apply, code, _ := sh.Write(k, 0, 0, 0, bs, 500, 0)
		if code == 0 {
			apply()
		}
		return code
	}
	for p := range int32(5) {
		if code := put(a, key(p), nil); code != 0 {
			t.Fatalf("state %d: code %d", p, code)
		}
	}
	for p := int32(5); p < 10; p++ {
		if code := put(c, key(p), nil); code != 0 {
			t.Fatalf("state %d: code %d", p, code)
		}
	}
	if b.Used() != 10 {
		t.Fatalf("used %d, want 10", b.Used())
	}
	if code := put(a, key(10), nil); code != kerr.InvalidRequest.Code {
		t.Fatalf("state past the budget: code %d", code)
	}
	if _, _, code, msg := a.Initialize(key(11), 0, 0, 0); code != kerr.InvalidRequest.Code || msg == "" {
		t.Fatalf("initialize past the budget: code %d %q", code, msg)
	}
	if code := put(a, key(0), []StateBatch{{0, 0, DeliveryAcknowledged, 1}, {2, 2, DeliveryAcknowledged, 1}}); code != kerr.InvalidRequest.Code {
		t.Fatalf("batches past the budget: code %d", code)
	}
	_, apply, ok := a.Delete(key(0))
	if !ok {
		t.Fatal("delete found nothing")
	}
	apply()
	if code := put(a, key(10), nil); code != 0 || b.Used() != 10 {
		t.Fatalf("state after a delete: code %d used %d", code, b.Used())
	}
	a.Reset()
	if b.Used() != 5 {
		t.Fatalf("used %d after a reset, want 5", b.Used())
	}
}
