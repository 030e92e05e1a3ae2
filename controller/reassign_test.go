package controller

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// A reassignment that adds a replica keeps the state in the partition key
// (replicas = target + removing, adding and removing set) until the leader's
// AlterPartition puts the new replica in the ISR, which completes it in the
// same write: the removed replica leaves, the leader moves off it with the
// leader epoch bumped, and the leader that asked hears NEW_LEADER_ELECTED.
func TestReassignmentCompletesThroughAlterPartition(t *testing.T) {
	endpoints := sharedEtcd(t)
	cs := startMembers(t, endpoints, 3)
	createAssigned(t, cs[0], "t", [][]int32{{1, 2}, {2, 1}}, nil)

	res, err := cs[2].AlterPartitionReassignments(ctxT(t), []PartitionReassignment{
		{Topic: "t", Partition: 0, Replicas: []int32{2, 3}},
	}, ReassignmentOptions{})
	if err != nil || len(res) != 1 || res[0].Err != nil {
		t.Fatalf("AlterPartitionReassignments = %+v, %v", res, err)
	}
	p := partitionOn(t, cs[2], "t", 0)
	requirePartition(t, p, 1, []int32{1, 2}, []int32{2, 3, 1}, 0, 1)
	if !slices.Equal(p.AddingReplicas, []int32{3}) || !slices.Equal(p.RemovingReplicas, []int32{1}) {
		t.Fatalf("adding %v removing %v, want [3] and [1]", p.AddingReplicas, p.RemovingReplicas)
	}
	for _, c := range cs {
		eventually(t, "every broker to list the reassignment", func() bool {
			list, err := c.ListPartitionReassignments(ctxT(t), nil)
			return err == nil && len(list) == 1 && list[0].Topic == "t" && list[0].Partition == 0 &&
				slices.Equal(list[0].Replicas, []int32{2, 3, 1}) && slices.Equal(list[0].AddingReplicas, []int32{3}) &&
				slices.Equal(list[0].RemovingReplicas, []int32{1})
		})
	}
	if list, _ := cs[0].ListPartitionReassignments(ctxT(t), []TopicPartitions{{"t", []int32{1, 9}}, {"nope", []int32{0}}}); len(list) != 0 {
		t.Fatalf("listing partitions not being reassigned returned %+v", list)
	}

	// Broker 3 caught up: the leader's ISR expansion completes the move.
	got, err := cs[0].AlterPartition(ctxT(t), "t", 0, 0, 1, []int32{1, 2, 3})
	requireCode(t, err, kerr.NewLeaderElected, "")
	requirePartition(t, got, 2, []int32{2, 3}, []int32{2, 3}, 1, 2)
	if len(got.AddingReplicas) != 0 || len(got.RemovingReplicas) != 0 {
		t.Fatalf("reassignment not cleared: %+v", got)
	}
	waitPartition(t, cs, "t", 0, "every broker to see the completed reassignment", func(p PartitionInfo) bool {
		return slices.Equal(p.Replicas, []int32{2, 3})
	})
	if list, _ := cs[1].ListPartitionReassignments(ctxT(t), nil); len(list) != 0 {
		t.Fatalf("completed reassignment still listed: %+v", list)
	}
}

// Reordering or dropping replicas already in the ISR completes at once.
func TestReassignmentWithinISRCompletesAtOnce(t *testing.T) {
	endpoints := sharedEtcd(t)
	cs := startMembers(t, endpoints, 3)
	createAssigned(t, cs[0], "t", [][]int32{{1, 2, 3}}, nil)
	res, err := cs[0].AlterPartitionReassignments(ctxT(t), []PartitionReassignment{{"t", 0, []int32{3, 1}}}, ReassignmentOptions{})
	if err != nil || res[0].Err != nil {
		t.Fatalf("%+v, %v", res, err)
	}
	// Replica 2 left: the leader epoch is bumped although broker 1 still leads.
	requirePartition(t, partitionOn(t, cs[0], "t", 0), 1, []int32{1, 3}, []int32{3, 1}, 1, 1)
}

// Cancelling reverts to the original replicas and drops the adding ones
// from the ISR; the errors are Kafka's.
func TestReassignmentCancelAndErrors(t *testing.T) {
	endpoints := sharedEtcd(t)
	cs := startMembers(t, endpoints, 3)
	createAssigned(t, cs[0], "t", [][]int32{{1}, {2}}, nil)
	res, err := cs[0].AlterPartitionReassignments(ctxT(t), []PartitionReassignment{
		{"t", 0, []int32{2, 3}},
		{"t", 1, nil},
		{"t", 7, []int32{1}},
		{"nope", 0, []int32{1}},
		{"t", 1, []int32{}},
		{"t", 1, []int32{1, 4}},
		{"t", 1, []int32{1, 1}},
	}, ReassignmentOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Err != nil {
		t.Fatal(res[0].Err)
	}
	requireCode(t, res[1].Err, kerr.NoReassignmentInProgress, "")
	requireCode(t, res[2].Err, kerr.UnknownTopicOrPartition, "Unable to find partition t:7.")
	requireCode(t, res[3].Err, kerr.UnknownTopicOrPartition, "Unable to find a topic named nope.")
	requireCode(t, res[4].Err, kerr.InvalidReplicaAssignment, "The manual partition assignment includes an empty replica list.")
	requireCode(t, res[5].Err, kerr.InvalidReplicaAssignment,
		"The manual partition assignment includes broker 4, but no such broker is registered.")
	requireCode(t, res[6].Err, kerr.InvalidReplicaAssignment,
		"The manual partition assignment includes the broker 1 more than once.")

	p := partitionOn(t, cs[0], "t", 0)
	requirePartition(t, p, 1, []int32{1}, []int32{2, 3, 1}, 0, 1)
	if !slices.Equal(p.AddingReplicas, []int32{2, 3}) || !slices.Equal(p.RemovingReplicas, []int32{1}) {
		t.Fatalf("adding %v removing %v", p.AddingReplicas, p.RemovingReplicas)
	}
	// Broker 2 caught up before the cancellation: it leaves the ISR again.
	if _, err := cs[0].AlterPartition(ctxT(t), "t", 0, 0, 1, []int32{1, 2}); err != nil {
		t.Fatal(err)
	}
	res, err = cs[1].AlterPartitionReassignments(ctxT(t), []PartitionReassignment{{"t", 0, nil}}, ReassignmentOptions{})
	if err != nil || res[0].Err != nil {
		t.Fatalf("cancel: %+v, %v", res, err)
	}
	p = partitionOn(t, cs[1], "t", 0)
	requirePartition(t, p, 1, []int32{1}, []int32{1}, 1, 3)
	if reassignmentInProgress(p) {
		t.Fatalf("cancelled reassignment still in progress: %+v", p)
	}
}

// KIP-860: with DisallowReplicationFactorChange a target must keep the
// replica count, counted during a reassignment on the set it is headed for;
// the assignment itself is checked first.
func TestReassignmentDisallowReplicationFactorChange(t *testing.T) {
	endpoints := sharedEtcd(t)
	cs := startMembers(t, endpoints, 3)
	createAssigned(t, cs[0], "t", [][]int32{{1, 2}}, nil)
	keep := ReassignmentOptions{DisallowReplicationFactorChange: true}
	res, err := cs[0].AlterPartitionReassignments(ctxT(t), []PartitionReassignment{
		{"t", 0, []int32{1}},
		{"t", 0, []int32{1, 1, 2}},
		{"t", 0, []int32{2, 3}},
		{"t", 0, []int32{3, 1, 2}},
	}, keep)
	if err != nil {
		t.Fatal(err)
	}
	requireCode(t, res[0].Err, kerr.InvalidReplicationFactor, "The replication factor is changed from 2 to 1")
	requireCode(t, res[1].Err, kerr.InvalidReplicaAssignment,
		"The manual partition assignment includes the broker 1 more than once.")
	if res[2].Err != nil {
		t.Fatal(res[2].Err)
	}
	// In progress: replicas [2 3 1], adding [3], removing [1], headed for two.
	requireCode(t, res[3].Err, kerr.InvalidReplicationFactor, "The replication factor is changed from 2 to 3")
	p := partitionOn(t, cs[0], "t", 0)
	if !slices.Equal(p.Replicas, []int32{2, 3, 1}) {
		t.Fatalf("replicas %v, want [2 3 1]", p.Replicas)
	}
	// Without the option the count may change.
	res, err = cs[0].AlterPartitionReassignments(ctxT(t), []PartitionReassignment{{"t", 0, []int32{3, 1, 2}}}, ReassignmentOptions{})
	if err != nil || res[0].Err != nil {
		t.Fatalf("%+v, %v", res, err)
	}
}
