package controller

import "math/rand/v2"

// assignReplicasRackUnaware is Kafka's rack-unaware replica assignment
// (AdminUtils.assignReplicasToBrokersRackUnaware): partition p's first replica
// is broker (p + startIndex) mod n, and the followers are shifted from it by
// an amount that grows every n partitions, spreading leaders and followers
// evenly. brokers must be sorted, non-empty, with at least replicationFactor
// entries.
func assignReplicasRackUnaware(brokers []int32, numPartitions, replicationFactor, startIndex, replicaShift int) [][]int32 {
	n := len(brokers)
	out := make([][]int32, numPartitions)
	for p := range numPartitions {
		if p > 0 && p%n == 0 {
			replicaShift++
		}
		first := (p + startIndex) % n
		replicas := make([]int32, 0, replicationFactor)
		replicas = append(replicas, brokers[first])
		for j := range replicationFactor - 1 {
			shift := 1 + (replicaShift+j)%(n-1)
			replicas = append(replicas, brokers[(first+shift)%n])
		}
		out[p] = replicas
	}
	return out
}

// assignReplicas places a new topic's partitions on the registered brokers
// with a random start index and shift, as Kafka does.
func assignReplicas(brokers []BrokerInfo, numPartitions, replicationFactor int) [][]int32 {
	ids := make([]int32, len(brokers))
	for i, b := range brokers {
		ids[i] = b.NodeID // brokers are sorted by node id
	}
	return assignReplicasRackUnaware(ids, numPartitions, replicationFactor, rand.IntN(len(ids)), rand.IntN(len(ids)))
}

// newPartitionStates turns an assignment into a new topic's partition states:
// leader is the first replica, the ISR is every replica, epochs start at 0.
func newPartitionStates(assignment [][]int32) []PartitionInfo {
	parts := make([]PartitionInfo, len(assignment))
	for p, replicas := range assignment {
		parts[p] = PartitionInfo{
			Partition: int32(p),
			Replicas:  replicas,
			Leader:    replicas[0],
			ISR:       append([]int32(nil), replicas...),
		}
	}
	return parts
}
