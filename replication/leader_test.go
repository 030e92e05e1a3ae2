package replication

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/strait/strait/controller"
)

func leaderOf(t *testing.T, e *testEnv, topic string) *Partition {
	t.Helper()
	p := e.m.Partition(topic, 0)
	if p == nil || !p.IsLeader() {
		t.Fatalf("%s-0 is not led here: %v", topic, p)
	}
	return p
}

// TestHighWatermarkWaitsForInSyncFollowers: the high watermark is the
// smallest log end offset of the leader and its in-sync followers; a
// replica outside the ISR does not hold it back. An in-sync follower silent
// for longer than replica.lag.time.max.ms still does, until the ISR without
// it is committed (Kafka's maximal ISR): a leader that cannot commit the
// shrink, being cut off from etcd, must not acknowledge alone.
func TestHighWatermarkWaitsForInSyncFollowers(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.ReplicaLagTimeMax = 10 * time.Second }, nil)
	e.topic("hw", []int32{1, 2, 3})
	p := leaderOf(t, e, "hw")

	produce(t, p, 3)
	if hw := p.Log().HighWatermark(); hw != 0 {
		t.Fatalf("high watermark %d before any follower fetched, want 0", hw)
	}
	if !p.FollowerFetched(2, 102, 3, 0) {
		t.Fatal("follower 2 refused")
	}
	if hw := p.Log().HighWatermark(); hw != 0 {
		t.Fatalf("high watermark %d with follower 3 not fetched yet, want 0", hw)
	}
	p.FollowerFetched(3, 103, 2, 0)
	if hw := p.Log().HighWatermark(); hw != 2 {
		t.Fatalf("high watermark %d with followers at 3 and 2, want 2", hw)
	}
	p.FollowerFetched(3, 103, 3, 0)
	if hw := p.Log().HighWatermark(); hw != 3 {
		t.Fatalf("high watermark %d with both followers caught up, want 3", hw)
	}
	if p.FollowerFetched(4, 104, 3, 0) {
		t.Fatal("a broker that is not a replica was accepted as a follower")
	}

	// Follower 3 stops fetching: it holds the high watermark back, past
	// replica.lag.time.max.ms too, until the ISR without it is committed.
	produce(t, p, 2)
	p.FollowerFetched(2, 102, 5, 0)
	if hw := p.Log().HighWatermark(); hw != 3 {
		t.Fatalf("high watermark %d with follower 3 at 3, want 3", hw)
	}
	e.clock.Advance(11 * time.Second)
	p.FollowerFetched(2, 102, 5, 0)
	if hw := p.Log().HighWatermark(); hw != 3 {
		t.Fatalf("high watermark %d after follower 3 lagged past replica.lag.time.max.ms but still in the committed ISR, want 3", hw)
	}
	p.maybeShrinkISR(e.clock.Now())
	waitUntil(t, "the ISR without follower 3 to apply", func() bool { return slices.Equal(p.State().ISR, []int32{1, 2}) })
	if hw := p.Log().HighWatermark(); hw != 5 {
		t.Fatalf("high watermark %d once the ISR without follower 3 is committed, want 5", hw)
	}
}

// TestHighWatermarkIgnoresReplicasOutsideISR: an out-of-sync replica's
// position does not hold the high watermark back.
func TestHighWatermarkIgnoresReplicasOutsideISR(t *testing.T) {
	e := newEnv(t, nil, nil)
	e.isr.apply = false
	e.topic("outside", []int32{1, 2, 3})
	e.meta.setPartition("outside", 0, func(pi *controller.PartitionInfo) { pi.ISR = []int32{1, 2}; pi.PartitionEpoch++ })
	p := leaderOf(t, e, "outside")
	produce(t, p, 4)
	// Follower 2 first: replica 3 fetching at the high watermark would be
	// proposed for the ISR, and a follower joining holds it back
	// (TestHighWatermarkWaitsForAJoiningFollower).
	p.FollowerFetched(2, 102, 4, 0)
	p.FollowerFetched(3, 103, 0, 0)
	if hw := p.Log().HighWatermark(); hw != 4 {
		t.Fatalf("high watermark %d, want 4 (replica 3 is not in the ISR)", hw)
	}
}

// TestAckWaiters: an acks=all waiter completes once the high watermark
// passes its records, times out otherwise, and answers
// NOT_LEADER_OR_FOLLOWER when the leadership ends.
func TestAckWaiters(t *testing.T) {
	e := newEnv(t, nil, nil)
	e.topic("acks", []int32{1, 2})
	p := leaderOf(t, e, "acks")

	info := produce(t, p, 2)
	w := p.AwaitAcks(info.LastOffset + 1)
	if w == nil {
		t.Fatal("no waiter although the follower has nothing")
	}
	select {
	case code := <-w.Done():
		t.Fatalf("waiter completed (%d) before the follower fetched", code)
	default:
	}
	p.FollowerFetched(2, 102, 1, 0)
	select {
	case code := <-w.Done():
		t.Fatalf("waiter completed (%d) with the follower short of its records", code)
	default:
	}
	p.FollowerFetched(2, 102, 2, 0)
	select {
	case code := <-w.Done():
		if code != 0 {
			t.Fatalf("waiter completed with %d, want 0", code)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("waiter not completed once the high watermark passed its records")
	}
	if w := p.AwaitAcks(2); w != nil {
		t.Fatal("a waiter for records already replicated")
	}

	// Timeout: the waiter is dropped.
	info = produce(t, p, 1)
	start := time.Now()
	if err := p.WaitReplicated(info.LastOffset+1, 30*time.Millisecond, nil); !errors.Is(err, kerr.RequestTimedOut) {
		t.Fatalf("WaitReplicated = %v, want REQUEST_TIMED_OUT", err)
	}
	if time.Since(start) < 30*time.Millisecond {
		t.Fatal("WaitReplicated returned before its timeout")
	}
	p.repl.mu.Lock()
	left := len(p.repl.ackWaiters)
	p.repl.mu.Unlock()
	if left != 0 {
		t.Fatalf("%d waiters left after a timeout", left)
	}

	// Cancelled (the broker shuts down).
	cancel := make(chan struct{})
	close(cancel)
	if err := p.WaitReplicated(info.LastOffset+1, time.Minute, cancel); !errors.Is(err, kerr.NotLeaderForPartition) {
		t.Fatalf("WaitReplicated cancelled = %v, want NOT_LEADER_OR_FOLLOWER", err)
	}

	// Leadership moves away: parked waiters answer NOT_LEADER_OR_FOLLOWER.
	w = p.AwaitAcks(info.LastOffset + 1)
	e.meta.setPartition("acks", 0, func(pi *controller.PartitionInfo) { pi.Leader = 2; pi.LeaderEpoch++ })
	select {
	case code := <-w.Done():
		if code != kerr.NotLeaderForPartition.Code {
			t.Fatalf("waiter completed with %d after losing the leadership, want NOT_LEADER_OR_FOLLOWER", code)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("waiter not completed when the leadership ended")
	}
	if w := p.AwaitAcks(info.LastOffset + 1); w == nil || <-w.Done() != kerr.NotLeaderForPartition.Code {
		t.Fatal("a follower parked an acks=all produce")
	}
}

// TestHighWatermarkStaysUnderMinISR: as Kafka 4 (KIP-966), the high
// watermark does not move while the ISR is smaller than min.insync.replicas
// (2 here), even with every ISR member caught up, so an acks=all produce
// appended before the shrink stays parked; the ISR growing back lets it
// complete.
func TestHighWatermarkStaysUnderMinISR(t *testing.T) {
	e := newEnv(t, nil, nil)
	e.isr.apply = false
	e.topic("minisr", []int32{1, 2})
	p := leaderOf(t, e, "minisr")
	if p.NotEnoughReplicas() {
		t.Fatal("ISR of 2 refused with min.insync.replicas=2")
	}
	info := produce(t, p, 1)
	w := p.AwaitAcks(info.LastOffset + 1)
	e.meta.setPartition("minisr", 0, func(pi *controller.PartitionInfo) { pi.ISR = []int32{1}; pi.PartitionEpoch++ })
	if !p.NotEnoughReplicas() {
		t.Fatal("ISR of 1 accepted with min.insync.replicas=2")
	}
	if hw := p.Log().HighWatermark(); hw != 0 {
		t.Fatalf("high watermark %d under min ISR, want 0", hw)
	}
	select {
	case code := <-w.Done():
		t.Fatalf("waiter completed with %d under min ISR", code)
	default:
	}
	e.meta.setPartition("minisr", 0, func(pi *controller.PartitionInfo) { pi.ISR = []int32{1, 2}; pi.PartitionEpoch++ })
	p.FollowerFetched(2, 102, info.LastOffset+1, 0)
	select {
	case code := <-w.Done():
		if code != 0 {
			t.Fatalf("waiter completed with %d, want 0", code)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("waiter not completed once the ISR met min ISR again")
	}
	if hw := p.Log().HighWatermark(); hw != info.LastOffset+1 {
		t.Fatalf("high watermark %d, want %d", hw, info.LastOffset+1)
	}
}

// TestISRShrinksForLaggingFollower: an in-sync follower that has not caught
// up for replica.lag.time.max.ms is dropped from the ISR, not before; once
// it catches up it is added back.
func TestISRShrinksForLaggingFollower(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.ReplicaLagTimeMax = 10 * time.Second }, nil)
	e.topic("shrink", []int32{1, 2, 3})
	p := leaderOf(t, e, "shrink")
	produce(t, p, 3)
	p.FollowerFetched(2, 102, 3, 0) // caught up
	p.FollowerFetched(3, 103, 1, 0) // behind

	e.clock.Advance(9 * time.Second)
	p.FollowerFetched(2, 102, 3, 0)
	p.maybeShrinkISR(e.clock.Now())
	e.isr.noISR(t)

	e.clock.Advance(2 * time.Second)
	p.FollowerFetched(2, 102, 3, 0)
	p.maybeShrinkISR(e.clock.Now())
	if isr := e.isr.awaitISR(t); !slices.Equal(isr, []int32{1, 2}) {
		t.Fatalf("proposed ISR %v, want [1 2]", isr)
	}
	waitUntil(t, "the shrunk ISR to apply", func() bool { return slices.Equal(p.State().ISR, []int32{1, 2}) })

	// Follower 3 catches up to the high watermark: it rejoins.
	p.FollowerFetched(3, 103, 3, 0)
	if isr := e.isr.awaitISR(t); !slices.Equal(isr, []int32{1, 2, 3}) {
		t.Fatalf("proposed ISR %v, want [1 2 3]", isr)
	}
	waitUntil(t, "the expanded ISR to apply", func() bool { return len(p.State().ISR) == 3 })
}

// TestISRShrinkOneAtATime: while a change is in flight no other is
// proposed; a refused one is retried.
func TestISRShrinkOneAtATime(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.ReplicaLagTimeMax = time.Second }, nil)
	e.isr.apply = false
	e.topic("pending", []int32{1, 2, 3})
	p := leaderOf(t, e, "pending")
	e.clock.Advance(2 * time.Second)
	p.maybeShrinkISR(e.clock.Now())
	if isr := e.isr.awaitISR(t); !slices.Equal(isr, []int32{1}) {
		t.Fatalf("proposed ISR %v, want [1]", isr)
	}
	// Not applied yet (the metadata did not come back): no second proposal.
	p.maybeShrinkISR(e.clock.Now())
	e.isr.noISR(t)
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestHighWatermarkWaitsForAJoiningFollower: a follower asked to join the
// ISR holds the high watermark back from the request on, as Kafka's maximal
// ISR counts a pending addition. The controller may elect it as soon as the
// ISR with it is committed (a preferred leader election right after a
// restarted broker caught up); had the high watermark moved past it
// meanwhile, the records acknowledged in between would be lost with that
// election. A run of the exactly-once test lost a __transaction_state
// record this way: the transaction coordinator had acknowledged an EndTxn
// whose epoch bump the next coordinator then did not have, and fenced the
// producer.
func TestHighWatermarkWaitsForAJoiningFollower(t *testing.T) {
	e := newEnv(t, nil, nil)
	e.isr.apply = false // the expansion stays in flight
	e.topic("join", []int32{1, 2, 3})
	e.meta.setPartition("join", 0, func(pi *controller.PartitionInfo) { pi.ISR = []int32{1, 2}; pi.PartitionEpoch++ })
	p := leaderOf(t, e, "join")
	produce(t, p, 3)
	p.FollowerFetched(2, 102, 3, 0)
	if hw := p.Log().HighWatermark(); hw != 3 {
		t.Fatalf("high watermark %d with the ISR [1 2] at 3, want 3", hw)
	}
	// Follower 3 reaches the high watermark: it is proposed for the ISR.
	p.FollowerFetched(3, 103, 3, 0)
	if isr := e.isr.awaitISR(t); !slices.Equal(isr, []int32{1, 2, 3}) {
		t.Fatalf("proposed ISR %v, want [1 2 3]", isr)
	}
	// While the expansion is in flight, follower 2 alone does not move
	// the high watermark past follower 3.
	produce(t, p, 2)
	p.FollowerFetched(2, 102, 5, 0)
	if hw := p.Log().HighWatermark(); hw != 3 {
		t.Fatalf("high watermark %d with follower 3 joining at 3, want 3", hw)
	}
	p.FollowerFetched(3, 103, 5, 0)
	if hw := p.Log().HighWatermark(); hw != 5 {
		t.Fatalf("high watermark %d with every follower at 5, want 5", hw)
	}
}
