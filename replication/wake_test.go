package replication

import "testing"

// TestAppendedNoWakeLeavesFetchesParked: AppendedNoWake moves the high
// watermark (one replica) without signalling parked fetches; WakeFetches
// then signals each once, counting only the waiters not already signalled.
func TestAppendedNoWakeLeavesFetchesParked(t *testing.T) {
	e := newEnv(t, nil, nil)
	e.topic("wake", []int32{1})
	p := leaderOf(t, e, "wake")
	w := NewFetchWaiter()
	p.AddFetchWaiter(w)
	defer p.RemoveFetchWaiter(w)

	if _, err := p.Log().AppendAsLeader(testBatch(2), p.LeaderEpoch()); err != nil {
		t.Fatal(err)
	}
	p.AppendedNoWake()
	if hw := p.Log().HighWatermark(); hw != 2 {
		t.Fatalf("high watermark %d after AppendedNoWake, want 2", hw)
	}
	select {
	case <-w.Wake():
		t.Fatal("AppendedNoWake woke a parked fetch")
	default:
	}
	if n := p.WakeFetches(); n != 1 {
		t.Fatalf("WakeFetches signalled %d waiters, want 1", n)
	}
	if n := p.WakeFetches(); n != 0 {
		t.Fatalf("WakeFetches signalled %d waiters already signalled, want 0", n)
	}
	select {
	case <-w.Wake():
	default:
		t.Fatal("WakeFetches did not wake the parked fetch")
	}
	// Appended still wakes at once.
	produce(t, p, 1)
	select {
	case <-w.Wake():
	default:
		t.Fatal("Appended did not wake the parked fetch")
	}
}
