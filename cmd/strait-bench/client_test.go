package main

import "testing"

// TestStickyInTurnPartitioner: a turn of records on one partition, then
// the next in order, so one turn per partition writes every partition,
// each with one run of a turn's records.
func TestStickyInTurnPartitioner(t *testing.T) {
	const n = 1000
	turn := stickyTurnRecords(1024)
	if turn != 16 {
		t.Fatalf("a turn of 1 KiB records is %d records, want 16 (16 KiB)", turn)
	}
	tp := stickyInTurnPartitioner{records: turn}.ForTopic("t")
	if tp.RequiresConsistency(nil) {
		t.Error("an unkeyed partitioner asks for consistency: franz-go would not skip unwritable partitions")
	}
	counts := make([]int, n)
	last, runs := -1, 0
	for range n * turn {
		p := tp.Partition(nil, n)
		if p < 0 || p >= n {
			t.Fatalf("partition index %d of %d", p, n)
		}
		counts[p]++
		if p != last {
			runs++
			last = p
		}
	}
	for p, c := range counts {
		if c != turn {
			t.Fatalf("partition %d got %d records, want %d", p, c, turn)
		}
	}
	if runs != n {
		t.Errorf("%d runs of records, want one per partition (%d)", runs, n)
	}
	// The next turn starts over at the first partition; fewer writable
	// partitions than the index wraps it.
	if p := tp.Partition(nil, n); p != 0 {
		t.Errorf("after a full round the partitioner picked %d, want 0", p)
	}
	for range turn - 1 {
		tp.Partition(nil, n)
	}
	tp.Partition(nil, n) // index 1
	if p := tp.Partition(nil, 1); p != 0 {
		t.Errorf("with one writable partition the partitioner picked index %d", p)
	}
	if got := stickyTurnRecords(64 << 10); got != 1 {
		t.Errorf("a turn of 64 KiB records is %d records, want 1", got)
	}
}
