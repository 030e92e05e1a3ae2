package controller

import "math/rand/v2"

// globalRandom is the placer's randomness in production.
type globalRandom struct{}

func (globalRandom) IntN(n int) int                     { return rand.IntN(n) }
func (globalRandom) Shuffle(n int, swap func(i, j int)) { rand.Shuffle(n, swap) }

// assignReplicas places a new topic's partitions on the usable brokers
// (registered, not in controlled shutdown) with Kafka's StripedReplicaPlacer:
// rack-aware, leaders spread. Errors are INVALID_REPLICATION_FACTOR with
// Kafka's message for CreateTopics.
func assignReplicas(brokers []BrokerInfo, numPartitions, replicationFactor int) ([][]int32, error) {
	assignment, err := placeReplicas(globalRandom{}, usableBrokers(brokers), numPartitions, replicationFactor)
	if err != nil {
		return nil, placementError(replicationFactor, err)
	}
	return assignment, nil
}

// newPartitionStates turns an assignment into new partition states as
// Kafka's buildPartitionRegistration: the ISR is the replicas that are
// active (registered, not in controlled shutdown), the leader its first
// member, epochs start at 0. A partition with no active replica gets no
// state: the caller has already refused it.
func newPartitionStates(first int32, assignment [][]int32, active func(int32) bool) []PartitionInfo {
	parts := make([]PartitionInfo, len(assignment))
	for i, replicas := range assignment {
		var isr []int32
		for _, r := range replicas {
			if active(r) {
				isr = append(isr, r)
			}
		}
		leader := noLeader
		if len(isr) > 0 {
			leader = isr[0]
		}
		parts[i] = PartitionInfo{
			Partition: first + int32(i),
			Replicas:  replicas,
			Leader:    leader,
			ISR:       isr,
		}
	}
	return parts
}
