package controller

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

func TestAssignReplicasUsesDistinctBrokersAndSpreadsLeaders(t *testing.T) {
	brokers := []BrokerInfo{{NodeID: 1}, {NodeID: 2}, {NodeID: 3}}
	for range 50 {
		assignment, err := assignReplicas(brokers, 6, 3)
		if err != nil {
			t.Fatal(err)
		}
		leaders := map[int32]int{}
		for _, replicas := range assignment {
			if s := slices.Sorted(slices.Values(replicas)); !slices.Equal(s, []int32{1, 2, 3}) {
				t.Fatalf("replicas %v are not three distinct brokers", replicas)
			}
			leaders[replicas[0]]++
		}
		if leaders[1] != 2 || leaders[2] != 2 || leaders[3] != 2 {
			t.Fatalf("leaders %v not spread evenly over %v", leaders, assignment)
		}
	}
}

func TestAssignReplicasSkipsBrokersInControlledShutdown(t *testing.T) {
	brokers := []BrokerInfo{{NodeID: 1}, {NodeID: 2, InControlledShutdown: true}, {NodeID: 3}}
	assignment, err := assignReplicas(brokers, 10, 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, replicas := range assignment {
		if slices.Contains(replicas, 2) {
			t.Fatalf("placed a replica on broker 2, which is shutting down: %v", assignment)
		}
	}
	_, err = assignReplicas(brokers, 1, 3)
	requireCode(t, err, kerr.InvalidReplicationFactor, "Unable to replicate the partition 3 time(s): "+
		"The target replication factor of 3 cannot be reached because only 2 broker(s) are registered.")
}

func TestNewPartitionStates(t *testing.T) {
	active := func(id int32) bool { return id != 3 }
	parts := newPartitionStates(4, [][]int32{{2, 1}, {3, 1, 2}}, active)
	if parts[0].Partition != 4 || parts[0].Leader != 2 || !slices.Equal(parts[0].ISR, []int32{2, 1}) ||
		parts[0].LeaderEpoch != 0 || parts[0].PartitionEpoch != 0 {
		t.Fatalf("partition 4 = %+v", parts[0])
	}
	// The ISR holds the active replicas only, and the leader is its first.
	if parts[1].Partition != 5 || parts[1].Leader != 1 || !slices.Equal(parts[1].ISR, []int32{1, 2}) ||
		!slices.Equal(parts[1].Replicas, []int32{3, 1, 2}) {
		t.Fatalf("partition 5 = %+v", parts[1])
	}
	parts[0].ISR[0] = 9
	if parts[0].Replicas[0] != 2 {
		t.Fatal("ISR aliases the replica list")
	}
}
