package controller

// Partition reassignment, as Kafka's controller (ReplicationControlManager.
// alterPartitionReassignments, PartitionReassignmentReplicas,
// PartitionReassignmentRevert). The state lives in the partition key itself:
//
//  1. AlterPartitionReassignments writes the target replicas followed by the
//     replicas being removed as the replica list, with addingReplicas (target
//     minus current) and removingReplicas (current minus target) set. The new
//     replicas start following the leader.
//  2. The leader adds them to the ISR as they catch up (AlterPartition).
//  3. The AlterPartition whose ISR holds every target replica completes the
//     reassignment in the same write: the removed replicas leave the replica
//     list and the ISR, adding/removing are cleared, the leader epoch is
//     bumped and, if the leader was removed, the first target replica in the
//     ISR becomes leader.
//
// A reassignment that only reorders or drops replicas already in the ISR
// completes at once. Cancelling (nil replicas) reverts to the original
// replicas, keeping the ISR minus the replicas being added.

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
)

// PartitionReassignment is one partition of AlterPartitionReassignments:
// Replicas is the target replica list, nil to cancel an ongoing reassignment.
type PartitionReassignment struct {
	Topic     string
	Partition int32
	Replicas  []int32
}

// ReassignmentOptions are the request-wide settings of
// AlterPartitionReassignments.
type ReassignmentOptions struct {
	// DisallowReplicationFactorChange is KIP-860's
	// allowReplicationFactorChange=false (AlterPartitionReassignments v1,
	// kafka-reassign-partitions --disallow-replication-factor-change): a target
	// whose length differs from the replica count the partition has, or is
	// headed for when a reassignment is in progress, is refused with
	// INVALID_REPLICATION_FACTOR.
	DisallowReplicationFactorChange bool
}

// AlterPartitionReassignments starts, changes or cancels reassignments, each
// partition a compare-and-swap in etcd, and returns one result per request
// entry in order. Per partition errors, as Kafka: UNKNOWN_TOPIC_OR_PARTITION;
// INVALID_REPLICA_ASSIGNMENT for an empty, duplicated or unregistered target
// replica, or a cancellation that needs an unclean election the topic does
// not allow; INVALID_REPLICATION_FACTOR for a changed replica count with
// opts.DisallowReplicationFactorChange; NO_REASSIGNMENT_IN_PROGRESS for
// cancelling none. It returns once this controller's cache shows the changes.
func (c *Controller) AlterPartitionReassignments(ctx context.Context, reqs []PartitionReassignment, opts ReassignmentOptions) ([]PartitionResult, error) {
	if !c.running() {
		return nil, ErrNotStarted
	}
	refs := make([]partitionRef, len(reqs))
	for i, r := range reqs {
		refs[i] = partitionRef{r.Topic, r.Partition}
	}
	outcomes, err := c.changePartitions(ctx, refs, changeOptions{waitForCache: true},
		func(v *partitionView, brokers brokerSet) (*PartitionInfo, []int32, error) {
			if v.topic == nil {
				return nil, nil, apiError(kerr.UnknownTopicOrPartition, "Unable to find a topic named %s.", v.ref.topic)
			}
			if !v.exists {
				return nil, nil, apiError(kerr.UnknownTopicOrPartition, "Unable to find partition %s:%d.", v.ref.topic, v.ref.partition)
			}
			if reqs[v.index].Replicas == nil {
				return c.cancelReassignment(v, brokers)
			}
			return c.changeReassignment(v, reqs[v.index].Replicas, brokers, !opts.DisallowReplicationFactorChange)
		})
	if err != nil {
		return nil, err
	}
	results := make([]PartitionResult, len(outcomes))
	ok := 0
	for i, o := range outcomes {
		results[i] = PartitionResult{Topic: o.ref.topic, Partition: o.ref.partition, Err: o.err}
		if o.err != nil {
			c.log.Info("rejected partition reassignment", "topic", o.ref.topic, "partition", o.ref.partition,
				"err", ErrorMessage(o.err), "code", errorName(o.err))
			continue
		}
		ok++
		if o.changed {
			c.log.Info("altered partition reassignment", "topic", o.ref.topic, "partition", o.ref.partition,
				"replicas", o.after.Replicas, "adding", o.after.AddingReplicas, "removing", o.after.RemovingReplicas,
				"isr", o.after.ISR, "leader", o.after.Leader, "leader.epoch", o.after.LeaderEpoch)
		}
	}
	return results, nil
}

// changeReassignment is ReplicationControlManager.changePartitionReassignment.
func (c *Controller) changeReassignment(v *partitionView, target []int32, brokers brokerSet, allowRFChange bool) (*PartitionInfo, []int32, error) {
	if err := validateReassignmentTarget(target, brokers); err != nil {
		return nil, nil, err
	}
	p := v.state
	if !allowRFChange {
		if err := validateReplicationFactorUnchanged(p, target); err != nil {
			return nil, nil, err
		}
	}
	removing := without(p.Replicas, target...)
	adding := without(target, p.Replicas...)
	slices.Sort(removing) // Kafka computes both as sorted sets
	slices.Sort(adding)
	replicas := append(slices.Clone(target), removing...)

	b := c.changeOf(v.topic, p, brokers.active)
	if !slices.Equal(replicas, p.Replicas) {
		b.targetReplicas = replicas
	}
	// Kafka sets removing and adding only when non-empty, so a new target
	// without either keeps those of an ongoing reassignment until completion
	// clears them.
	if len(removing) > 0 {
		b.targetRemoving = removing
	}
	if len(adding) > 0 {
		b.targetAdding = adding
	}
	next, changed := b.build()
	if !changed {
		return nil, nil, nil
	}
	return &next, nil, nil
}

// validateReassignmentTarget is validateManualPartitionAssignment without a
// replication factor: non-empty, registered brokers, no duplicates.
func validateReassignmentTarget(target []int32, brokers brokerSet) error {
	if len(target) == 0 {
		return apiError(kerr.InvalidReplicaAssignment, "The manual partition assignment includes an empty replica list.")
	}
	sorted := slices.Sorted(slices.Values(target))
	for i, id := range sorted {
		if _, ok := brokers[id]; !ok {
			return apiError(kerr.InvalidReplicaAssignment,
				"The manual partition assignment includes broker %d, but no such broker is registered.", id)
		}
		if i > 0 && sorted[i-1] == id {
			return apiError(kerr.InvalidReplicaAssignment,
				"The manual partition assignment includes the broker %d more than once.", id)
		}
	}
	return nil
}

// validateReplicationFactorUnchanged is Kafka's
// validatePartitionReplicationFactorUnchanged (KIP-860): the target must be
// as long as the replica set, or during a reassignment as the set it is
// headed for (replicas and adding, without removing).
func validateReplicationFactorUnchanged(p PartitionInfo, target []int32) error {
	current := len(p.Replicas)
	if reassignmentInProgress(p) {
		set := map[int32]bool{}
		for _, r := range p.Replicas {
			set[r] = true
		}
		for _, r := range p.AddingReplicas {
			set[r] = true
		}
		for _, r := range p.RemovingReplicas {
			delete(set, r)
		}
		current = len(set)
	}
	if current != len(target) {
		return apiError(kerr.InvalidReplicationFactor, "The replication factor is changed from %d to %d", current, len(target))
	}
	return nil
}

// cancelReassignment is ReplicationControlManager.cancelPartitionReassignment
// with PartitionReassignmentRevert: back to the original replicas, the ISR
// without the replicas being added (or, if that leaves none, the first
// original replica, which is an unclean election).
func (c *Controller) cancelReassignment(v *partitionView, brokers brokerSet) (*PartitionInfo, []int32, error) {
	p := v.state
	if !reassignmentInProgress(p) {
		return nil, nil, &Error{Err: kerr.NoReassignmentInProgress}
	}
	original := without(p.Replicas, p.AddingReplicas...)
	isr := without(p.ISR, p.AddingReplicas...)
	unclean := c.uncleanElectionEnabled(v.topic)
	if len(isr) == 0 {
		if len(original) == 0 {
			return nil, nil, apiError(kerr.InvalidReplicaAssignment,
				"Invalid replica assignment: addingReplicas contains all replicas.")
		}
		if !unclean {
			return nil, nil, apiError(kerr.InvalidReplicaAssignment,
				"Unable to revert partition assignment for %s:%d because it would require an unclean leader election.",
				v.ref.topic, v.ref.partition)
		}
		isr = original[:1]
	}
	b := c.changeOf(v.topic, p, brokers.active)
	if unclean {
		b.election = electionUnclean
	}
	b.targetISR, b.targetReplicas = isr, original
	b.targetAdding, b.targetRemoving = nil, nil
	next, changed := b.build()
	if !changed {
		return nil, nil, nil
	}
	return &next, nil, nil
}
