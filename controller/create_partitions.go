package controller

// CreatePartitions, as Kafka's ReplicationControlManager.createPartitions:
// the new partitions are placed on the usable brokers with the striped
// placer (or an explicit assignment), their ISR is their active replicas and
// their leader the first of those, and those of every topic of the request
// are written in one etcd transaction that fails if a topic was re-created
// or grew meanwhile, or a broker they rely on changed its registration (then
// the request is planned again).

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
	var planned TopicInfo
	errs := c.createPartitions(ctx, []PartitionsChange{{Topic: topic, Count: newCount, Assignments: assignments}}, validateOnly, nil,
		func(_ int, t TopicInfo) { planned = t })
	if errs[0] != nil {
		return TopicInfo{}, errs[0]
	}
	if validateOnly {
		return planned, nil
	}
	t, _ := c.Topic(topic)
	return t, nil
}

// PartitionsChange is one topic of a CreatePartitions request: grow Topic
// to Count partitions, the new ones on Assignments (one replica list per new
// partition) or, when nil, placed by the controller.
type PartitionsChange struct {
	Topic       string
	Count       int32
	Assignments [][]int32
}

// CreatePartitionsBatch applies the topics of one CreatePartitions request
// as Kafka's ReplicationControlManager.createPartitions does: each topic is
// validated and planned on its own (CreatePartitions' errors), and the new
// partitions of every topic that passes are written in one etcd transaction,
// Kafka's one atomic batch of records, so the request takes effect whole or
// not at all. A topic whose partitions would take the request past 10,000
// new partitions (Kafka's records per operation) fails with
// POLICY_VIOLATION. admit, when not nil, is asked once per topic, after its
// count is validated, with the partitions it would add (Kafka's
// applyPartitionChangeQuota: the controller mutation quota); an error it
// returns is the topic's result. The result has one error per change, nil
// for a topic created (or, with validateOnly, valid); it returns once this
// controller's cache has applied the change.
func (c *Controller) CreatePartitionsBatch(ctx context.Context, changes []PartitionsChange, validateOnly bool, admit func(i, added int) error) []error {
	return c.createPartitions(ctx, changes, validateOnly, admit, nil)
}

// createPartitions is CreatePartitionsBatch; planned, when not nil, gets the
// topic as it would be after the change, for each topic that passes.
func (c *Controller) createPartitions(ctx context.Context, changes []PartitionsChange, validateOnly bool,
	admit func(i, added int) error, planned func(i int, t TopicInfo)) []error {
	errs := make([]error, len(changes))
	if !c.running() {
		for i := range errs {
			errs[i] = ErrNotStarted
		}
		return errs
	}
	c.createMu.Lock()
	defer c.createMu.Unlock()
	// A topic is admitted once, on its first plan: planning again after a
	// conflict must not take the quota twice.
	admitted := make([]*error, len(changes))
	admitOnce := func(i int) func(added int) error {
		return func(added int) error {
			if admitted[i] == nil {
				var err error
				if admit != nil {
					err = admit(i, added)
				}
				admitted[i] = &err
			}
			return *admitted[i]
		}
	}
	for {
		plans := make([]*partitionPlan, len(changes))
		total := 0
		for i, ch := range changes {
			plan, err := c.planPartitions(ctx, ch.Topic, ch.Count, ch.Assignments, admitOnce(i))
			if err == nil && total+len(plan.added) > maxRecordsPerTopicCreation {
				err = apiError(kerr.PolicyViolation, "Unable to perform excessively large batch operation.")
			}
			errs[i] = err
			if err != nil {
				continue
			}
			total += len(plan.added)
			plans[i] = plan
		}
		if validateOnly {
			for i, plan := range plans {
				if plan != nil && planned != nil {
					t := *plan.topic
					t.Partitions = append(slices.Clone(plan.existing), plan.added...)
					planned(i, t)
				}
			}
			return errs
		}
		var ops []clientv3.Op
		var cmps []clientv3.Cmp
		seenCmp := map[string]bool{}
		for _, plan := range plans {
			if plan == nil {
				continue
			}
			for _, p := range plan.added {
				ops = append(ops, clientv3.OpPut(c.ks.partition(plan.topic.Name, p.Partition), encodePartition(p)))
			}
			for _, cmp := range plan.cmps {
				// The brokers relied on repeat across topics.
				if k := fmt.Sprintf("%s/%v/%v/%v", cmp.Key, cmp.Target, cmp.Result, cmp.TargetUnion); !seenCmp[k] {
					seenCmp[k] = true
					cmps = append(cmps, cmp)
				}
			}
		}
		if len(ops) == 0 {
			return errs
		}
		resp, err := c.client.Txn(ctx).If(cmps...).Then(ops...).Commit()
		if err != nil {
			if errors.Is(err, rpctypes.ErrTooManyOps) || errors.Is(err, rpctypes.ErrRequestTooLarge) {
				err = apiError(kerr.PolicyViolation,
					"Unable to perform excessively large batch operation (etcd refused a transaction of %d operations: %v).",
					len(ops), err)
			} else {
				err = fmt.Errorf("controller: creating partitions: %w", err)
			}
			for i, plan := range plans {
				if plan != nil {
					errs[i] = err
				}
			}
			return errs
		}
		if !resp.Succeeded {
			if err := ctx.Err(); err != nil {
				for i, plan := range plans {
					if plan != nil {
						errs[i] = err
					}
				}
				return errs
			}
			continue // a topic or a broker changed meanwhile: plan again
		}
		if err := c.cache.waitForRevision(ctx, c.stop, resp.Header.Revision); err != nil {
			for i, plan := range plans {
				if plan != nil {
					errs[i] = fmt.Errorf("controller: partitions of %s created, waiting for the metadata cache: %w", plan.topic.Name, err)
				}
			}
			return errs
		}
		for _, plan := range plans {
			if plan != nil {
				c.log.Info("created partitions", "topic", plan.topic.Name, "partitions.before", len(plan.existing),
					"partitions", len(plan.existing)+len(plan.added), "revision", resp.Header.Revision)
			}
		}
		return errs
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
func (c *Controller) planPartitions(ctx context.Context, topic string, newCount int32, assignments [][]int32, admit func(added int) error) (*partitionPlan, error) {
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
	if err := admit(additional); err != nil {
		return nil, err
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
