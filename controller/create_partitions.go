package controller

// CreatePartitions, as Kafka's ReplicationControlManager.createPartitions:
// the new partitions are placed on the usable brokers with the striped
// placer (or an explicit assignment), their ISR is their active replicas and
// their leader the first of those, and all of them are written in one etcd
// transaction that fails if the topic was re-created or grew meanwhile, or a
// broker they rely on changed its registration (then it is planned again).

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

// CreatePartitions grows topic to newCount partitions. assignments, when not
// nil, gives the replicas of each new partition in order (Kafka's
// CreatePartitions assignments); otherwise they are placed rack-aware across
// the registered brokers that are not shutting down, with leaders spread.
// With validateOnly nothing is written. Errors are *Error values with
// Kafka's codes and messages: UNKNOWN_TOPIC_OR_PARTITION, INVALID_PARTITIONS
// (no increase), INVALID_REPLICA_ASSIGNMENT, INVALID_REPLICATION_FACTOR,
// POLICY_VIOLATION (too many partitions for one request). It returns the
// topic as this controller's cache shows it after the change (with
// validateOnly: as it would be).
func (c *Controller) CreatePartitions(ctx context.Context, topic string, newCount int32, assignments [][]int32, validateOnly bool) (TopicInfo, error) {
	if !c.running() {
		return TopicInfo{}, ErrNotStarted
	}
	c.createMu.Lock()
	defer c.createMu.Unlock()
	for {
		plan, err := c.planPartitions(ctx, topic, newCount, assignments)
		if err != nil {
			return TopicInfo{}, err
		}
		if validateOnly {
			t := *plan.topic
			t.Partitions = append(slices.Clone(plan.existing), plan.added...)
			return t, nil
		}
		ops := make([]clientv3.Op, 0, len(plan.added))
		for _, p := range plan.added {
			ops = append(ops, clientv3.OpPut(c.ks.partition(topic, p.Partition), encodePartition(p)))
		}
		resp, err := c.client.Txn(ctx).If(plan.cmps...).Then(ops...).Commit()
		if errors.Is(err, rpctypes.ErrTooManyOps) || errors.Is(err, rpctypes.ErrRequestTooLarge) {
			return TopicInfo{}, apiError(kerr.PolicyViolation,
				"Unable to perform excessively large batch operation (etcd refused a transaction of %d operations: %v).",
				len(ops), err)
		}
		if err != nil {
			return TopicInfo{}, fmt.Errorf("controller: creating partitions of %s: %w", topic, err)
		}
		if !resp.Succeeded {
			if err := ctx.Err(); err != nil {
				return TopicInfo{}, err
			}
			continue // the topic or a broker changed meanwhile: plan again
		}
		if err := c.cache.waitForRevision(ctx, c.stop, resp.Header.Revision); err != nil {
			return TopicInfo{}, fmt.Errorf("controller: partitions of %s created, waiting for the metadata cache: %w", topic, err)
		}
		c.log.Info("created partitions", "topic", topic, "partitions.before", len(plan.existing),
			"partitions", newCount, "revision", resp.Header.Revision)
		t, _ := c.Topic(topic)
		return t, nil
	}
}

// partitionPlan is a validated CreatePartitions with the conditions its
// transaction needs.
type partitionPlan struct {
	topic    *TopicInfo
	existing []PartitionInfo
	added    []PartitionInfo
	cmps     []clientv3.Cmp
}

// planPartitions reads the topic and the brokers at one revision and
// validates and plans the request as Kafka does.
func (c *Controller) planPartitions(ctx context.Context, topic string, newCount int32, assignments [][]int32) (*partitionPlan, error) {
	topicKey := c.ks.topic(topic)
	resp, err := c.client.Txn(ctx).Then(
		clientv3.OpGet(topicKey),
		clientv3.OpGet(c.ks.partitionRange(topic), clientv3.WithPrefix()),
		clientv3.OpGet(c.ks.root()+brokersSegment, clientv3.WithPrefix()),
	).Commit()
	if err != nil {
		return nil, fmt.Errorf("controller: reading topic %s: %w", topic, err)
	}
	topicKVs := resp.Responses[0].GetResponseRange().Kvs
	if len(topicKVs) == 0 {
		return nil, &Error{Err: kerr.UnknownTopicOrPartition, Message: kerr.UnknownTopicOrPartition.Description}
	}
	t, err := decodeTopic(topicKVs[0].Value)
	if err != nil {
		return nil, fmt.Errorf("controller: topic %s: %w", topic, err)
	}
	t.Name = topic
	byIndex := map[int32]PartitionInfo{}
	for _, kv := range resp.Responses[1].GetResponseRange().Kvs {
		pk := c.ks.parse(string(kv.Key))
		if pk.kind != keyPartition || pk.topic != topic {
			continue
		}
		p, err := decodePartition(pk.partition, kv.Value)
		if err != nil {
			return nil, fmt.Errorf("controller: partition %s-%d: %w", topic, pk.partition, err)
		}
		byIndex[pk.partition] = p
	}
	brokers := c.decodeBrokers(resp.Responses[2].GetResponseRange().Kvs)

	current := int32(len(byIndex))
	switch {
	case newCount == current:
		return nil, apiError(kerr.InvalidPartitions, "Topic already has %d partition(s).", current)
	case newCount < current:
		return nil, apiError(kerr.InvalidPartitions, "The topic %s currently has %d partition(s); %d would not be an increase.",
			topic, current, newCount)
	}
	additional := int(newCount - current)
	if assignments != nil && len(assignments) != additional {
		return nil, apiError(kerr.InvalidReplicaAssignment,
			"Attempted to add %d additional partition(s), but only %d assignment(s) were specified.",
			additional, len(assignments))
	}
	if err := validateBatchSize(additional, 0); err != nil {
		return nil, err
	}
	first, ok := byIndex[0]
	if !ok || len(first.Replicas) == 0 {
		return nil, apiError(kerr.UnknownServerError, "Invalid state: topic %s appears to have no partitions.", topic)
	}
	// Kafka takes the replication factor from the first partition's replica
	// list as it is, also while that partition is being reassigned.
	replicationFactor := len(first.Replicas)

	var placed [][]int32
	if assignments != nil {
		for i, replicas := range assignments {
			if err := validateNewPartitionAssignment(replicas, replicationFactor, brokers); err != nil {
				return nil, err
			}
			if !slices.ContainsFunc(replicas, brokers.active) {
				return nil, apiError(kerr.InvalidReplicaAssignment, "All brokers specified in the manual partition "+
					"assignment for partition %d are fenced or in controlled shutdown.", int(current)+i)
			}
			placed = append(placed, slices.Clone(replicas))
		}
	} else {
		usable := make([]BrokerInfo, 0, len(brokers))
		for _, id := range slices.Sorted(maps.Keys(brokers)) {
			usable = append(usable, brokers[id].info)
		}
		placed, err = placeReplicas(globalRandom{}, usableBrokers(usable), additional, replicationFactor)
		if err != nil {
			return nil, err
		}
	}
	added := newPartitionStates(current, placed, brokers.active)
	for _, p := range added {
		if len(p.ISR) == 0 {
			return nil, apiError(kerr.InvalidReplicationFactor, "Unable to replicate the partition %d time(s): "+
				"All brokers are currently fenced or in controlled shutdown.", replicationFactor)
		}
	}

	plan := &partitionPlan{topic: &t, added: added}
	for i := range current {
		plan.existing = append(plan.existing, byIndex[i])
	}
	// Same topic incarnation, no partition added meanwhile, and every broker
	// of a new ISR still registered as read.
	plan.cmps = append(plan.cmps,
		clientv3.Compare(clientv3.CreateRevision(topicKey), "=", topicKVs[0].CreateRevision),
		clientv3.Compare(clientv3.CreateRevision(c.ks.partition(topic, current)), "=", 0))
	relied := map[int32]bool{}
	for _, p := range added {
		for _, id := range p.ISR {
			relied[id] = true
		}
	}
	for _, id := range slices.Sorted(maps.Keys(relied)) {
		plan.cmps = append(plan.cmps, clientv3.Compare(clientv3.ModRevision(c.ks.broker(id)), "=", brokers[id].modRev))
	}
	return plan, nil
}

// validateNewPartitionAssignment is validateManualPartitionAssignment with
// the topic's replication factor.
func validateNewPartitionAssignment(replicas []int32, replicationFactor int, brokers brokerSet) error {
	if err := validateReassignmentTarget(replicas, brokers); err != nil {
		return err
	}
	if len(replicas) != replicationFactor {
		return apiError(kerr.InvalidReplicaAssignment,
			"The manual partition assignment includes a partition with %d replica(s), but this is not "+
				"consistent with previous partitions, which have %d replica(s).", len(replicas), replicationFactor)
	}
	return nil
}
