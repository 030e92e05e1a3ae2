package controller

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// A broker whose lease expires loses the leadership of its partitions to the
// next ISR member in replica order, with the leader epoch bumped, and leaves
// the ISR of the partitions it follows with only the partition epoch bumped.
// Only the active controller writes the change. When the broker comes back it
// leads nothing and is in no ISR.
func TestLeaseExpiryMovesLeadershipWithinISR(t *testing.T) {
	t.Parallel() // mostly waiting for leases to expire
	endpoints := sharedEtcd(t)
	cs := startMembers(t, endpoints, 3)
	createAssigned(t, cs[1], "orders", [][]int32{{3, 1, 2}, {1, 2, 3}, {2, 3, 1}}, nil)

	crash(t, cs[2]) // broker 3, a follower controller
	survivors := cs[:2]
	p0 := waitPartition(t, survivors, "orders", 0, "partition 0 to get a new leader", func(p PartitionInfo) bool {
		return p.Leader != 3
	})
	requirePartition(t, p0, 1, []int32{1, 2}, []int32{3, 1, 2}, 1, 1)
	p1 := waitPartition(t, survivors, "orders", 1, "broker 3 to leave partition 1's ISR", func(p PartitionInfo) bool {
		return !slices.Contains(p.ISR, 3)
	})
	requirePartition(t, p1, 1, []int32{1, 2}, []int32{1, 2, 3}, 0, 1)
	p2 := waitPartition(t, survivors, "orders", 2, "broker 3 to leave partition 2's ISR", func(p PartitionInfo) bool {
		return !slices.Contains(p.ISR, 3)
	})
	requirePartition(t, p2, 2, []int32{2, 1}, []int32{2, 3, 1}, 0, 1)
	if got := activeControllers(cs[0], cs[1]); !slices.Equal(got, []int32{1}) {
		t.Fatalf("active controllers %v, want [1]", got)
	}

	// Broker 3 comes back: registered, but leader of nothing and in no ISR
	// until a leader adds it and an election makes it leader.
	back := restart(t, endpoints, 3, nil)
	all := []*Controller{cs[0], cs[1], back}
	eventually(t, "broker 3 registered again", func() bool { return activeBrokers(cs[0]) == 3 })
	for p := int32(0); p < 3; p++ {
		for _, c := range all {
			got := partitionOn(t, c, "orders", p)
			if got.Leader == 3 || slices.Contains(got.ISR, 3) {
				t.Fatalf("broker %d sees partition %d led by or in sync with the restarted broker 3: %+v", c.cfg.NodeID, p, got)
			}
		}
	}
	if b := back.BrokerEpoch(); b <= 0 {
		t.Fatalf("BrokerEpoch() = %d after re-registration", b)
	}
}

// The active controller's crash moves its duties to another broker, which
// handles the crashed broker's partitions itself.
func TestActiveControllerCrashIsHandledByItsSuccessor(t *testing.T) {
	t.Parallel() // mostly waiting for leases to expire
	endpoints := sharedEtcd(t)
	cs := startMembers(t, endpoints, 3)
	createAssigned(t, cs[1], "t", [][]int32{{1, 2, 3}}, nil)
	if got := activeControllers(cs...); !slices.Equal(got, []int32{1}) {
		t.Fatalf("active controllers %v, want [1]", got)
	}
	crash(t, cs[0])
	survivors := cs[1:]
	p := waitPartition(t, survivors, "t", 0, "broker 1's partition to move", func(p PartitionInfo) bool { return p.Leader != 1 })
	requirePartition(t, p, 2, []int32{2, 3}, []int32{1, 2, 3}, 1, 1)
	eventually(t, "broker 2 to be the active controller", func() bool {
		return slices.Equal(activeControllers(survivors...), []int32{2}) &&
			survivors[0].ControllerID() == 2 && survivors[1].ControllerID() == 2
	})
}

// With no live ISR member left the partition has no leader (offline), its
// ISR is empty and the last member is in the ELR and the last known leader
// (KIP-966). Back after a crash (no clean shutdown), it leaves the ELR but,
// as the last known leader, leads again.
func TestNoLiveISRMemberLeavesPartitionOffline(t *testing.T) {
	t.Parallel() // mostly waiting for leases to expire
	endpoints := sharedEtcd(t)
	cs := startMembers(t, endpoints, 2)
	createAssigned(t, cs[0], "t", [][]int32{{1, 2}}, nil)
	// Broker 2 falls behind: leader 1 shrinks the ISR to itself.
	if _, err := cs[0].AlterPartition(ctxT(t), "t", 0, 0, 0, []int32{1}); err != nil {
		t.Fatal(err)
	}
	crash(t, cs[0])
	p := waitPartition(t, cs[1:], "t", 0, "the partition to lose its leader", func(p PartitionInfo) bool { return p.Leader != 1 })
	requirePartition(t, p, -1, nil, []int32{1, 2}, 1, 2)
	requireELR(t, p, []int32{1}, []int32{1})

	// A preferred election cannot help: broker 1 is not registered.
	res, err := cs[1].ElectLeaders(ctxT(t), ElectionPreferred, []TopicPartitions{{"t", []int32{0}}})
	if err != nil {
		t.Fatal(err)
	}
	requireCode(t, res[0].Err, kerr.PreferredLeaderNotAvailable, "")

	back := restart(t, endpoints, 1, nil)
	p = waitPartition(t, []*Controller{cs[1], back}, "t", 0, "broker 1 to lead again", func(p PartitionInfo) bool { return p.Leader == 1 })
	// Leaving the ELR was one change, the election another.
	requirePartition(t, p, 1, []int32{1}, []int32{1, 2}, 2, 4)
	requireELR(t, p, nil, nil)
}

// With unclean.leader.election.enable=true on the topic, a partition whose
// ISR is gone gets the first live replica as leader at once, and the ISR is
// reset to it.
func TestUncleanElectionWhenEnabledForTopic(t *testing.T) {
	t.Parallel() // mostly waiting for leases to expire
	endpoints := sharedEtcd(t)
	cs := startMembers(t, endpoints, 2)
	createAssigned(t, cs[0], "t", [][]int32{{1, 2}}, map[string]string{"unclean.leader.election.enable": "true"})
	if _, err := cs[0].AlterPartition(ctxT(t), "t", 0, 0, 0, []int32{1}); err != nil {
		t.Fatal(err)
	}
	crash(t, cs[0])
	p := waitPartition(t, cs[1:], "t", 0, "an unclean election", func(p PartitionInfo) bool { return p.Leader == 2 })
	requirePartition(t, p, 2, []int32{2}, []int32{1, 2}, 1, 2)
}

// ElectLeaders with the unclean type brings an offline partition back from
// outside the ISR, even with unclean elections disabled for the topic.
func TestElectLeadersUnclean(t *testing.T) {
	t.Parallel() // mostly waiting for leases to expire
	endpoints := sharedEtcd(t)
	cs := startMembers(t, endpoints, 2)
	createAssigned(t, cs[0], "t", [][]int32{{1, 2}, {2, 1}}, nil)
	if _, err := cs[0].AlterPartition(ctxT(t), "t", 0, 0, 0, []int32{1}); err != nil {
		t.Fatal(err)
	}
	crash(t, cs[0])
	waitPartition(t, cs[1:], "t", 0, "the partition to go offline", func(p PartitionInfo) bool { return p.Leader == -1 })
	res, err := cs[1].ElectLeaders(ctxT(t), ElectionUnclean, []TopicPartitions{{"t", []int32{0, 1, 7}}, {"nope", []int32{0}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 4 || res[0].Err != nil {
		t.Fatalf("results %+v", res)
	}
	requireCode(t, res[1].Err, kerr.ElectionNotNeeded, "")
	requireCode(t, res[2].Err, kerr.UnknownTopicOrPartition, "No such partition as t-7")
	requireCode(t, res[3].Err, kerr.UnknownTopicOrPartition, "No such topic as nope")
	// ElectLeaders returns once the cache shows the result.
	requirePartition(t, partitionOn(t, cs[1], "t", 0), 2, []int32{2}, []int32{1, 2}, 2, 3)
	if _, err := cs[1].ElectLeaders(ctxT(t), ElectionType(7), nil); err == nil {
		t.Fatal("an unknown election type was accepted")
	}
}

// BenchmarkFailoverWithDefaultLease measures, with the default 10 s lease,
// the time from a broker's crash to its registration's expiry in a surviving
// broker's cache (bounded by the lease TTL: keepalives every TTL/3, so 2/3
// TTL to TTL after the crash, plus etcd's expiry check period of 500 ms; the
// crash here comes right after a keepalive, the worst case) and from the
// expiry to the new leader in that cache (the active controller's reaction:
// a watch event, one read and one write transaction, a watch event).
//
//	go test -run '^$' -bench FailoverWithDefaultLease -benchtime 1x ./controller/
func BenchmarkFailoverWithDefaultLease(b *testing.B) {
	var expiry, reaction time.Duration
	n := 0
	for b.Loop() {
		e, r := measureFailover(b)
		expiry += e
		reaction += r
		n++
	}
	b.ReportMetric(float64(expiry.Milliseconds())/float64(n), "ms-to-expiry")
	b.ReportMetric(float64(reaction.Microseconds())/1000/float64(n), "ms-expiry-to-leader")
}

// measureFailover runs one crash of a partition's leader with the default
// lease and returns crash -> expiry and expiry -> new leader, as seen in the
// surviving broker's cache.
func measureFailover(b *testing.B) (time.Duration, time.Duration) {
	endpoints := sharedEtcd(b)
	var cs []*Controller
	for id := int32(1); id <= 2; id++ {
		cfg := Config{NodeID: id, Logger: testLogger(), EtcdEndpoints: endpoints,
			Endpoints: []Endpoint{{Name: "PLAINTEXT", Host: "localhost", Port: 9092, SecurityProtocol: "PLAINTEXT"}}}
		c, err := New(cfg)
		if err != nil {
			b.Fatal(err)
		}
		if err := c.Start(context.Background()); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { c.Close() })
		cs = append(cs, c)
	}
	for deadline := time.Now().Add(10 * time.Second); activeBrokers(cs[0]) != 2; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			b.Fatal("brokers not registered")
		}
	}
	if _, err := cs[0].CreateTopic(context.Background(), CreateTopicRequest{Name: "t", NumPartitions: -1,
		ReplicationFactor: -1, Assignments: map[int32][]int32{0: {2, 1}}}); err != nil {
		b.Fatal(err)
	}
	crashed := time.Now()
	crash(b, cs[1])
	var expired, elected time.Time
	for deadline := crashed.Add(3 * DefaultLeaseTTLSeconds * time.Second); elected.IsZero(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			b.Fatal("no failover within three lease TTLs")
		}
		if expired.IsZero() && len(cs[0].Brokers()) == 1 {
			expired = time.Now()
		}
		if info, ok := cs[0].Topic("t"); ok && info.Partitions[0].Leader == 1 {
			elected = time.Now()
		}
	}
	b.Logf("crash -> registration expired in the cache: %v; expired -> new leader in the cache: %v",
		expired.Sub(crashed), elected.Sub(expired))
	return expired.Sub(crashed), elected.Sub(expired)
}

// A broker whose lease expires while it leads and follows many partitions
// (several transactions' worth, written concurrently, those needing a
// leader first) leaves every one of them exactly once: each partition it
// led gets the next ISR member as leader with the leader epoch bumped once,
// each it followed only loses it from the ISR, and every partition epoch is
// bumped once.
func TestLeaseExpiryMovesManyPartitions(t *testing.T) {
	t.Parallel() // mostly waiting for leases to expire
	endpoints := sharedEtcd(t)
	cs := startMembers(t, endpoints, 3)
	const parts = 8 * changeBatchPartitions
	rotations := [][]int32{{1, 2, 3}, {2, 3, 1}, {3, 1, 2}}
	assignment := make([][]int32, parts)
	for i := range assignment {
		assignment[i] = rotations[i%3]
	}
	createAssigned(t, cs[0], "many", assignment, nil)
	crash(t, cs[2]) // broker 3
	survivors := cs[:2]
	eventually(t, "broker 3 gone from every partition", func() bool {
		for _, c := range survivors {
			info, ok := c.Topic("many")
			if !ok {
				return false
			}
			for _, p := range info.Partitions {
				if p.Leader == 3 || slices.Contains(p.ISR, 3) {
					return false
				}
			}
		}
		return true
	})
	for p := int32(0); p < parts; p++ {
		got := partitionOn(t, cs[0], "many", p)
		r := assignment[p]
		wantLeader, wantEpoch := r[0], int32(0)
		if r[0] == 3 {
			wantLeader, wantEpoch = r[1], 1
		}
		wantISR := slices.DeleteFunc(slices.Clone(r), func(id int32) bool { return id == 3 })
		if got.Leader != wantLeader || got.LeaderEpoch != wantEpoch || got.PartitionEpoch != 1 || !slices.Equal(got.ISR, wantISR) {
			t.Errorf("partition %d (replicas %v): leader %d epoch %d partition epoch %d ISR %v; want %d, %d, 1, %v",
				p, r, got.Leader, got.LeaderEpoch, got.PartitionEpoch, got.ISR, wantLeader, wantEpoch, wantISR)
		}
	}
}
