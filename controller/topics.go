package controller

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// CreateTopic validates req as Kafka's controller does and, unless
// req.ValidateOnly, creates the topic in one etcd transaction. It returns once
// this controller's cache and listeners have applied the creation, so the
// topic is usable as soon as it returns. Rejections are *Error values wrapping
// the Kafka error code (see ErrorMessage); with ValidateOnly the returned
// TopicInfo is what would have been created (with a fresh id) and nothing is
// written.
func (c *Controller) CreateTopic(ctx context.Context, req CreateTopicRequest) (TopicInfo, error) {
	if !c.running() {
		return TopicInfo{}, ErrNotStarted
	}
	c.createMu.Lock()
	defer c.createMu.Unlock()
	topic, err := c.planTopic(c.cache.snapshot(), req)
	if err != nil {
		return TopicInfo{}, err
	}
	if req.ValidateOnly {
		return *topic, nil
	}

	key := c.ks.topic(topic.Name)
	ops := make([]clientv3.Op, 0, 1+len(topic.Partitions))
	ops = append(ops, clientv3.OpPut(key, encodeTopic(topic)))
	for _, p := range topic.Partitions {
		ops = append(ops, clientv3.OpPut(c.ks.partition(topic.Name, p.Partition), encodePartition(p)))
	}
	resp, err := c.client.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(ops...).
		Commit()
	if errors.Is(err, rpctypes.ErrTooManyOps) || errors.Is(err, rpctypes.ErrRequestTooLarge) {
		// Only an external etcd with a lower --max-txn-ops or
		// --max-request-bytes than the embedded one's gets here.
		return TopicInfo{}, apiError(kerr.PolicyViolation,
			"Unable to perform excessively large batch operation (etcd refused a transaction of %d operations: %v).",
			len(ops), err)
	}
	if err != nil {
		return TopicInfo{}, fmt.Errorf("controller: creating topic %s: %w", topic.Name, err)
	}
	if !resp.Succeeded {
		// Created by another broker since the snapshot was taken.
		return TopicInfo{}, apiError(kerr.TopicAlreadyExists, "Topic '%s' already exists.", topic.Name)
	}
	if err := c.cache.waitForRevision(ctx, c.stop, resp.Header.Revision); err != nil {
		return TopicInfo{}, fmt.Errorf("controller: topic %s created, waiting for the metadata cache: %w", topic.Name, err)
	}
	c.log.Info("created topic", "topic", topic.Name, "topic.id", FormatUUID(topic.ID),
		"partitions", len(topic.Partitions), "revision", resp.Header.Revision)
	if t, ok := c.Topic(topic.Name); ok && t.ID == topic.ID {
		return t, nil
	}
	return *topic, nil // already changed again; report what was created
}

// planTopic validates req against snap and builds the topic to create.
func (c *Controller) planTopic(snap *metadataSnapshot, req CreateTopicRequest) (*TopicInfo, error) {
	if err := validateNewTopicName(snap, req.Name); err != nil {
		return nil, err
	}
	var assignment [][]int32
	if len(req.Assignments) > 0 {
		var err error
		if assignment, err = validateManualAssignment(snap, req); err != nil {
			return nil, err
		}
	} else {
		numPartitions, replicationFactor, err := validateCounts(snap, req, c.cfg)
		if err != nil {
			return nil, err
		}
		if err := validateBatchSize(int(numPartitions), len(req.Configs)); err != nil {
			return nil, err
		}
		if assignment, err = assignReplicas(snap.brokers, int(numPartitions), int(replicationFactor)); err != nil {
			return nil, err
		}
	}
	active := brokerSetOf(snap.brokers).active
	for p, replicas := range assignment {
		if !slices.ContainsFunc(replicas, active) {
			if len(req.Assignments) > 0 {
				return nil, apiError(kerr.InvalidReplicaAssignment, "All brokers specified in the manual partition "+
					"assignment for partition %d are fenced or in controlled shutdown.", p)
			}
			return nil, apiError(kerr.InvalidReplicationFactor, "Unable to replicate the partition %d time(s): "+
				"All brokers are currently fenced or in controlled shutdown.", len(replicas))
		}
	}
	if err := validateBatchSize(len(assignment), len(req.Configs)); err != nil {
		return nil, err
	}
	id := NewKafkaUUID()
	for snap.topicByID(id) != nil {
		id = NewKafkaUUID()
	}
	var configs map[string]string
	if len(req.Configs) > 0 {
		configs = maps.Clone(req.Configs)
	}
	return &TopicInfo{
		Name:       req.Name,
		ID:         id,
		Internal:   req.Internal,
		Configs:    configs,
		Partitions: newPartitionStates(0, assignment, active),
	}, nil
}

// DeleteTopic deletes the topic and its partition states in one etcd
// transaction and returns once this controller's cache and listeners have
// applied it. A missing topic is UNKNOWN_TOPIC_OR_PARTITION.
func (c *Controller) DeleteTopic(ctx context.Context, name string) error {
	if !c.running() {
		return ErrNotStarted
	}
	key := c.ks.topic(name)
	resp, err := c.client.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), ">", 0)).
		Then(clientv3.OpDelete(key), clientv3.OpDelete(c.ks.partitionRange(name), clientv3.WithPrefix())).
		Commit()
	if err != nil {
		return fmt.Errorf("controller: deleting topic %s: %w", name, err)
	}
	if !resp.Succeeded {
		return &Error{Err: kerr.UnknownTopicOrPartition, Message: kerr.UnknownTopicOrPartition.Description}
	}
	if err := c.cache.waitForRevision(ctx, c.stop, resp.Header.Revision); err != nil {
		return fmt.Errorf("controller: topic %s deleted, waiting for the metadata cache: %w", name, err)
	}
	c.log.Info("deleted topic", "topic", name, "revision", resp.Header.Revision)
	return nil
}
