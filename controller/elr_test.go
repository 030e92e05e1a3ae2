package controller

import (
	"slices"
	"testing"
)

// The eligible leader replicas transitions, against the ELR cases of
// Kafka's PartitionChangeBuilderTest (testEligibleLeaderReplicas_*, with
// their useLastKnownLeaderInBalancedRecovery setting) and the broker
// lifecycle sequences of KIP-966.
func TestELRTransitionsMatchKafka(t *testing.T) {
	notIn := func(ids ...int32) func(int32) bool {
		return func(r int32) bool { return !slices.Contains(ids, r) }
	}
	none := func(int32) bool { return false }
	all := func(int32) bool { return true }
	r1234 := []int32{1, 2, 3, 4}
	for _, tc := range []struct {
		name       string
		cur        PartitionInfo
		acceptable func(int32) bool
		minISR     int
		election   election
		targetISR  []int32 // nil: unchanged
		emptyISR   bool    // target ISR set to empty
		unclean    []int32 // unclean shutdown replicas
		noLKL      bool    // useLastKnownLeaderInBalancedRecovery false
		want       *PartitionInfo
	}{
		{
			name:       "IsrShrinkBelowMinISR",
			cur:        PartitionInfo{Replicas: r1234, ISR: r1234, Leader: 1, LeaderEpoch: 100, PartitionEpoch: 200},
			acceptable: notIn(3), minISR: 3, election: electionPreferred, targetISR: []int32{1, 2}, noLKL: true,
			want: &PartitionInfo{Replicas: r1234, ISR: []int32{1, 2}, ELR: []int32{3, 4}, Leader: 1, LeaderEpoch: 100, PartitionEpoch: 201},
		},
		{
			name: "IsrExpandAboveMinISR",
			cur: PartitionInfo{Replicas: r1234, ISR: []int32{1, 2}, ELR: []int32{3}, LastKnownELR: []int32{4},
				Leader: 1, LeaderEpoch: 100, PartitionEpoch: 200},
			acceptable: notIn(3), minISR: 3, election: electionPreferred, targetISR: []int32{1, 2, 3}, noLKL: true,
			want: &PartitionInfo{Replicas: r1234, ISR: []int32{1, 2, 3}, Leader: 1, LeaderEpoch: 100, PartitionEpoch: 201},
		},
		{
			name: "IsrExpandAboveMinISR, last known leader kept",
			cur: PartitionInfo{Replicas: r1234, ISR: []int32{1, 2}, ELR: []int32{3}, LastKnownELR: []int32{4},
				Leader: 1, LeaderEpoch: 100, PartitionEpoch: 200},
			acceptable: notIn(3), minISR: 3, election: electionPreferred, targetISR: []int32{1, 2, 3},
			want: &PartitionInfo{Replicas: r1234, ISR: []int32{1, 2, 3}, Leader: 1, LeaderEpoch: 100, PartitionEpoch: 201},
		},
		{
			name: "IsrAddNewMemberNotInELR",
			cur: PartitionInfo{Replicas: r1234, ISR: []int32{1}, ELR: []int32{3}, LastKnownELR: []int32{2},
				Leader: 1, LeaderEpoch: 100, PartitionEpoch: 200},
			acceptable: notIn(3), minISR: 3, election: electionPreferred, targetISR: []int32{1, 4}, noLKL: true,
			want: &PartitionInfo{Replicas: r1234, ISR: []int32{1, 4}, ELR: []int32{3}, LastKnownELR: []int32{2},
				Leader: 1, LeaderEpoch: 100, PartitionEpoch: 201},
		},
		{
			name:       "RemoveUncleanShutdownReplicasFromElr",
			cur:        PartitionInfo{Replicas: r1234, ISR: []int32{1}, ELR: []int32{2, 3}, Leader: 1, LeaderEpoch: 100, PartitionEpoch: 200},
			acceptable: notIn(3), minISR: 3, election: electionPreferred, unclean: []int32{3}, noLKL: true,
			want: &PartitionInfo{Replicas: r1234, ISR: []int32{1}, ELR: []int32{2}, LastKnownELR: []int32{3},
				Leader: 1, LeaderEpoch: 100, PartitionEpoch: 201},
		},
		{
			name:       "ElrCanBeElected",
			cur:        PartitionInfo{Replicas: r1234, ISR: []int32{1}, ELR: []int32{3}, Leader: 1, LeaderEpoch: 100, PartitionEpoch: 200},
			acceptable: notIn(1), minISR: 3, election: electionPreferred, emptyISR: true,
			want: &PartitionInfo{Replicas: r1234, ISR: []int32{3}, ELR: []int32{1}, Leader: 3, LeaderEpoch: 101, PartitionEpoch: 201},
		},
		{
			name: "ElrCanBeElected, last known ELR",
			cur: PartitionInfo{Replicas: r1234, ISR: []int32{1}, ELR: []int32{3}, LastKnownELR: []int32{2},
				Leader: 1, LeaderEpoch: 100, PartitionEpoch: 200},
			acceptable: notIn(1), minISR: 3, election: electionPreferred, emptyISR: true, noLKL: true,
			want: &PartitionInfo{Replicas: r1234, ISR: []int32{3}, ELR: []int32{1}, LastKnownELR: []int32{2},
				Leader: 3, LeaderEpoch: 101, PartitionEpoch: 201},
		},
		{
			name:       "IsrCanShrinkToZero",
			cur:        PartitionInfo{Replicas: r1234, ISR: r1234, Leader: 1, LeaderEpoch: 100, PartitionEpoch: 200},
			acceptable: none, minISR: 3, election: electionPreferred, emptyISR: true,
			want: &PartitionInfo{Replicas: r1234, ELR: r1234, LastKnownELR: []int32{1}, Leader: -1, LeaderEpoch: 101, PartitionEpoch: 201},
		},
		{
			name:       "IsrCanShrinkToZero, last known ELR",
			cur:        PartitionInfo{Replicas: r1234, ISR: r1234, Leader: 1, LeaderEpoch: 100, PartitionEpoch: 200},
			acceptable: none, minISR: 3, election: electionPreferred, emptyISR: true, noLKL: true,
			want: &PartitionInfo{Replicas: r1234, ELR: r1234, Leader: -1, LeaderEpoch: 101, PartitionEpoch: 201},
		},
		{
			name: "IsrCanShrinkToZero, then an unclean shutdown keeps the last known leader",
			cur: PartitionInfo{Replicas: r1234, ELR: r1234, LastKnownELR: []int32{1}, Leader: -1,
				LeaderEpoch: 101, PartitionEpoch: 201},
			acceptable: none, minISR: 3, election: electionPreferred, unclean: []int32{2},
			want: &PartitionInfo{Replicas: r1234, ELR: []int32{1, 3, 4}, LastKnownELR: []int32{1}, Leader: -1,
				LeaderEpoch: 101, PartitionEpoch: 202},
		},
		{
			name:       "ElectLastKnownLeader",
			cur:        PartitionInfo{Replicas: r1234, LastKnownELR: []int32{1}, Leader: -1, LeaderEpoch: 100, PartitionEpoch: 200},
			acceptable: all, minISR: 3, election: electionPreferred, emptyISR: true,
			want: &PartitionInfo{Replicas: r1234, ISR: []int32{1}, Leader: 1, LeaderEpoch: 101, PartitionEpoch: 201},
		},
		{
			name: "ElectLastKnownLeaderShouldFail",
			cur: PartitionInfo{Replicas: r1234, ELR: []int32{3}, LastKnownELR: []int32{1}, Leader: -1,
				LeaderEpoch: 100, PartitionEpoch: 200},
			acceptable: notIn(3), minISR: 3, election: electionPreferred, emptyISR: true,
		},
		{
			// Kafka's check only logs here; its documentation says an
			// unfenced last leader: a fenced one is not elected.
			name:       "last known leader not acceptable",
			cur:        PartitionInfo{Replicas: r1234, LastKnownELR: []int32{1}, Leader: -1, LeaderEpoch: 100, PartitionEpoch: 200},
			acceptable: notIn(1), minISR: 3, emptyISR: true,
		},
		{
			name: "unclean election clears the ELR",
			cur: PartitionInfo{Replicas: []int32{1, 2, 3}, ELR: []int32{2}, LastKnownELR: []int32{1}, Leader: -1,
				LeaderEpoch: 5, PartitionEpoch: 7},
			acceptable: notIn(1, 2), minISR: 2, election: electionUnclean, emptyISR: true,
			want: &PartitionInfo{Replicas: []int32{1, 2, 3}, ISR: []int32{3}, Leader: 3, LeaderEpoch: 6, PartitionEpoch: 8},
		},
		{
			name: "without unclean election an ELR-less partition stays offline",
			cur: PartitionInfo{Replicas: []int32{1, 2, 3}, ELR: []int32{2}, LastKnownELR: []int32{1}, Leader: -1,
				LeaderEpoch: 5, PartitionEpoch: 7},
			acceptable: notIn(1, 2), minISR: 2, emptyISR: true,
		},
		{
			name:       "an ISR at min ISR keeps the ELR empty",
			cur:        PartitionInfo{Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}, Leader: 1, LeaderEpoch: 5, PartitionEpoch: 7},
			acceptable: all, minISR: 2, targetISR: []int32{1, 2},
			want: &PartitionInfo{Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2}, Leader: 1, LeaderEpoch: 5, PartitionEpoch: 8},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newPartitionChange(tc.cur, tc.acceptable).withELR(tc.minISR)
			b.election, b.uncleanShutdown, b.noLastKnownLeader = tc.election, tc.unclean, tc.noLKL
			if tc.targetISR != nil {
				b.targetISR = tc.targetISR
			}
			if tc.emptyISR {
				b.targetISR = []int32{}
			}
			got, changed := b.build()
			if tc.want == nil {
				if changed {
					t.Fatalf("changed to %+v, want no change", got)
				}
				return
			}
			if !changed {
				t.Fatal("no change")
			}
			checkPartition(t, got, *tc.want)
		})
	}
}

func checkPartition(t *testing.T, got, want PartitionInfo) {
	t.Helper()
	if got.Leader != want.Leader || !slices.Equal(got.ISR, want.ISR) || !slices.Equal(got.ELR, want.ELR) ||
		!slices.Equal(got.LastKnownELR, want.LastKnownELR) || !slices.Equal(got.Replicas, want.Replicas) ||
		got.LeaderEpoch != want.LeaderEpoch || got.PartitionEpoch != want.PartitionEpoch {
		t.Fatalf("got leader %d epoch %d isr %v elr %v lastKnownElr %v partition epoch %d; want leader %d epoch %d isr %v elr %v lastKnownElr %v partition epoch %d",
			got.Leader, got.LeaderEpoch, got.ISR, got.ELR, got.LastKnownELR, got.PartitionEpoch,
			want.Leader, want.LeaderEpoch, want.ISR, want.ELR, want.LastKnownELR, want.PartitionEpoch)
	}
}

// The KIP-966 sequence of the three-broker test, as the broker lifecycle
// applies it (isrAndLeaderChange) with min.insync.replicas 2: followers
// leave one by one, then the leader; a follower that left cleanly comes
// back and leads from the ELR; one that comes back after an unclean
// shutdown leaves the ELR instead.
func TestELRBrokerLifecycle(t *testing.T) {
	up := map[int32]bool{1: true, 2: true, 3: true}
	active := func(r int32) bool { return up[r] }
	step := func(p PartitionInfo, unclean int32) PartitionInfo {
		t.Helper()
		b := newPartitionChange(p, active).withELR(2)
		if unclean >= 0 {
			b.uncleanShutdown = []int32{unclean}
		}
		next, _ := isrAndLeaderChange(b)
		return next
	}
	p := PartitionInfo{Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}, Leader: 1, LeaderEpoch: 0, PartitionEpoch: 0}
	up[3] = false
	p = step(p, -1)
	checkPartition(t, p, PartitionInfo{Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2}, Leader: 1, LeaderEpoch: 0, PartitionEpoch: 1})
	up[2] = false
	p = step(p, -1)
	checkPartition(t, p, PartitionInfo{Replicas: []int32{1, 2, 3}, ISR: []int32{1}, ELR: []int32{2}, Leader: 1, LeaderEpoch: 0, PartitionEpoch: 2})
	up[1] = false
	p = step(p, -1)
	offline := PartitionInfo{Replicas: []int32{1, 2, 3}, ELR: []int32{1, 2}, LastKnownELR: []int32{1}, Leader: -1, LeaderEpoch: 1, PartitionEpoch: 3}
	checkPartition(t, p, offline)
	// Broker 3 left before the ISR fell below 2: not eligible.
	up[3] = true
	if next, changed := isrAndLeaderChange(newPartitionChange(p, active).withELR(2)); changed {
		t.Fatalf("broker 3 (not eligible) changed the partition: %+v", next)
	}
	// Broker 2 returns after a clean shutdown: it leads from the ELR.
	up[2] = true
	led := step(p, -1)
	checkPartition(t, led, PartitionInfo{Replicas: []int32{1, 2, 3}, ISR: []int32{2}, ELR: []int32{1}, Leader: 2, LeaderEpoch: 2, PartitionEpoch: 4})
	// The ISR growing back to min ISR clears the ELR.
	b := newPartitionChange(led, active).withELR(2)
	b.targetISR = []int32{2, 3}
	grown, _ := b.build()
	checkPartition(t, grown, PartitionInfo{Replicas: []int32{1, 2, 3}, ISR: []int32{2, 3}, Leader: 2, LeaderEpoch: 2, PartitionEpoch: 5})
	// Instead after an unclean shutdown, broker 2 first leaves the ELR
	// (fenced meanwhile), and broker 1, the last leader, leads once back.
	up[2] = false
	gone := step(p, 2)
	checkPartition(t, gone, PartitionInfo{Replicas: []int32{1, 2, 3}, ELR: []int32{1}, LastKnownELR: []int32{1}, Leader: -1, LeaderEpoch: 1, PartitionEpoch: 4})
	up[2], up[1] = true, true
	back := step(gone, -1)
	checkPartition(t, back, PartitionInfo{Replicas: []int32{1, 2, 3}, ISR: []int32{1}, Leader: 1, LeaderEpoch: 2, PartitionEpoch: 5})
}

// A follower that leaves while the ISR is at min.insync.replicas becomes
// eligible (ELR); after a clean shutdown (Close) and with the ISR emptied,
// it comes back and leads from the ELR, the ISR then just itself. A change
// of min.insync.replicas clears the ELR.
func TestCleanShutdownKeepsELR(t *testing.T) {
	t.Parallel()
	endpoints := sharedEtcd(t)
	cs := startMembers(t, endpoints, 3)
	createAssigned(t, cs[0], "t", [][]int32{{1, 2, 3}}, map[string]string{"min.insync.replicas": "2"})
	// Broker 3 falls behind: the ISR is at min ISR, nobody is eligible.
	if _, err := cs[0].AlterPartition(ctxT(t), "t", 0, 0, 0, []int32{1, 2}); err != nil {
		t.Fatal(err)
	}
	requireELR(t, partitionOn(t, cs[0], "t", 0), nil, nil)
	if err := cs[1].Close(); err != nil {
		t.Fatal(err)
	}
	p := waitPartition(t, []*Controller{cs[0], cs[2]}, "t", 0, "broker 2 to leave the ISR",
		func(p PartitionInfo) bool { return len(p.ISR) == 1 })
	requirePartition(t, p, 1, []int32{1}, []int32{1, 2, 3}, 0, 2)
	requireELR(t, p, []int32{2}, nil)
	if err := cs[0].Close(); err != nil {
		t.Fatal(err)
	}
	p = waitPartition(t, cs[2:], "t", 0, "broker 1 to leave the ISR", func(p PartitionInfo) bool { return len(p.ISR) == 0 })
	requirePartition(t, p, -1, nil, []int32{1, 2, 3}, 1, 3)
	requireELR(t, p, []int32{1, 2}, []int32{1})

	back := restart(t, endpoints, 2, nil)
	p = waitPartition(t, []*Controller{cs[2], back}, "t", 0, "broker 2 to lead from the ELR",
		func(p PartitionInfo) bool { return p.Leader == 2 })
	requirePartition(t, p, 2, []int32{2}, []int32{1, 2, 3}, 2, 4)
	requireELR(t, p, []int32{1}, nil)

	// A new min.insync.replicas clears the ELR (Kafka's ClearElrRecord).
	err := back.UpdateTopicConfigs(ctxT(t), "t", func(cur map[string]string) (map[string]string, error) {
		cur["min.insync.replicas"] = "3"
		return cur, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	p = partitionOn(t, back, "t", 0)
	requirePartition(t, p, 2, []int32{2}, []int32{1, 2, 3}, 2, 5)
	requireELR(t, p, nil, nil)
}

// A broker whose lease lapsed (Pause: no keepalives) leaves the ISR into the
// ELR; registering again from the same process is no unclean shutdown, so
// it stays eligible and leads once the last ISR member goes.
func TestLostLeaseKeepsELR(t *testing.T) {
	t.Parallel() // mostly waiting for a lease to expire
	endpoints := sharedEtcd(t)
	cs := startMembers(t, endpoints, 3)
	createAssigned(t, cs[0], "t", [][]int32{{1, 2, 3}}, map[string]string{"min.insync.replicas": "2"})
	if _, err := cs[0].AlterPartition(ctxT(t), "t", 0, 0, 0, []int32{1, 2}); err != nil {
		t.Fatal(err)
	}
	cs[1].Pause()
	p := waitPartition(t, []*Controller{cs[0], cs[2]}, "t", 0, "broker 2's lease to expire",
		func(p PartitionInfo) bool { return len(p.ISR) == 1 })
	requirePartition(t, p, 1, []int32{1}, []int32{1, 2, 3}, 0, 2)
	requireELR(t, p, []int32{2}, nil)
	cs[1].Resume()
	eventually(t, "broker 2 registered again", func() bool { return activeBrokers(cs[0]) == 3 })
	requireELR(t, partitionOn(t, cs[0], "t", 0), []int32{2}, nil)

	if err := cs[0].Close(); err != nil {
		t.Fatal(err)
	}
	p = waitPartition(t, cs[1:], "t", 0, "broker 2 to lead from the ELR", func(p PartitionInfo) bool { return p.Leader == 2 })
	requirePartition(t, p, 2, []int32{2}, []int32{1, 2, 3}, 1, 3)
	requireELR(t, p, []int32{1}, nil)
}

// eligible.leader.replicas.version stored at 0 (kafka-features downgrade)
// turns ELR off: a follower leaving an ISR at min ISR is not made eligible,
// and the ISR keeps its last member. Back at 1, ELR is maintained again.
func TestELRFollowsFeatureLevel(t *testing.T) {
	t.Parallel()
	endpoints := sharedEtcd(t)
	cs := startMembers(t, endpoints, 3)
	setELR := func(level int16) {
		t.Helper()
		err := cs[0].UpdateFeatures(ctxT(t), func(FinalizedFeatures) (map[string]int16, error) {
			return map[string]int16{elrFeature: level}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cs {
			eventually(t, "the feature level to reach every controller", func() bool {
				l, ok := c.FinalizedFeatures().Levels[elrFeature]
				return ok && l == level
			})
		}
	}
	createAssigned(t, cs[0], "t", [][]int32{{1, 2, 3}}, map[string]string{"min.insync.replicas": "2"})
	setELR(0)
	if _, err := cs[0].AlterPartition(ctxT(t), "t", 0, 0, 0, []int32{1, 2}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs[0].AlterPartition(ctxT(t), "t", 0, 0, 1, []int32{1}); err != nil {
		t.Fatal(err)
	}
	p := partitionOn(t, cs[0], "t", 0)
	requirePartition(t, p, 1, []int32{1}, []int32{1, 2, 3}, 0, 2)
	requireELR(t, p, nil, nil)

	setELR(1)
	if _, err := cs[0].AlterPartition(ctxT(t), "t", 0, 0, 2, []int32{1, 2}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs[0].AlterPartition(ctxT(t), "t", 0, 0, 3, []int32{1}); err != nil {
		t.Fatal(err)
	}
	requireELR(t, partitionOn(t, cs[0], "t", 0), []int32{2}, nil)
}
