package controller

// Convenience wrappers over the controller's API that only the tests use;
// the broker calls AlterPartitionISR, UpdateTopicConfigs and reads
// reassignments from the topic cache.

import (
	"context"
	"maps"
)

// AlterPartition asks for the ISR of a partition this broker leads to become
// newISR, as Kafka's AlterPartition with broker epochs unchecked; see
// AlterPartitionISR.
func (c *Controller) AlterPartition(ctx context.Context, topic string, partition, leaderEpoch, partitionEpoch int32, newISR []int32) (PartitionInfo, error) {
	members := make([]ISRMember, len(newISR))
	for i, id := range newISR {
		members[i] = ISRMember{BrokerID: id, BrokerEpoch: -1}
	}
	return c.AlterPartitionISR(ctx, AlterPartitionRequest{
		Topic: topic, Partition: partition, LeaderEpoch: leaderEpoch, PartitionEpoch: partitionEpoch, NewISR: members,
	})
}

// SetTopicConfigs replaces every config override of topic name by configs
// (Kafka's legacy AlterConfigs); see UpdateTopicConfigs.
func (c *Controller) SetTopicConfigs(ctx context.Context, name string, configs map[string]string) error {
	return c.UpdateTopicConfigs(ctx, name, func(map[string]string) (map[string]string, error) {
		return maps.Clone(configs), nil
	})
}

// OngoingReassignment is a partition being reassigned (ListPartitionReassignments).
type OngoingReassignment struct {
	Topic            string
	Partition        int32
	Replicas         []int32 // every current replica, adding and removing included
	AddingReplicas   []int32
	RemovingReplicas []int32
}

// ListPartitionReassignments returns the ongoing reassignments of the given
// partitions (nil: of every partition), from this controller's cache, sorted
// by topic and partition. Partitions that do not exist or are not being
// reassigned are left out, as Kafka does.
func (c *Controller) ListPartitionReassignments(ctx context.Context, partitions []TopicPartitions) ([]OngoingReassignment, error) {
	if !c.running() {
		return nil, ErrNotStarted
	}
	snap := c.cache.snapshot()
	var out []OngoingReassignment
	add := func(t *TopicInfo, p PartitionInfo) {
		if reassignmentInProgress(p) {
			out = append(out, OngoingReassignment{Topic: t.Name, Partition: p.Partition, Replicas: p.Replicas,
				AddingReplicas: p.AddingReplicas, RemovingReplicas: p.RemovingReplicas})
		}
	}
	if partitions == nil {
		for _, t := range snap.topicList() {
			for _, p := range t.Partitions {
				add(t, p)
			}
		}
		return out, nil
	}
	for _, tp := range partitions {
		t := snap.topic(tp.Topic)
		if t == nil {
			continue
		}
		for _, i := range tp.Partitions {
			if i >= 0 && int(i) < len(t.Partitions) {
				add(t, t.Partitions[i])
			}
		}
	}
	return out, nil
}
