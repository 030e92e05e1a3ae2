package controller

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// The leader shrinks and expands the ISR: each change bumps the partition
// epoch only, and is visible in every cache.
func TestAlterPartitionShrinksAndExpandsISR(t *testing.T) {
	endpoints := sharedEtcd(t)
	cs := startMembers(t, endpoints, 3)
	createAssigned(t, cs[0], "t", [][]int32{{2, 1, 3}}, nil)
	leader := cs[1]

	got, err := leader.AlterPartition(ctxT(t), "t", 0, 0, 0, []int32{2, 3})
	if err != nil {
		t.Fatal(err)
	}
	requirePartition(t, got, 2, []int32{2, 3}, []int32{2, 1, 3}, 0, 1)
	requirePartition(t, partitionOn(t, leader, "t", 0), 2, []int32{2, 3}, []int32{2, 1, 3}, 0, 1)
	waitPartition(t, cs, "t", 0, "every cache to show the shrink", func(p PartitionInfo) bool { return p.PartitionEpoch == 1 })

	got, err = leader.AlterPartition(ctxT(t), "t", 0, 0, 1, []int32{2, 3, 1})
	if err != nil {
		t.Fatal(err)
	}
	requirePartition(t, got, 2, []int32{2, 3, 1}, []int32{2, 1, 3}, 0, 2)

	// The same ISR again writes nothing.
	got, err = leader.AlterPartition(ctxT(t), "t", 0, 0, 2, []int32{2, 3, 1})
	if err != nil || got.PartitionEpoch != 2 {
		t.Fatalf("unchanged ISR: %+v, %v", got, err)
	}
}

// Every rejection of Kafka's validateAlterPartitionData, in its order.
func TestAlterPartitionRejections(t *testing.T) {
	endpoints := sharedEtcd(t)
	cs := startMembers(t, endpoints, 3)
	topic := createAssigned(t, cs[0], "t", [][]int32{{1, 2}, {3, 1}}, nil)
	leader := cs[0]
	// Partition 0 at leader epoch 0, partition epoch 1, ISR [1].
	if _, err := leader.AlterPartition(ctxT(t), "t", 0, 0, 0, []int32{1}); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name                        string
		by                          *Controller
		topic                       string
		partition                   int32
		leaderEpoch, partitionEpoch int32
		isr                         []int32
		code                        *kerr.Error
	}{
		{"unknown topic", leader, "nope", 0, 0, 1, []int32{1}, kerr.UnknownTopicOrPartition},
		{"unknown partition", leader, "t", 9, 0, 1, []int32{1}, kerr.UnknownTopicOrPartition},
		{"newer leader epoch", leader, "t", 0, 1, 1, []int32{1}, kerr.NotController},
		{"newer partition epoch", leader, "t", 0, 0, 2, []int32{1}, kerr.NotController},
		{"not the leader", cs[1], "t", 0, 0, 1, []int32{1, 2}, kerr.InvalidRequest},
		{"stale partition epoch", leader, "t", 0, 0, 0, []int32{1, 2}, kerr.InvalidUpdateVersion},
		{"ISR without the leader", leader, "t", 0, 0, 1, []int32{2}, kerr.InvalidRequest},
		{"ISR member not a replica", leader, "t", 0, 0, 1, []int32{1, 3}, kerr.InvalidRequest},
		{"duplicate ISR member", leader, "t", 0, 0, 1, []int32{1, 2, 1}, kerr.InvalidRequest},
	} {
		_, err := tc.by.AlterPartition(ctxT(t), tc.topic, tc.partition, tc.leaderEpoch, tc.partitionEpoch, tc.isr)
		var ke *kerr.Error
		if !asKerr(err, &ke) || ke != tc.code {
			t.Errorf("%s: error %v, want %s", tc.name, err, tc.code.Message)
		}
	}
	// A stale leader epoch is FENCED_LEADER_EPOCH: broker 3 leads partition
	// 1 at epoch 0; broker 1 takes over at epoch 1 when 3 shuts down.
	if err := cs[2].ControlledShutdown(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	requirePartition(t, partitionOn(t, cs[2], "t", 1), 1, []int32{1}, []int32{3, 1}, 1, 1)
	_, err := cs[2].AlterPartition(ctxT(t), "t", 1, 0, 0, []int32{3, 1})
	requireCode(t, err, kerr.FencedLeaderEpoch, "the current leader epoch is 1, not 0")

	// A topic id that does not match is UNKNOWN_TOPIC_ID.
	_, err = leader.AlterPartitionISR(ctxT(t), AlterPartitionRequest{Topic: "t", TopicID: [16]byte{1}, Partition: 0,
		PartitionEpoch: 1, NewISR: []ISRMember{{1, -1}}})
	requireCode(t, err, kerr.UnknownTopicID, "")
	// With the right id the request goes through to the next check.
	_, err = leader.AlterPartitionISR(ctxT(t), AlterPartitionRequest{Topic: "t", TopicID: topic.ID, Partition: 0,
		PartitionEpoch: 1, NewISR: []ISRMember{{1, -1}, {2, 12345}}})
	requireCode(t, err, kerr.IneligibleReplica, "replica 2 in the new ISR [1 2] is ineligible: broker epoch mismatch")
	epoch2 := cs[1].BrokerEpoch()
	got, err := leader.AlterPartitionISR(ctxT(t), AlterPartitionRequest{Topic: "t", TopicID: topic.ID, Partition: 0,
		PartitionEpoch: 1, NewISR: []ISRMember{{1, -1}, {2, epoch2}}})
	if err != nil || !slices.Equal(got.ISR, []int32{1, 2}) {
		t.Fatalf("expansion with the right broker epoch: %+v, %v", got, err)
	}
}

// A broker that is dead or shutting down is never added to an ISR
// (INELIGIBLE_REPLICA, KIP-841).
func TestAlterPartitionRefusesIneligibleReplicas(t *testing.T) {
	t.Parallel() // mostly waiting for leases to expire
	endpoints := sharedEtcd(t)
	cs := startMembers(t, endpoints, 3)
	createAssigned(t, cs[0], "t", [][]int32{{1, 2, 3}}, nil)
	leader := cs[0]
	if _, err := leader.AlterPartition(ctxT(t), "t", 0, 0, 0, []int32{1}); err != nil {
		t.Fatal(err)
	}
	if err := cs[1].ControlledShutdown(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	_, err := leader.AlterPartition(ctxT(t), "t", 0, 0, 1, []int32{1, 2})
	requireCode(t, err, kerr.IneligibleReplica, "replica 2 in the new ISR [1 2] is ineligible: shutting down")

	crash(t, cs[2])
	eventually(t, "broker 3's registration to expire", func() bool { return len(leader.Brokers()) == 2 })
	_, err = leader.AlterPartition(ctxT(t), "t", 0, 0, 1, []int32{1, 3})
	requireCode(t, err, kerr.IneligibleReplica, "replica 3 in the new ISR [1 3] is ineligible: not registered")
	requirePartition(t, partitionOn(t, leader, "t", 0), 1, []int32{1}, []int32{1, 2, 3}, 0, 1)
}

// Controlled shutdown moves every leadership of the broker to another ISR
// member with the leader epoch bumped, takes it out of every ISR it is not
// the last member of (into the ELR), leaves offline the partitions it alone was in sync
// for, and keeps new partitions off it. Close does it by itself.
func TestControlledShutdown(t *testing.T) {
	endpoints := sharedEtcd(t)
	cs := startMembers(t, endpoints, 3)
	createAssigned(t, cs[0], "t", [][]int32{{2, 1, 3}, {1, 2, 3}, {2, 3, 1}}, nil)
	if _, err := cs[1].AlterPartition(ctxT(t), "t", 2, 0, 0, []int32{2}); err != nil {
		t.Fatal(err)
	}
	if err := cs[1].ControlledShutdown(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	// Returned only once its own cache shows the result.
	requirePartition(t, partitionOn(t, cs[1], "t", 0), 1, []int32{1, 3}, []int32{2, 1, 3}, 1, 1)
	requirePartition(t, partitionOn(t, cs[1], "t", 1), 1, []int32{1, 3}, []int32{1, 2, 3}, 0, 1)
	// Its last ISR member gone, the ISR is empty and broker 2 eligible
	// (ELR) and the last known leader.
	p2 := partitionOn(t, cs[1], "t", 2)
	requirePartition(t, p2, -1, nil, []int32{2, 3, 1}, 1, 2)
	requireELR(t, p2, []int32{2}, []int32{2})
	eventually(t, "broker 1 to see broker 2 in controlled shutdown", func() bool {
		for _, b := range cs[0].Brokers() {
			if b.NodeID == 2 {
				return b.InControlledShutdown
			}
		}
		return false
	})
	created, err := cs[0].CreateTopic(ctxT(t), CreateTopicRequest{Name: "later", NumPartitions: 6, ReplicationFactor: 2})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range created.Partitions {
		if slices.Contains(p.Replicas, 2) {
			t.Fatalf("a new partition was placed on the broker shutting down: %+v", p)
		}
	}
	_, err = cs[0].CreateTopic(ctxT(t), CreateTopicRequest{Name: "too-wide", NumPartitions: 1, ReplicationFactor: 3})
	requireCode(t, err, kerr.InvalidReplicationFactor, "Unable to replicate the partition 3 time(s): "+
		"The target replication factor of 3 cannot be reached because only 2 broker(s) are registered.")

	// Close of broker 3, with broker 1 still active, hands its leadership over.
	if err := cs[2].Close(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "broker 3 to be out of every ISR", func() bool {
		for _, topic := range cs[0].Topics() {
			for _, p := range topic.Partitions {
				if p.Leader == 3 || slices.Contains(p.ISR, 3) && len(p.ISR) > 1 {
					return false
				}
			}
		}
		return true
	})
}

func asKerr(err error, ke **kerr.Error) bool {
	ce, ok := err.(*Error)
	if !ok {
		return false
	}
	*ke = ce.Err
	return true
}
