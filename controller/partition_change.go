package controller

import "slices"

// noLeader is Kafka's LeaderConstants.NO_LEADER: a partition without a leader
// is offline.
const noLeader int32 = -1

// election says how partitionChange picks a leader (Kafka's
// PartitionChangeBuilder.Election).
type election int

const (
	// electionOnline keeps the partition online from its ISR: the current
	// leader if it is still acceptable, else the first acceptable ISR member
	// in replica order, else no leader.
	electionOnline election = iota
	// electionPreferred is electionOnline that moves leadership to the
	// preferred (first) replica when it is an acceptable ISR member.
	electionPreferred
	// electionUnclean is electionOnline that, with no acceptable ISR member,
	// falls back to the first acceptable replica outside the ISR and resets the
	// ISR to it. Records acknowledged by the old ISR may be lost.
	electionUnclean
)

// partitionChange computes the next state of one partition, porting Kafka's
// PartitionChangeBuilder (metadata/.../controller/PartitionChangeBuilder.java)
// without eligible leader replicas (KIP-966), directories or leader recovery
// state. Set the targets, then build:
//
//   - a reassignment completes when the target ISR holds every target replica
//     (PartitionReassignmentReplicas.maybeCompleteReassignment);
//   - the leader is (re-)elected with the election type against the target
//     ISR and acceptable; a leader change bumps the leader epoch;
//   - an empty target ISR is never written: the ISR keeps its last member(s)
//     so that the partition can come back when one of them returns, with
//     leader -1 meanwhile (Kafka without ELR);
//   - removing a replica bumps the leader epoch even without a leader change;
//     an ISR shrink does not (Kafka's metadata versions from 3.6);
//   - every change bumps the partition epoch by one.
type partitionChange struct {
	cur        PartitionInfo
	acceptable func(int32) bool // may lead: registered, not shutting down
	election   election

	targetISR      []int32
	targetReplicas []int32
	targetAdding   []int32
	targetRemoving []int32
}

func newPartitionChange(cur PartitionInfo, acceptable func(int32) bool) *partitionChange {
	return &partitionChange{
		cur:            cur,
		acceptable:     acceptable,
		targetISR:      cur.ISR,
		targetReplicas: cur.Replicas,
		targetAdding:   cur.AddingReplicas,
		targetRemoving: cur.RemovingReplicas,
	}
}

// build returns the next state and whether it differs from the current one.
// The current state's slices are never modified.
func (b *partitionChange) build() (PartitionInfo, bool) {
	b.completeReassignmentIfNeeded()

	next := b.cur
	changed := false
	leaderChanged := false
	isrSet := false

	if leader, unclean := b.electLeader(); leader != b.cur.Leader {
		next.Leader = leader
		leaderChanged = true
		if unclean {
			// An unclean election forcibly resets the ISR to the new leader.
			next.ISR = []int32{leader}
			isrSet = true
		}
	}
	// Removing a replica bumps the leader epoch, so that the removed
	// replica's fetches are fenced.
	if !leaderChanged && !containsAll(b.targetReplicas, b.cur.Replicas) {
		leaderChanged = true
	}
	if !isrSet && len(b.targetISR) > 0 && !slices.Equal(b.targetISR, b.cur.ISR) {
		next.ISR = slices.Clone(b.targetISR)
		isrSet = true
	}
	changed = leaderChanged || isrSet
	if len(b.targetReplicas) > 0 && !slices.Equal(b.targetReplicas, b.cur.Replicas) {
		next.Replicas = slices.Clone(b.targetReplicas)
		changed = true
	}
	if !slices.Equal(b.targetAdding, b.cur.AddingReplicas) {
		next.AddingReplicas = nilIfEmpty(b.targetAdding)
		changed = true
	}
	if !slices.Equal(b.targetRemoving, b.cur.RemovingReplicas) {
		next.RemovingReplicas = nilIfEmpty(b.targetRemoving)
		changed = true
	}
	if !changed {
		return b.cur, false
	}
	if leaderChanged {
		next.LeaderEpoch++
	}
	next.PartitionEpoch++
	return next, true
}

// completeReassignmentIfNeeded ends an ongoing reassignment once the target
// ISR holds every replica that stays: the removed replicas leave the replica
// list and the ISR, adding and removing are cleared.
func (b *partitionChange) completeReassignmentIfNeeded() {
	if len(b.targetAdding) == 0 && len(b.targetRemoving) == 0 {
		return
	}
	isr, replicas := b.targetISR, b.targetReplicas
	if len(b.targetRemoving) > 0 {
		isr = without(isr, b.targetRemoving...)
		if len(isr) == 0 {
			return
		}
		replicas = without(replicas, b.targetRemoving...)
		if len(replicas) == 0 {
			return
		}
	}
	if !containsAll(isr, replicas) {
		return
	}
	b.targetISR, b.targetReplicas = isr, replicas
	b.targetAdding, b.targetRemoving = nil, nil
}

// validLeader reports whether r may lead after the change: in the target ISR
// and acceptable.
func (b *partitionChange) validLeader(r int32) bool {
	return slices.Contains(b.targetISR, r) && b.acceptable(r)
}

// electLeader returns the leader after the change (noLeader when none) and
// whether the election is unclean.
func (b *partitionChange) electLeader() (int32, bool) {
	if b.election == electionPreferred && len(b.targetReplicas) > 0 && b.validLeader(b.targetReplicas[0]) {
		return b.targetReplicas[0], false
	}
	if b.validLeader(b.cur.Leader) {
		return b.cur.Leader, false
	}
	for _, r := range b.targetReplicas {
		if b.validLeader(r) {
			return r, false
		}
	}
	if b.election == electionUnclean {
		for _, r := range b.targetReplicas {
			if b.acceptable(r) {
				return r, true
			}
		}
	}
	return noLeader, false
}

// containsAll reports whether every element of sub is in set.
func containsAll(set, sub []int32) bool {
	for _, r := range sub {
		if !slices.Contains(set, r) {
			return false
		}
	}
	return true
}

// without returns a copy of list without the given values.
func without(list []int32, drop ...int32) []int32 {
	out := make([]int32, 0, len(list))
	for _, r := range list {
		if !slices.Contains(drop, r) {
			out = append(out, r)
		}
	}
	return out
}

func nilIfEmpty(list []int32) []int32 {
	if len(list) == 0 {
		return nil
	}
	return slices.Clone(list)
}

// reassignmentInProgress reports whether p is being reassigned.
func reassignmentInProgress(p PartitionInfo) bool {
	return len(p.AddingReplicas) > 0 || len(p.RemovingReplicas) > 0
}
