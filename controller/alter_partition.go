package controller

// AlterPartition: ISR changes requested by a partition's leader, with Kafka's
// semantics (ReplicationControlManager.alterPartition and
// validateAlterPartitionData, AlterPartition v3 with broker epochs, KIP-903).
// The leader shrinks the ISR when a follower falls behind for longer than
// replica.lag.time.max.ms and expands it when a follower catches up; a
// reassignment completes when its new replicas are all in the ISR.
//
// The request is executed by the leader's own controller as a
// compare-and-swap on the partition key (see changes.go), not forwarded to
// the active controller: the checks read the partition and the brokers at one
// revision, and the write fails if any broker of the new ISR changed its
// registration since, so a broker that died or began a controlled shutdown
// meanwhile is never added.

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
)

// ISRMember is a replica proposed for the ISR with the broker epoch the
// leader saw in its fetches (Kafka's BrokerState): -1 skips the epoch check.
type ISRMember struct {
	BrokerID    int32
	BrokerEpoch int64
}

// AlterPartitionRequest is one partition of Kafka's AlterPartition request,
// sent by the partition's leader, which is this broker.
type AlterPartitionRequest struct {
	Topic string
	// TopicID, when not zero, must be the topic's id (UNKNOWN_TOPIC_ID
	// otherwise), so that a leader of a deleted topic cannot alter a new one
	// of the same name.
	TopicID        [16]byte
	Partition      int32
	LeaderEpoch    int32
	PartitionEpoch int32
	NewISR         []ISRMember
}

// AlterPartitionISR changes the ISR of a partition this broker leads. It
// checks, as Kafka's controller, in this order:
//
//   - the topic and partition exist (UNKNOWN_TOPIC_OR_PARTITION, or
//     UNKNOWN_TOPIC_ID when req.TopicID does not match);
//   - this broker is registered (STALE_BROKER_EPOCH otherwise);
//   - the epochs are not newer than the controller's (NOT_CONTROLLER: the
//     caller should retry), the leader epoch is the current one
//     (FENCED_LEADER_EPOCH), this broker is the leader (INVALID_REQUEST) and
//     the partition epoch is the current one (INVALID_UPDATE_VERSION);
//   - the new ISR is a duplicate-free subset of the replicas that contains
//     the leader (INVALID_REQUEST);
//   - every member is registered, unfenced, not in controlled shutdown and, when its
//     epoch is given, registered with that epoch (INELIGIBLE_REPLICA).
//
// On success the partition epoch is bumped (an unchanged ISR writes nothing)
// and the new state is returned once this controller's cache shows it. If the
// new ISR completes a reassignment that moves leadership away from this
// broker, the change is written and NEW_LEADER_ELECTED returned with the new
// state. Errors are *Error values.
func (c *Controller) AlterPartitionISR(ctx context.Context, req AlterPartitionRequest) (PartitionInfo, error) {
	if !c.running() {
		return PartitionInfo{}, ErrNotStarted
	}
	self := c.cfg.NodeID
	refs := []partitionRef{{req.Topic, req.Partition}}
	outcomes, err := c.changePartitions(ctx, refs, changeOptions{waitForCache: true},
		func(v *partitionView, brokers brokerSet) (*PartitionInfo, []int32, error) {
			return c.alterPartitionChange(self, req, v, brokers)
		})
	if err != nil {
		return PartitionInfo{}, err
	}
	o := outcomes[0]
	if o.err != nil {
		c.log.Info("rejected AlterPartition", "topic", req.Topic, "partition", req.Partition,
			"leader.epoch", req.LeaderEpoch, "partition.epoch", req.PartitionEpoch, "new.isr", isrIDs(req.NewISR),
			"current.leader.epoch", o.before.LeaderEpoch, "current.partition.epoch", o.before.PartitionEpoch,
			"err", ErrorMessage(o.err), "code", errorName(o.err))
		return o.before, o.err
	}
	if !o.changed {
		return o.after, nil
	}
	c.log.Info("altered ISR", "topic", req.Topic, "partition", req.Partition, "isr", o.after.ISR,
		"leader", o.after.Leader, "leader.epoch", o.after.LeaderEpoch, "partition.epoch", o.after.PartitionEpoch,
		"reassignment.completed", reassignmentInProgress(o.before) && !reassignmentInProgress(o.after))
	if o.after.Leader != self {
		// Completing a reassignment moved leadership: the change is made,
		// but the caller must learn the new leader (Kafka answers the same).
		return o.after, &Error{Err: kerr.NewLeaderElected,
			Message: "the ISR change completed the partition's reassignment and elected a new leader"}
	}
	return o.after, nil
}

// alterPartitionChange validates req against the state read and computes the
// change, as validateAlterPartitionData and the PartitionChangeBuilder call
// of alterPartition.
func (c *Controller) alterPartitionChange(self int32, req AlterPartitionRequest, v *partitionView, brokers brokerSet) (*PartitionInfo, []int32, error) {
	if v.topic == nil {
		if req.TopicID != ([16]byte{}) {
			return nil, nil, &Error{Err: kerr.UnknownTopicID}
		}
		return nil, nil, &Error{Err: kerr.UnknownTopicOrPartition}
	}
	if req.TopicID != ([16]byte{}) && req.TopicID != v.topic.ID {
		return nil, nil, &Error{Err: kerr.UnknownTopicID}
	}
	if !v.exists {
		return nil, nil, &Error{Err: kerr.UnknownTopicOrPartition}
	}
	if _, ok := brokers[self]; !ok {
		return nil, nil, apiError(kerr.StaleBrokerEpoch, "broker %d is not registered", self)
	}
	p := v.state
	switch {
	case req.LeaderEpoch > p.LeaderEpoch || req.PartitionEpoch > p.PartitionEpoch:
		return nil, nil, apiError(kerr.NotController,
			"the request's leader epoch %d or partition epoch %d is newer than the controller's %d and %d",
			req.LeaderEpoch, req.PartitionEpoch, p.LeaderEpoch, p.PartitionEpoch)
	case req.LeaderEpoch < p.LeaderEpoch:
		return nil, nil, apiError(kerr.FencedLeaderEpoch, "the current leader epoch is %d, not %d", p.LeaderEpoch, req.LeaderEpoch)
	case self != p.Leader:
		return nil, nil, apiError(kerr.InvalidRequest, "the current leader is %d", p.Leader)
	case req.PartitionEpoch < p.PartitionEpoch:
		return nil, nil, apiError(kerr.InvalidUpdateVersion,
			"the current partition epoch is %d, not %d", p.PartitionEpoch, req.PartitionEpoch)
	}
	newISR := isrIDs(req.NewISR)
	if !validISR(p.Replicas, newISR) {
		return nil, nil, apiError(kerr.InvalidRequest, "invalid ISR %v for replicas %v", newISR, p.Replicas)
	}
	if !slices.Contains(newISR, p.Leader) {
		return nil, nil, apiError(kerr.InvalidRequest, "the ISR %v does not include the leader %d", newISR, p.Leader)
	}
	for _, m := range req.NewISR {
		b, ok := brokers[m.BrokerID]
		var reason string
		switch {
		case !ok:
			reason = "not registered"
		case b.info.InControlledShutdown:
			reason = "shutting down"
		case b.info.Fenced:
			reason = "fenced"
		case m.BrokerEpoch != -1 && m.BrokerEpoch != b.info.Epoch:
			reason = "broker epoch mismatch"
		default:
			continue
		}
		return nil, nil, apiError(kerr.IneligibleReplica, "replica %d in the new ISR %v is ineligible: %s",
			m.BrokerID, newISR, reason)
	}
	b := c.changeOf(v.topic, p, brokers.active)
	b.targetISR = newISR
	if c.uncleanElectionEnabled(v.topic) {
		b.election = electionUnclean
	}
	next, changed := b.build()
	if !changed {
		return nil, nil, nil
	}
	// Every member was checked, not only the added ones: a member whose
	// registration changes before the write makes it retry and fail here.
	return &next, newISR, nil
}

// validISR is Kafka's Replicas.validateIsr: no negative ids, no duplicates,
// every member a replica.
func validISR(replicas, isr []int32) bool {
	for i, id := range isr {
		if id < 0 || !slices.Contains(replicas, id) || slices.Contains(isr[:i], id) {
			return false
		}
	}
	return true
}

func isrIDs(members []ISRMember) []int32 {
	out := make([]int32, len(members))
	for i, m := range members {
		out[i] = m.BrokerID
	}
	return out
}

// errorName returns the Kafka error name of err, or "".
func errorName(err error) string {
	if ce, ok := err.(*Error); ok {
		return ce.Err.Message
	}
	return ""
}
