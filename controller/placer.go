package controller

// Replica placement: a port of Kafka's StripedReplicaPlacer
// (metadata/.../placement/StripedReplicaPlacer.java), which places the
// replicas of new partitions (CreateTopics, CreatePartitions) round-robin
// across racks, and round-robin across the brokers of each rack, with random
// starting offsets and one rack further for each partition: replicas spread
// evenly over racks first and brokers second, and leaders (first replicas)
// spread over brokers. Brokers in controlled shutdown are not offered; fenced
// brokers (registered a moment ago, see BrokerInfo.Fenced) are only used when
// nothing else is left, and never as leader.
//
// The order in which it draws random numbers is Kafka's, so with Kafka's
// MockRandom sequence (placer_test.go) it places exactly as Kafka's tests
// expect.

import (
	"cmp"
	"fmt"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
)

// placementRandom is the randomness of the placer: Java's Random.nextInt(n)
// and Collections.shuffle. *rand.Rand from math/rand/v2 satisfies it.
type placementRandom interface {
	IntN(n int) int
	Shuffle(n int, swap func(i, j int))
}

// usableBroker is a broker the placer may use (Kafka's UsableBroker).
type usableBroker struct {
	id      int32
	rack    string
	hasRack bool
	fenced  bool
}

// placerBrokerList is Kafka's StripedReplicaPlacer.BrokerList: iterated once
// per epoch from a rotating offset.
type placerBrokerList struct {
	brokers []int32
	index   int
	offset  int
	epoch   int
}

func (l *placerBrokerList) initialize(r placementRandom) {
	if len(l.brokers) > 0 {
		slices.Sort(l.brokers)
		l.offset = r.IntN(len(l.brokers))
	}
}

func (l *placerBrokerList) shuffle(r placementRandom) {
	r.Shuffle(len(l.brokers), func(i, j int) { l.brokers[i], l.brokers[j] = l.brokers[j], l.brokers[i] })
}

// next returns the next broker of this epoch, or -1 when all were returned.
func (l *placerBrokerList) next(epoch int) int32 {
	if len(l.brokers) == 0 {
		return -1
	}
	if l.epoch != epoch {
		l.epoch = epoch
		l.index = 0
		l.offset = (l.offset + 1) % len(l.brokers)
	}
	if l.index >= len(l.brokers) {
		return -1
	}
	b := l.brokers[(l.index+l.offset)%len(l.brokers)]
	l.index++
	return b
}

// placerRack is Kafka's StripedReplicaPlacer.Rack.
type placerRack struct {
	fenced, unfenced placerBrokerList
}

func (r *placerRack) next(epoch int) int32 {
	if b := r.unfenced.next(epoch); b >= 0 {
		return b
	}
	return r.fenced.next(epoch)
}

// rackKey orders racks as Kafka's OptionalStringComparator: no rack first.
type rackKey struct {
	has  bool
	name string
}

func compareRackKeys(a, b rackKey) int {
	if a.has != b.has {
		if !a.has {
			return -1
		}
		return 1
	}
	return cmp.Compare(a.name, b.name)
}

// rackList is Kafka's StripedReplicaPlacer.RackList.
type rackList struct {
	random      placementRandom
	racks       map[rackKey]*placerRack
	rackNames   []rackKey
	numTotal    int
	numUnfenced int
	epoch       int
	offset      int
}

func newRackList(r placementRandom, brokers []usableBroker) *rackList {
	l := &rackList{random: r, racks: map[rackKey]*placerRack{}}
	for _, b := range brokers {
		key := rackKey{b.hasRack, b.rack}
		rack := l.racks[key]
		if rack == nil {
			l.rackNames = append(l.rackNames, key)
			rack = &placerRack{}
			l.racks[key] = rack
		}
		if b.fenced {
			rack.fenced.brokers = append(rack.fenced.brokers, b.id)
		} else {
			l.numUnfenced++
			rack.unfenced.brokers = append(rack.unfenced.brokers, b.id)
		}
		l.numTotal++
	}
	// Kafka initializes the racks in HashMap order, which for its tests'
	// rack names is the sorted order used here.
	slices.SortFunc(l.rackNames, compareRackKeys)
	for _, key := range l.rackNames {
		rack := l.racks[key]
		rack.fenced.initialize(r)
		rack.unfenced.initialize(r)
	}
	if len(l.rackNames) > 0 {
		l.offset = r.IntN(len(l.rackNames))
	}
	return l
}

func (l *rackList) shuffle() {
	l.random.Shuffle(len(l.rackNames), func(i, j int) { l.rackNames[i], l.rackNames[j] = l.rackNames[j], l.rackNames[i] })
	for _, k := range slices.SortedFunc(maps.Keys(l.racks), compareRackKeys) {
		l.racks[k].fenced.shuffle(l.random)
		l.racks[k].unfenced.shuffle(l.random)
	}
}

// place returns the replicas of one partition.
func (l *rackList) place(replicationFactor int) ([]int32, error) {
	if err := checkPlacement(replicationFactor, l.numTotal, l.numUnfenced); err != nil {
		return nil, err
	}
	// Once as many partitions as unfenced brokers were placed, shuffle to
	// avoid repeating the same assignments.
	if l.epoch == l.numUnfenced && l.numUnfenced > 1 {
		l.shuffle()
		l.epoch = 0
	}
	if l.offset == len(l.rackNames) {
		l.offset = 0
	}
	replicas := make([]int32, 0, replicationFactor)
	firstRack := l.offset
	for {
		if b := l.racks[l.rackNames[firstRack]].unfenced.next(l.epoch); b >= 0 {
			replicas = append(replicas, b)
			break
		}
		firstRack++
		if firstRack == len(l.rackNames) {
			firstRack = 0
		}
	}
	rackIndex := l.offset
	for len(replicas) < replicationFactor {
		b := int32(-1)
		for b < 0 {
			if rackIndex == firstRack {
				firstRack = -1
			} else {
				b = l.racks[l.rackNames[rackIndex]].next(l.epoch)
			}
			rackIndex++
			if rackIndex == len(l.rackNames) {
				rackIndex = 0
			}
		}
		replicas = append(replicas, b)
	}
	l.epoch++
	l.offset++
	return replicas, nil
}

// checkPlacement returns the placer's errors, in Kafka's order and wording,
// as INVALID_REPLICATION_FACTOR.
func checkPlacement(replicationFactor, numTotal, numUnfenced int) error {
	switch {
	case replicationFactor <= 0:
		return apiError(kerr.InvalidReplicationFactor,
			"Invalid replication factor %d: the replication factor must be positive.", replicationFactor)
	case numUnfenced == 0:
		return apiError(kerr.InvalidReplicationFactor, "All brokers are currently fenced.")
	case replicationFactor > numTotal:
		return apiError(kerr.InvalidReplicationFactor,
			"The target replication factor of %d cannot be reached because only %d broker(s) are registered.",
			replicationFactor, numTotal)
	}
	return nil
}

// placeReplicas is StripedReplicaPlacer.place: numPartitions partitions of
// replicationFactor replicas on brokers.
func placeReplicas(r placementRandom, brokers []usableBroker, numPartitions, replicationFactor int) ([][]int32, error) {
	l := newRackList(r, brokers)
	if err := checkPlacement(replicationFactor, l.numTotal, l.numUnfenced); err != nil {
		return nil, err
	}
	out := make([][]int32, numPartitions)
	for p := range out {
		replicas, err := l.place(replicationFactor)
		if err != nil {
			return nil, err
		}
		out[p] = replicas
	}
	return out, nil
}

// usableBrokers returns the registered brokers that are not in controlled
// shutdown, for placement (Kafka's BrokerHeartbeatManager.usableBrokers).
func usableBrokers(brokers []BrokerInfo) []usableBroker {
	out := make([]usableBroker, 0, len(brokers))
	for _, b := range brokers {
		if b.InControlledShutdown {
			continue
		}
		out = append(out, usableBroker{id: b.NodeID, rack: b.Rack, hasRack: b.Rack != "", fenced: b.Fenced})
	}
	return out
}

// placementError prefixes a placer error as CreateTopics and CreatePartitions
// report it.
func placementError(replicationFactor int, err error) error {
	if ce, ok := err.(*Error); ok {
		return &Error{Err: ce.Err, Message: fmt.Sprintf("Unable to replicate the partition %d time(s): %s",
			replicationFactor, ce.Message)}
	}
	return err
}
