package controller

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// javaMockRandom is Kafka's MockRandom (a java.util.Random with a fixed
// linear congruential sequence) with Random.nextInt(bound) and
// Collections.shuffle, so the placer draws the same numbers as in Kafka's
// StripedReplicaPlacerTest and must place exactly the same replicas.
type javaMockRandom struct{ state uint64 }

func newJavaMockRandom() *javaMockRandom { return &javaMockRandom{state: 17} }

func (r *javaMockRandom) next(bits uint) int32 {
	r.state = r.state*2862933555777941757 + 3037000493
	return int32(r.state >> (64 - bits))
}

func (r *javaMockRandom) IntN(n int) int {
	bound := int32(n)
	x := r.next(31)
	m := bound - 1
	if bound&m == 0 {
		return int(int32((int64(bound) * int64(x)) >> 31))
	}
	for u := x; ; u = r.next(31) {
		x = u % bound
		if u-x+m >= 0 { // int32 overflow makes it negative: draw again
			return int(x)
		}
	}
}

func (r *javaMockRandom) Shuffle(n int, swap func(i, j int)) {
	for i := n; i > 1; i-- {
		swap(i-1, r.IntN(i))
	}
}

func TestPlacerBrokerListMatchesKafka(t *testing.T) {
	l := &placerBrokerList{brokers: []int32{0, 1, 2, 3}}
	var got []int32
	for range 6 {
		got = append(got, l.next(0))
	}
	for range 5 {
		got = append(got, l.next(1))
	}
	want := []int32{0, 1, 2, 3, -1, -1, 1, 2, 3, 0, -1}
	if !slices.Equal(got, want) {
		t.Fatalf("next = %v, want %v", got, want)
	}
}

func TestPlacerAvoidsFencedReplicaMatchesKafka(t *testing.T) {
	l := newRackList(newJavaMockRandom(), []usableBroker{
		{id: 3}, {id: 1, fenced: true}, {id: 0}, {id: 4}, {id: 2},
	})
	if l.numTotal != 5 || l.numUnfenced != 4 {
		t.Fatalf("total %d unfenced %d", l.numTotal, l.numUnfenced)
	}
	for _, rf := range []int{0, -1} {
		if _, err := l.place(rf); err == nil {
			t.Fatalf("placed with replication factor %d", rf)
		}
	}
	for _, want := range [][]int32{{3, 4, 0, 2}, {4, 0, 2, 3}, {0, 2, 3, 4}, {2, 3, 4, 0}, {0, 4, 3, 2}} {
		got, err := l.place(4)
		if err != nil || !slices.Equal(got, want) {
			t.Fatalf("place(4) = %v, %v; want %v", got, err, want)
		}
	}
}

func TestPlacerUsesFencedReplicaWhenNeededMatchesKafka(t *testing.T) {
	l := newRackList(newJavaMockRandom(), []usableBroker{{id: 3}, {id: 1, fenced: true}, {id: 2}})
	for _, want := range [][]int32{{3, 2, 1}, {2, 3, 1}, {3, 2, 1}, {2, 3, 1}} {
		if got, err := l.place(3); err != nil || !slices.Equal(got, want) {
			t.Fatalf("place(3) = %v, %v; want %v", got, err, want)
		}
	}
}

func TestPlacerMultipleRacksMatchesKafka(t *testing.T) {
	l := newRackList(newJavaMockRandom(), []usableBroker{
		{id: 11, rack: "1", hasRack: true}, {id: 10, rack: "1", hasRack: true},
		{id: 30, rack: "3", hasRack: true}, {id: 31, rack: "3", hasRack: true},
		{id: 21, rack: "2", hasRack: true}, {id: 20, rack: "2", hasRack: true, fenced: true},
	})
	for _, want := range [][]int32{{11, 21, 31, 10}, {21, 30, 10, 20}, {31, 11, 21, 30}} {
		if got, err := l.place(4); err != nil || !slices.Equal(got, want) {
			t.Fatalf("place(4) = %v, %v; want %v", got, err, want)
		}
	}
}

func TestPlacerMostlyFencedRacksMatchesKafka(t *testing.T) {
	l := newRackList(newJavaMockRandom(), []usableBroker{
		{id: 11, rack: "1", hasRack: true}, {id: 10, rack: "1", hasRack: true},
		{id: 30, rack: "3", hasRack: true, fenced: true}, {id: 31, rack: "3", hasRack: true, fenced: true},
		{id: 20, rack: "2", hasRack: true, fenced: true}, {id: 21, rack: "2", hasRack: true, fenced: true},
		{id: 41, rack: "4", hasRack: true}, {id: 40, rack: "4", hasRack: true, fenced: true},
	})
	for _, want := range [][]int32{{41, 11, 21, 30}, {10, 20, 31, 41}, {41, 21, 30, 11}} {
		if got, err := l.place(4); err != nil || !slices.Equal(got, want) {
			t.Fatalf("place(4) = %v, %v; want %v", got, err, want)
		}
	}
}

func TestPlaceReplicasMatchesKafka(t *testing.T) {
	got, err := placeReplicas(newJavaMockRandom(), []usableBroker{{id: 0}, {id: 3}, {id: 2}, {id: 1}}, 5, 3)
	want := [][]int32{{2, 3, 0}, {3, 0, 1}, {0, 1, 2}, {1, 2, 3}, {1, 0, 2}}
	if err != nil || !slices.EqualFunc(got, want, slices.Equal) {
		t.Fatalf("placement = %v, %v\nwant        %v", got, err, want)
	}
}

func TestPlaceReplicasEvenDistributionMatchesKafka(t *testing.T) {
	got, err := placeReplicas(newJavaMockRandom(), []usableBroker{{id: 0}, {id: 1}, {id: 2}, {id: 3}}, 200, 2)
	if err != nil {
		t.Fatal(err)
	}
	counts := map[[2]int32]int{}
	for _, r := range got {
		counts[[2]int32{r[0], r[1]}]++
	}
	want := map[[2]int32]int{
		{0, 1}: 14, {0, 2}: 22, {0, 3}: 14, {1, 0}: 17, {1, 2}: 17, {1, 3}: 16,
		{2, 0}: 13, {2, 1}: 17, {2, 3}: 20, {3, 0}: 20, {3, 1}: 19, {3, 2}: 11,
	}
	for k, n := range want {
		if counts[k] != n {
			t.Fatalf("pair %v placed %d times, want %d (all: %v)", k, counts[k], n, counts)
		}
	}
}

func TestPlaceReplicasErrorsMatchKafka(t *testing.T) {
	r := newJavaMockRandom()
	_, err := placeReplicas(r, []usableBroker{{id: 11, fenced: true}, {id: 10, fenced: true}}, 1, 1)
	requireCode(t, err, kerr.InvalidReplicationFactor, "All brokers are currently fenced.")
	_, err = placeReplicas(r, []usableBroker{{id: 11}, {id: 10}}, 1, 3)
	requireCode(t, err, kerr.InvalidReplicationFactor,
		"The target replication factor of 3 cannot be reached because only 2 broker(s) are registered.")
	_, err = placeReplicas(r, []usableBroker{{id: 11}, {id: 10}}, 1, 0)
	requireCode(t, err, kerr.InvalidReplicationFactor,
		"Invalid replication factor 0: the replication factor must be positive.")
	got, err := placeReplicas(r, []usableBroker{{id: 0}, {id: 1, fenced: true}}, 3, 1)
	if err != nil || !slices.EqualFunc(got, [][]int32{{0}, {0}, {0}}, slices.Equal) {
		t.Fatalf("single unfenced broker: %v, %v", got, err)
	}
}
