package inturn

import "testing"

// TestOrder: a turn of records to partition 0, then to 1, and so on, the
// last partition's turn followed by partition 0's again.
func TestOrder(t *testing.T) {
	const n, turn = 5, 16
	tp := Partitioner{Records: turn}.ForTopic("t")
	if tp.RequiresConsistency(nil) {
		t.Error("an unkeyed partitioner asks for consistency: franz-go would not skip unwritable partitions")
	}
	for round := range 2 {
		for want := range n {
			for r := range turn {
				if got := tp.Partition(nil, n); got != want {
					t.Fatalf("round %d, record %d of partition %d's turn went to %d", round, r, want, got)
				}
			}
		}
	}
}

// TestWritableShrinks: fewer writable partitions than the index wraps it to
// the first, which then has a whole turn.
func TestWritableShrinks(t *testing.T) {
	tp := Partitioner{Records: 2}.ForTopic("t")
	for range 4 { // partitions 0 and 1 had their turns
		tp.Partition(nil, 3)
	}
	for i := range 2 {
		if got := tp.Partition(nil, 2); got != 0 {
			t.Fatalf("record %d with two writable partitions went to index %d, want 0", i, got)
		}
	}
	if got := tp.Partition(nil, 2); got != 1 {
		t.Fatalf("after partition 0's turn the record went to %d, want 1", got)
	}
}

func TestTurnRecords(t *testing.T) {
	for _, c := range []struct{ size, want int }{{1024, 16}, {100, 163}, {64 << 10, 1}, {0, TurnBytes}} {
		if got := TurnRecords(c.size); got != c.want {
			t.Errorf("a turn of %d-byte records is %d records, want %d", c.size, got, c.want)
		}
	}
	tp := Partitioner{}.ForTopic("t") // no turn given: one record each
	for want := range 3 {
		if got := tp.Partition(nil, 3); got != want {
			t.Fatalf("a turn of 0 records: record %d went to %d", want, got)
		}
	}
}

// TestMinRecords: MinRecords records sent to the topics in turn, each with
// its own partitioner, give every partition of every topic at least a
// turn, however few partitions a topic has; one turn fewer leaves the
// widest topic's last partition unwritten.
func TestMinRecords(t *testing.T) {
	const turn = 16
	widths := []int{7, 2, 5}
	send := func(records int) [][]int {
		counts := make([][]int, len(widths))
		parts := make([]func(int) int, len(widths))
		for i, w := range widths {
			counts[i] = make([]int, w)
			tp := Partitioner{Records: turn}.ForTopic("t")
			parts[i] = func(n int) int { return tp.Partition(nil, n) }
		}
		for r := range records {
			topic := r % len(widths)
			counts[topic][parts[topic](widths[topic])]++
		}
		return counts
	}
	enough := MinRecords(len(widths), 7, turn)
	if enough != 3*7*16 {
		t.Fatalf("MinRecords(3, 7, 16) = %d", enough)
	}
	for topic, cs := range send(enough) {
		for p, c := range cs {
			if c < turn {
				t.Errorf("topic %d partition %d got %d records of %d, want at least a turn (%d)", topic, p, c, enough, turn)
			}
		}
	}
	short := send(enough - len(widths)*turn)
	if c := short[0][6]; c != 0 {
		t.Errorf("a turn short of MinRecords, the widest topic's last partition got %d records", c)
	}
}
