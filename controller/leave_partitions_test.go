package controller

import "testing"

// LeavePartitions (a broker's failed log dir): the broker leaves the ISR of
// the named partitions only, their leadership moves to the next active ISR
// member with the epoch bumped, and a partition whose last ISR member it is
// is left with an empty ISR and it in the ELR, as controlled shutdown does.
func TestLeavePartitions(t *testing.T) {
	endpoints := sharedEtcd(t)
	cs := startMembers(t, endpoints, 3)
	createAssigned(t, cs[0], "t", [][]int32{{2, 1, 3}, {1, 2, 3}, {3, 2, 1}}, nil)
	createAssigned(t, cs[0], "single", [][]int32{{2}}, nil)
	if err := cs[1].LeavePartitions(ctxT(t), []TopicPartitions{{Topic: "t", Partitions: []int32{0, 2}}, {Topic: "single", Partitions: []int32{0}}}); err != nil {
		t.Fatal(err)
	}
	// Returned once its own cache shows the result.
	requirePartition(t, partitionOn(t, cs[1], "t", 0), 1, []int32{1, 3}, []int32{2, 1, 3}, 1, 1)
	requirePartition(t, partitionOn(t, cs[1], "t", 1), 1, []int32{1, 2, 3}, []int32{1, 2, 3}, 0, 0)
	requirePartition(t, partitionOn(t, cs[1], "t", 2), 3, []int32{3, 1}, []int32{3, 2, 1}, 0, 1)
	single := partitionOn(t, cs[1], "single", 0)
	requirePartition(t, single, -1, nil, []int32{2}, 1, 1)
	requireELR(t, single, []int32{2}, []int32{2})
	if err := cs[1].LeavePartitions(ctxT(t), nil); err != nil {
		t.Fatalf("nothing to leave: %v", err)
	}
}
