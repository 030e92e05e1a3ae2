package group

import (
	"fmt"
	"testing"
)

func specOf(topics map[[16]byte]int32, subs map[string][][16]byte, prev map[string]partitionSet) assignSpec {
	spec := assignSpec{topics: topics, prev: prev}
	for i := 0; i < len(subs); i++ {
		id := fmt.Sprintf("m%d", i)
		m := assignMember{id: id, topics: map[[16]byte]bool{}}
		for _, t := range subs[id] {
			m.topics[t] = true
		}
		spec.members = append(spec.members, m)
	}
	return spec
}

// checkAssignment verifies every subscribed partition has exactly one owner
// subscribed to it and returns the per-member counts.
func checkAssignment(t *testing.T, spec assignSpec, out map[string]partitionSet) map[string]int {
	t.Helper()
	owner := map[topicPartition]string{}
	counts := map[string]int{}
	for _, m := range spec.members {
		for tid, ps := range out[m.id] {
			if !m.topics[tid] {
				t.Fatalf("%s got a topic it does not subscribe to", m.id)
			}
			for p := range ps {
				tp := topicPartition{tid, p}
				if o, ok := owner[tp]; ok {
					t.Fatalf("partition %v assigned to %s and %s", tp, o, m.id)
				}
				owner[tp] = m.id
				counts[m.id]++
			}
		}
	}
	for tid, n := range spec.topics {
		subscribed := false
		for _, m := range spec.members {
			subscribed = subscribed || m.topics[tid]
		}
		for p := int32(0); p < n && subscribed; p++ {
			if _, ok := owner[topicPartition{tid, p}]; !ok {
				t.Fatalf("partition %d of %v unassigned", p, tid)
			}
		}
	}
	return counts
}

func TestUniformAssignorBalancedAndSticky(t *testing.T) {
	a, b := topicID(1), topicID(2)
	topics := map[[16]byte]int32{a: 5, b: 6}
	subs := map[string][][16]byte{"m0": {a, b}, "m1": {a, b}, "m2": {a, b}}
	spec := specOf(topics, subs, nil)
	first := assignUniform(spec)
	for id, n := range checkAssignment(t, spec, first) {
		if n < 3 || n > 4 {
			t.Fatalf("%s has %d partitions of 11 over 3 members", id, n)
		}
	}
	// A fourth member: everyone keeps what still fits its quota.
	subs["m3"] = [][16]byte{a, b}
	spec = specOf(topics, subs, first)
	second := assignUniform(spec)
	counts := checkAssignment(t, spec, second)
	moved := 0
	for _, id := range []string{"m0", "m1", "m2"} {
		for tid, ps := range first[id] {
			for p := range ps {
				if !second[id].has(tid, p) {
					moved++
				}
			}
		}
	}
	if counts["m3"] < 2 || counts["m3"] > 3 || moved != counts["m3"] {
		t.Fatalf("new member got %d, %d partitions moved", counts["m3"], moved)
	}

	// Different subscriptions still balance where they overlap.
	subs = map[string][][16]byte{"m0": {a}, "m1": {a, b}, "m2": {b}}
	spec = specOf(topics, subs, nil)
	counts = checkAssignment(t, spec, assignUniform(spec))
	if counts["m0"] == 0 || counts["m2"] == 0 || counts["m0"]+counts["m1"]+counts["m2"] != 11 {
		t.Fatalf("heterogeneous counts %v", counts)
	}
	for _, x := range []string{"m0", "m1", "m2"} {
		for _, y := range []string{"m0", "m1", "m2"} {
			if counts[x]-counts[y] > 1 {
				t.Fatalf("heterogeneous counts unbalanced: %v", counts)
			}
		}
	}
}

func TestRangeAssignor(t *testing.T) {
	a := topicID(1)
	spec := specOf(map[[16]byte]int32{a: 5}, map[string][][16]byte{"m0": {a}, "m1": {a}}, nil)
	out := assignRange(spec)
	checkAssignment(t, spec, out)
	for _, p := range []int32{0, 1, 2} {
		if !out["m0"].has(a, p) {
			t.Fatalf("m0 lacks partition %d: %v", p, out)
		}
	}
	for _, p := range []int32{3, 4} {
		if !out["m1"].has(a, p) {
			t.Fatalf("m1 lacks partition %d: %v", p, out)
		}
	}
}
