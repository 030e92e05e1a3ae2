package controller

import (
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// bringBackBehindLeader makes broker 1 lose the leadership of partition 0 of
// topic t ([1,2,3]) by a controlled shutdown and restart, then lets leader 2
// add it back to the ISR: the state a preferred election is for. It returns
// the controllers with broker 1's restarted one first, and the partition's
// state once every cache shows broker 1 back in the ISR.
func bringBackBehindLeader(t *testing.T, endpoints []string, cs []*Controller, configure func(*Config)) ([]*Controller, PartitionInfo) {
	t.Helper()
	if err := cs[0].Close(); err != nil {
		t.Fatal(err)
	}
	p := waitPartition(t, cs[1:], "t", 0, "broker 2 to lead", func(p PartitionInfo) bool {
		return p.Leader == 2 && !slices.Contains(p.ISR, 1)
	})
	back := restart(t, endpoints, 1, configure)
	all := []*Controller{back, cs[1], cs[2]}
	for _, c := range all {
		eventually(t, "three active brokers", func() bool { return activeBrokers(c) == 3 })
	}
	if got := partitionOn(t, back, "t", 0); got.Leader != 2 || slices.Contains(got.ISR, 1) {
		t.Fatalf("the restarted broker 1 leads or is in sync at once: %+v", got)
	}
	expanded, err := cs[1].AlterPartition(ctxT(t), "t", 0, p.LeaderEpoch, p.PartitionEpoch, []int32{2, 3, 1})
	if err != nil {
		t.Fatal(err)
	}
	waitPartition(t, all, "t", 0, "every broker to see broker 1 back in the ISR", func(p PartitionInfo) bool {
		return p.PartitionEpoch >= expanded.PartitionEpoch
	})
	return all, expanded
}

// ElectLeaders(preferred) moves leadership back to the preferred replica once
// it is in the ISR, with Kafka's per-partition errors otherwise.
func TestElectLeadersPreferred(t *testing.T) {
	endpoints := sharedEtcd(t)
	cs := startMembers(t, endpoints, 3)
	createAssigned(t, cs[0], "t", [][]int32{{1, 2, 3}, {2, 3, 1}, {1, 3, 2}}, nil)
	// Broker 1 not yet in partition 2's ISR: the election cannot happen.
	if _, err := cs[0].AlterPartition(ctxT(t), "t", 2, 0, 0, []int32{1, 3}); err != nil {
		t.Fatal(err)
	}
	cs, before := bringBackBehindLeader(t, endpoints, cs, nil)

	res, err := cs[2].ElectLeaders(ctxT(t), ElectionPreferred, []TopicPartitions{{"t", []int32{0, 1, 2, 5}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 4 || res[0].Err != nil || res[0].Topic != "t" || res[0].Partition != 0 {
		t.Fatalf("results %+v", res)
	}
	requireCode(t, res[1].Err, kerr.ElectionNotNeeded, "")
	requireCode(t, res[2].Err, kerr.PreferredLeaderNotAvailable, "")
	requireCode(t, res[3].Err, kerr.UnknownTopicOrPartition, "No such partition as t-5")
	after := partitionOn(t, cs[2], "t", 0)
	requirePartition(t, after, 1, []int32{2, 3, 1}, []int32{1, 2, 3}, before.LeaderEpoch+1, before.PartitionEpoch+1)

	// Every partition: those not needing an election are left out.
	res, err = cs[0].ElectLeaders(ctxT(t), ElectionPreferred, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 || res[0].Partition != 2 {
		t.Fatalf("results for every partition %+v, want only partition 2's", res)
	}
	requireCode(t, res[0].Err, kerr.PreferredLeaderNotAvailable, "")
}

// With auto.leader.rebalance.enable the active controller makes the
// preferred election by itself.
func TestAutoLeaderRebalance(t *testing.T) {
	endpoints := sharedEtcd(t)
	rebalance := func(cfg *Config) {
		on := true
		cfg.AutoLeaderRebalanceEnable = &on
		cfg.LeaderImbalanceCheckInterval = 50 * time.Millisecond
	}
	var cs []*Controller
	for id := int32(1); id <= 3; id++ {
		cfg := memberConfig(t, endpoints, id)
		rebalance(&cfg)
		cs = append(cs, startController(t, cfg))
	}
	for _, c := range cs {
		eventually(t, "three active brokers", func() bool { return activeBrokers(c) == 3 })
	}
	createAssigned(t, cs[0], "t", [][]int32{{1, 2, 3}}, nil)
	cs, _ = bringBackBehindLeader(t, endpoints, cs, rebalance)
	waitPartition(t, cs, "t", 0, "the active controller to make broker 1 leader again", func(p PartitionInfo) bool {
		return p.Leader == 1
	})
}

// The imbalance of a broker is the share of the partitions it is the
// preferred replica of that another broker leads; only brokers above the
// percentage get preferred elections, and only for partitions whose
// preferred replica is an active ISR member.
func TestImbalancedPartitions(t *testing.T) {
	c, err := New(Config{NodeID: 1, DataDir: t.TempDir(), Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	part := func(p int32, replicas []int32, leader int32, isr []int32) PartitionInfo {
		return PartitionInfo{Partition: p, Replicas: replicas, Leader: leader, ISR: isr}
	}
	reassigning := part(3, []int32{1, 2, 3}, 2, []int32{1, 2, 3})
	reassigning.AddingReplicas = []int32{3}
	snap := &metadataSnapshot{
		brokers: []BrokerInfo{{NodeID: 1}, {NodeID: 2}, {NodeID: 3, InControlledShutdown: true}},
		tix: newTopicIndex(&TopicInfo{Name: "a", Partitions: []PartitionInfo{
			part(0, []int32{1, 2}, 2, []int32{1, 2}), // broker 1 not leading, in the ISR: candidate
			part(1, []int32{1, 2}, 1, []int32{1, 2}),
			part(2, []int32{1, 2}, 2, []int32{2}),    // not in the ISR
			reassigning,                              // being reassigned
			part(4, []int32{3, 1}, 1, []int32{3, 1}), // preferred replica shutting down
		}}),
	}
	// Broker 1: 3 of 4 partitions led by another broker (75%).
	if got := c.imbalancedPartitions(snap, 10); !slices.Equal(got, []partitionRef{{"a", 0}, {"a", 3}}) {
		t.Fatalf("at 10%%: %v, want [a-0 a-3]", got)
	}
	if got := c.imbalancedPartitions(snap, 75); len(got) != 0 {
		t.Fatalf("at 75%% (not exceeded): %v, want none", got)
	}
	if got := c.imbalancedPartitions(snap, 74); len(got) != 2 {
		t.Fatalf("at 74%%: %v, want [a-0 a-3]", got)
	}
}
