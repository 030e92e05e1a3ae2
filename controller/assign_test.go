package controller

import (
	"slices"
	"testing"
)

// The expectations are Kafka's AdminUtils rack-unaware assignment with a fixed
// start index of 0 (as in Kafka's own tests).
func TestAssignReplicasRackUnawareMatchesKafka(t *testing.T) {
	got := assignReplicasRackUnaware([]int32{0, 1, 2, 3, 4}, 10, 3, 0, 0)
	want := [][]int32{
		{0, 1, 2}, {1, 2, 3}, {2, 3, 4}, {3, 4, 0}, {4, 0, 1},
		{0, 2, 3}, {1, 3, 4}, {2, 4, 0}, {3, 0, 1}, {4, 1, 2},
	}
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Fatalf("assignment = %v\nwant         %v", got, want)
	}
}

func TestAssignReplicasUsesBrokerIDs(t *testing.T) {
	got := assignReplicasRackUnaware([]int32{10, 20, 30}, 3, 2, 1, 0)
	want := [][]int32{{20, 30}, {30, 10}, {10, 20}}
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Fatalf("assignment = %v, want %v", got, want)
	}
	for range 50 {
		for _, replicas := range assignReplicas([]BrokerInfo{{NodeID: 1}, {NodeID: 2}, {NodeID: 3}}, 6, 3) {
			s := slices.Sorted(slices.Values(replicas))
			if !slices.Equal(s, []int32{1, 2, 3}) {
				t.Fatalf("replicas %v are not three distinct brokers", replicas)
			}
		}
	}
}

func TestNewPartitionStates(t *testing.T) {
	parts := newPartitionStates([][]int32{{2, 1}, {1, 2}})
	if parts[1].Partition != 1 || parts[1].Leader != 1 || !slices.Equal(parts[1].ISR, []int32{1, 2}) ||
		parts[0].Leader != 2 || parts[0].LeaderEpoch != 0 || parts[0].PartitionEpoch != 0 {
		t.Fatalf("states = %+v", parts)
	}
	parts[0].ISR[0] = 9
	if parts[0].Replicas[0] != 2 {
		t.Fatal("ISR aliases the replica list")
	}
}
