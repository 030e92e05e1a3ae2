package controller

import (
	"slices"
	"testing"
)

// Fixtures of Kafka's PartitionChangeBuilderTest (without ELR).
var (
	fooPartition = PartitionInfo{Replicas: []int32{2, 1, 3}, ISR: []int32{2, 1, 3}, Leader: 1, LeaderEpoch: 100, PartitionEpoch: 200}
	barPartition = PartitionInfo{Replicas: []int32{1, 2, 3, 4}, ISR: []int32{1, 2, 3}, Leader: 1, LeaderEpoch: 100, PartitionEpoch: 200,
		RemovingReplicas: []int32{1}, AddingReplicas: []int32{4}}
	bazPartition     = PartitionInfo{Replicas: []int32{2, 1, 3}, ISR: []int32{1, 3}, Leader: 3, LeaderEpoch: 100, PartitionEpoch: 200}
	offlinePartition = PartitionInfo{Replicas: []int32{2, 1, 3}, ISR: []int32{3}, Leader: -1, LeaderEpoch: 100, PartitionEpoch: 200}
)

func fooChange() *partitionChange {
	return newPartitionChange(fooPartition, func(r int32) bool { return r != 3 })
}
func barChange() *partitionChange {
	return newPartitionChange(barPartition, func(r int32) bool { return r != 3 })
}
func bazChange() *partitionChange {
	return newPartitionChange(bazPartition, func(int32) bool { return true })
}
func offlineChange() *partitionChange {
	return newPartitionChange(offlinePartition, func(r int32) bool { return r == 1 })
}

func with(b *partitionChange, set func(*partitionChange)) *partitionChange { set(b); return b }

func TestPartitionChangeElectLeaderMatchesKafka(t *testing.T) {
	for i, tc := range []struct {
		b       *partitionChange
		leader  int32
		unclean bool
	}{
		{with(fooChange(), func(b *partitionChange) { b.election = electionPreferred }), 2, false},
		{fooChange(), 1, false},
		{with(fooChange(), func(b *partitionChange) { b.election = electionUnclean }), 1, false},
		{with(fooChange(), func(b *partitionChange) { b.targetISR = []int32{1, 3} }), 1, false},
		{with(fooChange(), func(b *partitionChange) { b.election, b.targetISR = electionUnclean, []int32{1, 3} }), 1, false},
		{with(fooChange(), func(b *partitionChange) { b.targetISR = []int32{3} }), -1, false},
		{with(fooChange(), func(b *partitionChange) { b.election, b.targetISR = electionUnclean, []int32{3} }), 2, true},
		{with(fooChange(), func(b *partitionChange) {
			b.election, b.targetISR, b.targetReplicas = electionUnclean, []int32{4}, []int32{2, 1, 3, 4}
		}), 4, false},
		{with(bazChange(), func(b *partitionChange) { b.election = electionPreferred }), 3, false},
		{bazChange(), 3, false},
		{with(bazChange(), func(b *partitionChange) { b.election = electionUnclean }), 3, false},
	} {
		leader, unclean := tc.b.electLeader()
		if leader != tc.leader || unclean != tc.unclean {
			t.Errorf("case %d: elected %d (unclean %v), want %d (unclean %v)", i, leader, unclean, tc.leader, tc.unclean)
		}
	}
}

func TestPartitionChangeNoChange(t *testing.T) {
	for i, b := range []*partitionChange{
		fooChange(),
		with(fooChange(), func(b *partitionChange) { b.election = electionUnclean }),
		barChange(),
		with(barChange(), func(b *partitionChange) { b.election = electionUnclean }),
		with(bazChange(), func(b *partitionChange) { b.election = electionPreferred }),
	} {
		if next, changed := b.build(); changed {
			t.Errorf("case %d: changed to %+v", i, next)
		}
	}
}

// buildExpect builds b and compares the result with want (epochs included).
func buildExpect(t *testing.T, name string, b *partitionChange, want PartitionInfo) {
	t.Helper()
	got, changed := b.build()
	if !changed {
		t.Fatalf("%s: no change", name)
	}
	if got.Leader != want.Leader || !slices.Equal(got.ISR, want.ISR) || !slices.Equal(got.Replicas, want.Replicas) ||
		got.LeaderEpoch != want.LeaderEpoch || got.PartitionEpoch != want.PartitionEpoch ||
		!slices.Equal(got.AddingReplicas, want.AddingReplicas) || !slices.Equal(got.RemovingReplicas, want.RemovingReplicas) {
		t.Fatalf("%s:\n got  %+v\n want %+v", name, got, want)
	}
}

func TestPartitionChangeBuildMatchesKafka(t *testing.T) {
	foo := func(set func(*PartitionInfo)) PartitionInfo {
		p := fooPartition
		p.PartitionEpoch++
		set(&p)
		return p
	}
	// An ISR shrink or expansion bumps only the partition epoch.
	buildExpect(t, "ISR change", with(fooChange(), func(b *partitionChange) { b.targetISR = []int32{2, 1} }),
		foo(func(p *PartitionInfo) { p.ISR = []int32{2, 1} }))
	buildExpect(t, "ISR expansion", with(fooChange(), func(b *partitionChange) { b.targetISR = []int32{2, 1, 3, 4} }),
		foo(func(p *PartitionInfo) { p.ISR = []int32{2, 1, 3, 4} }))
	// The leader leaving the ISR moves leadership and bumps the leader epoch.
	buildExpect(t, "ISR and leader change", with(fooChange(), func(b *partitionChange) { b.targetISR = []int32{2, 3} }),
		foo(func(p *PartitionInfo) { p.ISR, p.Leader, p.LeaderEpoch = []int32{2, 3}, 2, 101 }))
	// Reordering replicas keeps the leader epoch; dropping one bumps it.
	buildExpect(t, "rearranged replicas", with(fooChange(), func(b *partitionChange) { b.targetReplicas = []int32{3, 2, 1} }),
		foo(func(p *PartitionInfo) { p.Replicas = []int32{3, 2, 1} }))
	buildExpect(t, "disjoint replica set", with(fooChange(), func(b *partitionChange) { b.targetReplicas = []int32{2, 1, 4} }),
		foo(func(p *PartitionInfo) { p.Replicas, p.LeaderEpoch = []int32{2, 1, 4}, 101 }))
	// Reassignment steps.
	buildExpect(t, "removing a replica", with(fooChange(), func(b *partitionChange) {
		b.targetReplicas, b.targetRemoving = []int32{1, 2, 3}, []int32{3}
	}), foo(func(p *PartitionInfo) { p.Replicas, p.ISR, p.LeaderEpoch = []int32{1, 2}, []int32{2, 1}, 101 }))
	buildExpect(t, "adding a replica", with(fooChange(), func(b *partitionChange) {
		b.targetReplicas, b.targetAdding = []int32{1, 2, 3, 4}, []int32{4}
	}), foo(func(p *PartitionInfo) { p.Replicas, p.AddingReplicas = []int32{1, 2, 3, 4}, []int32{4} }))
	buildExpect(t, "ISR enlargement completes the reassignment",
		with(barChange(), func(b *partitionChange) { b.targetISR = []int32{1, 2, 3, 4} }),
		PartitionInfo{Replicas: []int32{2, 3, 4}, ISR: []int32{2, 3, 4}, Leader: 2, LeaderEpoch: 101, PartitionEpoch: 201})
	buildExpect(t, "revert", with(barChange(), func(b *partitionChange) {
		b.targetReplicas, b.targetISR, b.targetAdding, b.targetRemoving = []int32{1, 2, 3}, []int32{1, 2, 3}, nil, nil
	}), PartitionInfo{Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}, Leader: 1, LeaderEpoch: 101, PartitionEpoch: 201})
	// Unclean elections reset the ISR to the new leader.
	buildExpect(t, "unclean", with(fooChange(), func(b *partitionChange) { b.election, b.targetISR = electionUnclean, []int32{3} }),
		foo(func(p *PartitionInfo) { p.ISR, p.Leader, p.LeaderEpoch = []int32{2}, 2, 101 }))
	buildExpect(t, "unclean offline", with(offlineChange(), func(b *partitionChange) { b.election = electionUnclean }),
		PartitionInfo{Replicas: []int32{2, 1, 3}, ISR: []int32{1}, Leader: 1, LeaderEpoch: 101, PartitionEpoch: 201})
	buildExpect(t, "unclean offline with a target ISR", with(offlineChange(), func(b *partitionChange) {
		b.election, b.targetISR = electionUnclean, []int32{2}
	}), PartitionInfo{Replicas: []int32{2, 1, 3}, ISR: []int32{1}, Leader: 1, LeaderEpoch: 101, PartitionEpoch: 201})
}

// Kafka's testStoppedLeaderIsDemotedAfterReassignmentCompletesEvenIfNoNewEligibleLeaders.
func TestPartitionChangeDemotesRemovedLeaderWithoutEligibleSuccessor(t *testing.T) {
	part := PartitionInfo{Replicas: []int32{2, 3, 0, 1}, ISR: []int32{0, 1}, Leader: 0,
		RemovingReplicas: []int32{0, 1}, AddingReplicas: []int32{2, 3}}
	b := newPartitionChange(part, func(int32) bool { return false })
	b.targetISR = []int32{0, 1, 2, 3}
	buildExpect(t, "demoted", b, PartitionInfo{Replicas: []int32{2, 3}, ISR: []int32{2, 3}, Leader: -1,
		LeaderEpoch: 1, PartitionEpoch: 1})
}

// leaving is isrAndLeaderChange without ELR, with unclean election or not.
func leaving(p PartitionInfo, acceptable func(int32) bool, unclean bool) (PartitionInfo, bool) {
	b := newPartitionChange(p, acceptable)
	if unclean {
		b.election = electionUnclean
	}
	return isrAndLeaderChange(b)
}

// Without ELR, a partition whose last ISR member leaves keeps it in the ISR
// and goes offline; its return brings the partition back.
func TestIsrAndLeaderChangeKeepsLastISRMember(t *testing.T) {
	p := PartitionInfo{Replicas: []int32{1, 2}, ISR: []int32{1}, Leader: 1, LeaderEpoch: 4, PartitionEpoch: 9}
	gone := func(r int32) bool { return r != 1 }
	next, changed := leaving(p, gone, false)
	if !changed || next.Leader != -1 || !slices.Equal(next.ISR, []int32{1}) || next.LeaderEpoch != 5 || next.PartitionEpoch != 10 {
		t.Fatalf("after losing the last ISR member: %+v", next)
	}
	if _, changed := leaving(next, gone, false); changed {
		t.Fatal("an offline partition changed again without a broker change")
	}
	back, changed := leaving(next, func(int32) bool { return true }, false)
	if !changed || back.Leader != 1 || !slices.Equal(back.ISR, []int32{1}) || back.LeaderEpoch != 6 {
		t.Fatalf("after the last ISR member returned: %+v", back)
	}
	// Broker 2 is not in the ISR: it does not become leader on its own.
	if _, changed := leaving(next, func(r int32) bool { return r == 2 }, false); changed {
		t.Fatal("a replica outside the ISR was elected without unclean election")
	}
	unclean, _ := leaving(next, func(r int32) bool { return r == 2 }, true)
	if unclean.Leader != 2 || !slices.Equal(unclean.ISR, []int32{2}) {
		t.Fatalf("unclean election: %+v", unclean)
	}
	// The current state is never modified.
	if p.Leader != 1 || p.LeaderEpoch != 4 || !slices.Equal(p.ISR, []int32{1}) {
		t.Fatalf("input modified: %+v", p)
	}
}
