package replication

import (
	"slices"
	"testing"

	"github.com/strait/strait/controller"
	"github.com/strait/strait/storage"
)

// TestChangeOfSomePartitionsTouchesOnlyThose: a change that names its
// partitions (a leader or ISR change, as the controller's cache reports it)
// moves those to their new role and leaves the others as they were, even
// where the topic it carries says otherwise; a partition assigned here whose
// log did not open is opened at the next change whatever it names.
func TestChangeOfSomePartitionsTouchesOnlyThose(t *testing.T) {
	ffs := storage.NewFaultFS(nil)
	e := newEnv(t, func(c *Config) { c.FS = ffs }, nil)
	e.topic("some", []int32{1, 2}, []int32{1, 2}, []int32{1, 2})
	before := []*Partition{e.m.Partition("some", 0), e.m.Partition("some", 1), e.m.Partition("some", 2)}
	for i, p := range before {
		if p == nil || !p.IsLeader() {
			t.Fatalf("partition %d: %v, want led here", i, p)
		}
	}
	tp, _ := e.meta.Topic("some")
	parts := slices.Clone(tp.Partitions)
	for i := range parts {
		parts[i].Leader, parts[i].LeaderEpoch = 2, 2 // only 1 is named
	}
	tp.Partitions = parts
	e.meta.setChanged(tp, []int32{1})
	if p := e.m.Partition("some", 1); p != before[1] || p.IsLeader() || p.LeaderEpoch() != 2 {
		t.Fatalf("partition 1 after its change: leader %v epoch %d", p.IsLeader(), p.LeaderEpoch())
	}
	for _, i := range []int32{0, 2} {
		if p := e.m.Partition("some", i); p != before[i] || !p.IsLeader() || p.LeaderEpoch() != 1 {
			t.Fatalf("partition %d, not named, changed: leader %v epoch %d", i, p.IsLeader(), p.LeaderEpoch())
		}
	}

	// A partition added while every fsync fails is not hosted; the next
	// change, naming another partition, opens it.
	ffs.FailSyncs(true)
	tp.Partitions = append(slices.Clone(tp.Partitions), controller.PartitionInfo{
		Partition: 3, Replicas: []int32{1, 2}, Leader: 1, LeaderEpoch: 1, ISR: []int32{1, 2}, PartitionEpoch: 1})
	e.meta.setChanged(tp, []int32{3})
	if e.m.Partition("some", 3) != nil {
		t.Fatal("a partition whose directory could not be made durable is hosted")
	}
	ffs.FailSyncs(false)
	e.meta.setChanged(tp, []int32{0})
	if p := e.m.Partition("some", 3); p == nil || !p.IsLeader() {
		t.Fatalf("partition 3 after the disk recovered: %v", p)
	}
	if e.m.Partition("some", 0) != before[0] {
		t.Fatal("partition 0 reopened")
	}
}
