package share

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

var t0 = time.Unix(1_700_000_000, 0)

func testLimits() Limits {
	return Limits{LockDuration: 30 * time.Second, DeliveryLimit: 5, MaxLocks: 2000}
}

// oneBatch is a log of n records in one batch from offset 0.
func oneBatch(n int64) []Batch { return []Batch{{First: 0, Last: n - 1}} }

func count(rs []AcquiredRange) int {
	n := 0
	for _, r := range rs {
		n += int(r.Last - r.First + 1)
	}
	return n
}

func TestLockExpiryRedeliversWithDeliveryCountRaised(t *testing.T) {
	lim := testLimits()
	p := NewPartition()
	p.Init(0)
	got := p.Acquire("a", oneBatch(10), 100, t0, lim)
	if len(got) != 1 || got[0] != (AcquiredRange{0, 9, 1}) {
		t.Fatalf("first acquisition %+v, want offsets 0-9 delivered once", got)
	}
	// Still locked: nothing to acquire for another member.
	if got := p.Acquire("b", oneBatch(10), 100, t0.Add(time.Second), lim); len(got) != 0 {
		t.Fatalf("acquired %+v while locked", got)
	}
	// Just before the lock ends the records stay acquired; at its end they
	// are available again.
	p.Expire(t0.Add(lim.LockDuration-time.Millisecond), lim)
	if s, _ := p.State(3); s != Acquired {
		t.Fatalf("offset 3 is %v before the lock expired", s)
	}
	p.Expire(t0.Add(lim.LockDuration), lim)
	if s, dc := p.State(3); s != Available || dc != 1 {
		t.Fatalf("offset 3 is %v (delivery %d) after expiry, want Available (1)", s, dc)
	}
	if off := p.NextFetchOffset(); off != 0 {
		t.Fatalf("next fetch offset %d, want 0", off)
	}
	got = p.Acquire("b", oneBatch(10), 100, t0.Add(lim.LockDuration), lim)
	if len(got) != 1 || got[0] != (AcquiredRange{0, 9, 2}) {
		t.Fatalf("redelivery %+v, want offsets 0-9 with delivery count 2", got)
	}
	// The first member's late acknowledgement is refused, nothing applied.
	if code := p.Acknowledge("a", []AckBatch{{0, 9, []int8{AckAccept}}}, t0.Add(lim.LockDuration), lim); code != kerr.InvalidRecordState.Code {
		t.Fatalf("late ack by the old holder: code %d, want INVALID_RECORD_STATE", code)
	}
	if s, _ := p.State(0); s != Acquired {
		t.Fatalf("offset 0 is %v after a refused ack", s)
	}
}

func TestRejectArchivesAndStartAdvances(t *testing.T) {
	lim := testLimits()
	p := NewPartition()
	p.Init(0)
	p.Acquire("a", oneBatch(6), 100, t0, lim)
	// Reject 0-1, accept 2, release 3, gap 4, accept 5 (one type per offset).
	code := p.Acknowledge("a", []AckBatch{{0, 5, []int8{AckReject, AckReject, AckAccept, AckRelease, AckGap, AckAccept}}}, t0, lim)
	if code != 0 {
		t.Fatalf("ack code %d", code)
	}
	if p.Start() != 3 {
		t.Fatalf("start %d, want 3 (0-2 terminal)", p.Start())
	}
	for off, want := range map[int64]RecordState{3: Available, 4: Archived, 5: Acknowledged} {
		if s, _ := p.State(off); s != want {
			t.Errorf("offset %d is %v, want %v", off, s, want)
		}
	}
	// Only the released record comes again; rejected ones never do.
	got := p.Acquire("b", oneBatch(6), 100, t0, lim)
	if len(got) != 1 || got[0] != (AcquiredRange{3, 3, 2}) {
		t.Fatalf("reacquired %+v, want only offset 3 with delivery 2", got)
	}
	p.Acknowledge("b", []AckBatch{{3, 3, []int8{AckAccept}}}, t0, lim)
	if p.Start() != 6 || p.End() != 6 {
		t.Fatalf("start %d end %d, want 6 and 6", p.Start(), p.End())
	}
}

func TestDeliveryLimitArchives(t *testing.T) {
	lim := testLimits()
	lim.DeliveryLimit = 3
	p := NewPartition()
	p.Init(0)
	now := t0
	for round := int16(1); round <= 3; round++ {
		got := p.Acquire("a", oneBatch(2), 100, now, lim)
		if len(got) != 1 || got[0] != (AcquiredRange{0, 1, round}) {
			t.Fatalf("round %d acquired %+v", round, got)
		}
		if round%2 == 1 {
			p.Acknowledge("a", []AckBatch{{0, 1, []int8{AckRelease}}}, now, lim)
		} else {
			now = now.Add(lim.LockDuration) // let the lock expire instead
			p.Expire(now, lim)
		}
	}
	// Three deliveries: archived at the third release, never delivered again.
	if got := p.Acquire("a", oneBatch(2), 100, now, lim); len(got) != 0 {
		t.Fatalf("acquired %+v past the delivery limit", got)
	}
	if p.Start() != 2 {
		t.Fatalf("start %d, want 2 (both archived)", p.Start())
	}
}

func TestThreeConsumersGetDisjointRecordsCoveringAll(t *testing.T) {
	lim := testLimits()
	const n = 1000
	// Five batches of 200 records each.
	var log []Batch
	for b := int64(0); b < n; b += 200 {
		log = append(log, Batch{First: b, Last: b + 199})
	}
	p := NewPartition()
	p.Init(0)
	seen := map[int64]string{}
	members := []string{"a", "b", "c"}
	for round := 0; round < 1000 && p.Start() < n; round++ {
		m := members[round%3]
		got := p.Acquire(m, log, 37, t0, lim)
		for _, r := range got {
			for off := r.First; off <= r.Last; off++ {
				if prev, ok := seen[off]; ok {
					t.Fatalf("offset %d delivered to %s and %s", off, prev, m)
				}
				seen[off] = m
			}
			if code := p.Acknowledge(m, []AckBatch{{r.First, r.Last, []int8{AckAccept}}}, t0, lim); code != 0 {
				t.Fatalf("ack code %d", code)
			}
		}
	}
	if len(seen) != n {
		t.Fatalf("%d distinct records delivered, want %d", len(seen), n)
	}
	per := map[string]int{}
	for _, m := range seen {
		per[m]++
	}
	for _, m := range members {
		if per[m] == 0 {
			t.Errorf("member %s got nothing: %v", m, per)
		}
	}
}

func TestInFlightWindowBoundsAcquisition(t *testing.T) {
	lim := testLimits()
	lim.MaxLocks = 100
	p := NewPartition()
	p.Init(0)
	got := p.Acquire("a", oneBatch(500), 1000, t0, lim)
	if count(got) != 100 {
		t.Fatalf("acquired %d records, want the window's 100", count(got))
	}
	if !p.WindowFull(lim) {
		t.Fatal("window not full at 100 in flight")
	}
	// Accepting the first 10 makes room for 10 more.
	p.Acknowledge("a", []AckBatch{{0, 9, []int8{AckAccept}}}, t0, lim)
	got = p.Acquire("b", []Batch{{First: 100, Last: 499}}, 1000, t0, lim)
	if len(got) != 1 || got[0] != (AcquiredRange{100, 109, 1}) {
		t.Fatalf("acquired %+v after 10 accepted, want 100-109", got)
	}
}

func TestControlBatchesAndHolesAreArchived(t *testing.T) {
	lim := testLimits()
	p := NewPartition()
	p.Init(0)
	log := []Batch{{First: 0, Last: 2}, {First: 3, Last: 3, Control: true}, {First: 6, Last: 7}}
	got := p.Acquire("a", log, 100, t0, lim)
	want := []AcquiredRange{{0, 2, 1}, {6, 7, 1}}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("acquired %+v, want %+v", got, want)
	}
	for _, off := range []int64{3, 4, 5} {
		if s, _ := p.State(off); s != Archived {
			t.Errorf("offset %d is %v, want Archived", off, s)
		}
	}
}

func TestAcknowledgeValidation(t *testing.T) {
	lim := testLimits()
	p := NewPartition()
	p.Init(0)
	p.Acquire("a", oneBatch(5), 100, t0, lim)
	cases := []struct {
		name  string
		batch AckBatch
		want  int16
	}{
		{"last before first", AckBatch{3, 2, []int8{AckAccept}}, kerr.InvalidRequest.Code},
		{"no types", AckBatch{0, 1, nil}, kerr.InvalidRequest.Code},
		{"types count mismatch", AckBatch{0, 2, []int8{1, 1}}, kerr.InvalidRequest.Code},
		{"unknown type", AckBatch{0, 0, []int8{9}}, kerr.InvalidRequest.Code},
		{"past the end", AckBatch{4, 5, []int8{AckAccept}}, kerr.InvalidRecordState.Code},
	}
	for _, c := range cases {
		if got := p.Acknowledge("a", []AckBatch{c.batch}, t0, lim); got != c.want {
			t.Errorf("%s: code %d, want %d", c.name, got, c.want)
		}
	}
	// Renew restarts the lock.
	if code := p.Acknowledge("a", []AckBatch{{0, 4, []int8{AckRenew}}}, t0.Add(20*time.Second), lim); code != 0 {
		t.Fatalf("renew code %d", code)
	}
	p.Expire(t0.Add(40*time.Second), lim)
	if s, _ := p.State(0); s != Acquired {
		t.Fatalf("offset 0 is %v after a renewed lock's first deadline", s)
	}
	p.ReleaseMember("a", lim)
	if s, dc := p.State(0); s != Available || dc != 1 {
		t.Fatalf("offset 0 is %v (%d) after the member's release", s, dc)
	}
}

func TestHoleWiderThanTheWindowIsSkipped(t *testing.T) {
	lim := testLimits()
	lim.MaxLocks = 100
	p := NewPartition()
	p.Init(0)
	log := []Batch{{First: 0, Last: 9}, {First: 5000, Last: 5009}}
	got := p.Acquire("a", log, 1000, t0, lim)
	if len(got) != 1 || got[0] != (AcquiredRange{0, 9, 1}) {
		t.Fatalf("acquired %+v, want 0-9 (the hole does not fit the window yet)", got)
	}
	p.Acknowledge("a", []AckBatch{{0, 9, []int8{AckAccept}}}, t0, lim)
	got = p.Acquire("a", log[1:], 1000, t0, lim)
	if len(got) != 1 || got[0] != (AcquiredRange{5000, 5009, 1}) {
		t.Fatalf("acquired %+v, want 5000-5009 once nothing is in flight", got)
	}
}

// An acquisition whose state write failed is given back: the records are
// available again with their count as before, so repeated failures never
// reach the delivery limit and archive records nobody received; offsets
// at the end never delivered leave the window.
func TestUnacquireAfterFailedWriteCostsNoDelivery(t *testing.T) {
	lim := testLimits()
	p := NewPartition()
	p.Init(0)
	first := p.Acquire("a", oneBatch(10), 5, t0, lim) // 0-4, count 1
	p.Acknowledge("a", []AckBatch{{0, 1, []int8{AckAccept}}}, t0, lim)
	p.Acknowledge("a", []AckBatch{{2, 4, []int8{AckRelease}}}, t0, lim) // 2-4 available, count 1
	if len(first) != 1 || p.Start() != 2 {
		t.Fatalf("setup: %+v start %d", first, p.Start())
	}
	for i := range 2 * int(lim.DeliveryLimit) {
		got := p.Acquire("b", oneBatch(10), 6, t0, lim) // 2-4 again (count 2), 5-7 new (count 1)
		if count(got) != 6 {
			t.Fatalf("attempt %d acquired %+v, want 6 records", i, got)
		}
		p.Unacquire("b", got)
	}
	for off := int64(2); off <= 4; off++ {
		if s, dc := p.State(off); s != Available || dc != 1 {
			t.Fatalf("offset %d is %v (count %d), want Available (1)", off, s, dc)
		}
	}
	if p.End() != 5 {
		t.Fatalf("window ends at %d, want 5: offsets never delivered left in it", p.End())
	}
	// Records another member took after a lock ran out are not touched.
	got := p.Acquire("b", oneBatch(10), 3, t0, lim)
	p.Expire(t0.Add(lim.LockDuration), lim)
	p.Acquire("c", oneBatch(10), 3, t0.Add(lim.LockDuration), lim)
	p.Unacquire("b", got)
	if s, dc := p.State(2); s != Acquired || dc != 3 {
		t.Fatalf("offset 2 is %v (count %d), want Acquired by c (3)", s, dc)
	}
}

// A written acquisition's locks start when it goes out; a record whose
// lock ran out during the write is taken back unless another member took
// it meanwhile.
func TestConfirmRestartsLocksAndKeepsOthersRecords(t *testing.T) {
	lim := testLimits()
	p := NewPartition()
	p.Init(0)
	got := p.Acquire("a", oneBatch(10), 10, t0, lim)
	late := t0.Add(lim.LockDuration - time.Second)
	if kept := p.Confirm("a", got, late, lim); len(kept) != 1 || kept[0] != (AcquiredRange{0, 9, 1}) {
		t.Fatalf("confirmed %+v, want 0-9", kept)
	}
	p.Expire(t0.Add(lim.LockDuration), lim)
	if s, _ := p.State(0); s != Acquired {
		t.Fatalf("offset 0 is %v at the first lock's end, want still Acquired", s)
	}
	p.Expire(late.Add(lim.LockDuration), lim) // released
	got = p.Acquire("a", oneBatch(10), 10, late.Add(lim.LockDuration), lim)
	p.Expire(late.Add(2*lim.LockDuration), lim)
	p.Acquire("b", oneBatch(10), 4, late.Add(2*lim.LockDuration), lim) // 0-3 to b
	kept := p.Confirm("a", got, late.Add(2*lim.LockDuration), lim)
	if len(kept) != 1 || kept[0] != (AcquiredRange{4, 9, 2}) {
		t.Fatalf("confirmed %+v after the locks ran out, want 4-9 taken back (0-3 went to b)", kept)
	}
	if code := p.Acknowledge("a", []AckBatch{{4, 9, []int8{AckAccept}}}, late.Add(2*lim.LockDuration), lim); code != 0 {
		t.Fatalf("ack of the records taken back: code %d", code)
	}
	if code := p.Acknowledge("a", []AckBatch{{0, 0, []int8{AckAccept}}}, late.Add(2*lim.LockDuration), lim); code == 0 {
		t.Fatal("a acknowledged a record b holds")
	}
}

// A write of a share-partition waiting behind another gives up at its
// deadline.
func TestWriteLockByGivesUpAtDeadline(t *testing.T) {
	p := NewPartition()
	if !p.WriteLockBy(time.Time{}) {
		t.Fatal("first write lock refused")
	}
	start := time.Now()
	if p.WriteLockBy(start.Add(50 * time.Millisecond)) {
		t.Fatal("second write lock granted while the first is held")
	}
	if d := time.Since(start); d < 40*time.Millisecond || d > 5*time.Second {
		t.Fatalf("gave up after %v, want about 50ms", d)
	}
	p.WriteUnlock()
	if !p.WriteLockBy(time.Now().Add(time.Second)) {
		t.Fatal("write lock refused once free")
	}
	p.WriteUnlock()
}

// An acknowledgement held for its write (AcknowledgeHeld) is rolled back
// when the write fails (Settle false), as Kafka's SharePartition rolls a
// transition back: the records are acquired by the member again with the
// lock and delivery count they had, and the start, which does not move
// while the write is under way, stays. A record changed since (released
// by the acknowledgement, then acquired by another member) is left alone.
// A successful write moves the start then.
func TestAcknowledgeRolledBackWhenItsWriteFails(t *testing.T) {
	lim := testLimits()
	p := NewPartition()
	p.Init(0)
	p.Acquire("a", oneBatch(10), 10, t0, lim) // 0-9, count 1
	code, _, undo := p.AcknowledgeHeld("a", []AckBatch{{0, 3, []int8{AckAccept}}, {4, 5, []int8{AckRelease}}, {6, 6, []int8{AckReject}}}, t0, lim)
	if code != 0 || undo == nil {
		t.Fatalf("acknowledge: code %d", code)
	}
	if p.Start() != 0 {
		t.Fatalf("start moved to %d while the write is under way", p.Start())
	}
	// Another member takes the released 4-5 before the write fails.
	if got := p.Acquire("b", oneBatch(10), 1, t0.Add(time.Second), lim); len(got) != 1 || got[0] != (AcquiredRange{4, 4, 2}) {
		t.Fatalf("b acquired %+v, want 4 (count 2)", got)
	}
	p.Settle(undo, false)
	for _, off := range []int64{0, 1, 2, 3, 5, 6} {
		if s, dc := p.State(off); s != Acquired || dc != 1 {
			t.Fatalf("offset %d after the failed write: %v (count %d), want Acquired (1)", off, s, dc)
		}
	}
	if s, dc := p.State(4); s != Acquired || dc != 2 || p.recs[4].member != "b" {
		t.Fatalf("offset 4 after the failed write: %v (count %d, member %q), want b's (2)", s, dc, p.recs[4].member)
	}
	if p.Start() != 0 || p.recs[0].deadline != t0.Add(lim.LockDuration) {
		t.Fatalf("start %d, lock %v after the rollback", p.Start(), p.recs[0].deadline)
	}
	// Acknowledged again, written this time: the start moves past 0-3.
	code, _, undo = p.AcknowledgeHeld("a", []AckBatch{{0, 3, []int8{AckAccept}}}, t0, lim)
	if code != 0 {
		t.Fatalf("second acknowledge: %d", code)
	}
	p.Settle(undo, true)
	if p.Start() != 4 {
		t.Fatalf("start %d after the written acknowledgement, want 4", p.Start())
	}
	// A refused acknowledgement holds nothing.
	if code, _, undo := p.AcknowledgeHeld("a", []AckBatch{{0, 0, []int8{AckAccept}}}, t0, lim); code != kerr.InvalidRecordState.Code || undo != nil || p.holds != 0 {
		t.Fatalf("refused acknowledge: code %d undo %v holds %d", code, undo, p.holds)
	}
}
