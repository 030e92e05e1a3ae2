package controller

import (
	"maps"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
)

// maxTopicNameLength is Kafka's Topic.MAX_NAME_LENGTH.
const maxTopicNameLength = 249

// validateTopicName returns Kafka's reason a topic name is illegal, or "".
// It mirrors org.apache.kafka.common.internals.Topic.
func validateTopicName(name string) string {
	switch {
	case name == "":
		return "the empty string is not allowed"
	case name == ".":
		return "'.' is not allowed"
	case name == "..":
		return "'..' is not allowed"
	case len(name) > maxTopicNameLength:
		return "the length of '" + name + "' is longer than the max allowed length 249"
	}
	for i := 0; i < len(name); i++ {
		ch := name[i]
		if !(ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || ch == '.' || ch == '_' || ch == '-') {
			return "'" + name + "' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'"
		}
	}
	return ""
}

// unifyCollisionChars maps '.' to '_': topics equal after it collide in metric names.
func unifyCollisionChars(name string) string { return strings.ReplaceAll(name, ".", "_") }

// validateNewTopicName checks name as Kafka's controller does before creating
// a topic: legal, no '.'/'_' collision with an existing topic, not existing.
func validateNewTopicName(snap *metadataSnapshot, name string) error {
	var err error
	if reason := validateTopicName(name); reason != "" {
		err = apiError(kerr.InvalidTopicException, "Topic name is invalid: %s", reason)
	}
	if strings.ContainsAny(name, "._") {
		// An index of the colliding names, not a scan of every topic.
		if c := snap.tix.colliding(name); len(c) > 0 {
			err = apiError(kerr.InvalidTopicException, "Topic '%s' collides with existing topic: %s", name, slices.Min(c))
		}
	}
	if snap.topic(name) != nil {
		err = apiError(kerr.TopicAlreadyExists, "Topic '%s' already exists.", name)
	}
	return err
}

// validateManualAssignment checks an explicit replica assignment as Kafka's
// ReplicationControlManager does and returns the partitions in order.
func validateManualAssignment(snap *metadataSnapshot, req CreateTopicRequest) ([][]int32, error) {
	if req.ReplicationFactor != -1 {
		return nil, apiError(kerr.InvalidRequest,
			"A manual partition assignment was specified, but replication factor was not set to -1.")
	}
	if req.NumPartitions != -1 {
		return nil, apiError(kerr.InvalidRequest,
			"A manual partition assignment was specified, but numPartitions was not set to -1.")
	}
	registered := make(map[int32]bool, len(snap.brokers))
	for _, b := range snap.brokers {
		registered[b.NodeID] = true
	}
	replicationFactor := -1
	for _, p := range slices.Sorted(maps.Keys(req.Assignments)) {
		replicas := req.Assignments[p]
		if len(replicas) == 0 {
			return nil, apiError(kerr.InvalidReplicaAssignment,
				"The manual partition assignment includes an empty replica list.")
		}
		sorted := slices.Sorted(slices.Values(replicas))
		for i, id := range sorted {
			if !registered[id] {
				return nil, apiError(kerr.InvalidReplicaAssignment,
					"The manual partition assignment includes broker %d, but no such broker is registered.", id)
			}
			if i > 0 && sorted[i-1] == id {
				return nil, apiError(kerr.InvalidReplicaAssignment,
					"The manual partition assignment includes the broker %d more than once.", id)
			}
		}
		if replicationFactor >= 0 && len(replicas) != replicationFactor {
			return nil, apiError(kerr.InvalidReplicaAssignment,
				"The manual partition assignment includes a partition with %d replica(s), but this is not "+
					"consistent with previous partitions, which have %d replica(s).", len(replicas), replicationFactor)
		}
		replicationFactor = len(replicas)
	}
	out := make([][]int32, len(req.Assignments))
	for i := range out {
		replicas, ok := req.Assignments[int32(i)]
		if !ok {
			return nil, apiError(kerr.InvalidReplicaAssignment,
				"partitions should be a consecutive 0-based integer sequence")
		}
		out[i] = slices.Clone(replicas)
	}
	return out, nil
}

// validateCounts resolves -1 to the defaults and checks the partition count
// and replication factor against the registered brokers, with Kafka's errors.
func validateCounts(snap *metadataSnapshot, req CreateTopicRequest, defaults Config) (int32, int16, error) {
	if req.ReplicationFactor < -1 || req.ReplicationFactor == 0 {
		return 0, 0, apiError(kerr.InvalidReplicationFactor,
			"Replication factor must be larger than 0, or -1 to use the default value.")
	}
	if req.NumPartitions < -1 || req.NumPartitions == 0 {
		return 0, 0, apiError(kerr.InvalidPartitions,
			"Number of partitions was set to an invalid non-positive value.")
	}
	numPartitions, replicationFactor := req.NumPartitions, req.ReplicationFactor
	if numPartitions == -1 {
		numPartitions = defaults.DefaultNumPartitions
	}
	if replicationFactor == -1 {
		replicationFactor = defaults.DefaultReplicationFactor
	}
	if int(replicationFactor) > len(snap.brokers) {
		return 0, 0, apiError(kerr.InvalidReplicationFactor,
			"Unable to replicate the partition %d time(s): The target replication factor of %d cannot be "+
				"reached because only %d broker(s) are registered.", replicationFactor, replicationFactor, len(snap.brokers))
	}
	return numPartitions, replicationFactor, nil
}

// validateBatchSize rejects creations Kafka's controller would refuse as an
// excessively large batch (one record per partition and config, plus the
// topic). The etcd transaction has one operation per partition as well.
func validateBatchSize(numPartitions int, numConfigs int) error {
	if 1+numPartitions+numConfigs > maxRecordsPerTopicCreation {
		return apiError(kerr.PolicyViolation, "Unable to perform excessively large batch operation.")
	}
	return nil
}
