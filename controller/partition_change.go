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
// with eligible leader replicas (KIP-966) but without directories or leader
// recovery state. Set the targets, then build:
//
//   - a reassignment completes when the target ISR holds every target replica
//     (PartitionReassignmentReplicas.maybeCompleteReassignment);
//   - with ELR enabled and a target ISR smaller than minISR, the replicas
//     leaving the ISR join the ELR (not those that shut down uncleanly); an
//     ISR of at least minISR clears the ELR (maybePopulateTargetElr);
//   - the leader is (re-)elected with the election type: from the target
//     ISR, else (an empty ISR) from the ELR, a leader taken from the ELR
//     becoming the ISR alone; else the last known leader (lastKnownElr of one
//     member), else for an unclean election any acceptable replica (the ISR is
//     then reset to it and the ELR cleared); a leader change bumps the leader
//     epoch;
//   - without ELR an empty target ISR is never written: the ISR keeps its
//     last member(s) so that the partition can come back when one of them
//     returns, with leader -1 meanwhile; with ELR the ISR may be empty;
//   - with ELR, lastKnownElr records the last leader of a partition left
//     without one (cleared once a leader is back);
//   - removing a replica bumps the leader epoch even without a leader change;
//     an ISR shrink does not (Kafka's metadata versions from 3.6);
//   - every change bumps the partition epoch by one.
type partitionChange struct {
	cur        PartitionInfo
	acceptable func(int32) bool // may lead: registered, not shutting down
	election   election
	// elrEnabled is eligible.leader.replicas.version >= 1; minISR the
	// topic's min.insync.replicas, at most the replication factor
	// (ReplicationControlManager.getTopicEffectiveMinIsr).
	elrEnabled bool
	minISR     int
	// uncleanShutdown lists replicas that restarted after an unclean
	// shutdown: they may not stay in or join the ELR.
	uncleanShutdown []int32
	// noLastKnownLeader is Kafka's useLastKnownLeaderInBalancedRecovery
	// false (its controller always leaves it true; Kafka's tests set it):
	// lastKnownElr then keeps the replicas that left the ISR and are not in
	// the ELR, and the last leader is never elected from it.
	noLastKnownLeader bool

	targetISR          []int32
	targetReplicas     []int32
	targetAdding       []int32
	targetRemoving     []int32
	targetELR          []int32
	targetLastKnownELR []int32
}

func newPartitionChange(cur PartitionInfo, acceptable func(int32) bool) *partitionChange {
	return &partitionChange{
		cur:                cur,
		acceptable:         acceptable,
		targetISR:          cur.ISR,
		targetReplicas:     cur.Replicas,
		targetAdding:       cur.AddingReplicas,
		targetRemoving:     cur.RemovingReplicas,
		targetELR:          cur.ELR,
		targetLastKnownELR: cur.LastKnownELR,
	}
}

// withELR enables eligible leader replicas with the topic's effective
// min.insync.replicas.
func (b *partitionChange) withELR(minISR int) *partitionChange {
	b.elrEnabled, b.minISR = true, minISR
	return b
}

// build returns the next state and whether it differs from the current one.
// The current state's slices are never modified.
func (b *partitionChange) build() (PartitionInfo, bool) {
	b.completeReassignmentIfNeeded()
	b.populateTargetELR()

	next := b.cur
	// leaderSet and isrSet are Kafka's PartitionChangeRecord fields being
	// set: a set leader (even the same one) bumps the leader epoch.
	leaderSet, isrSet := false, false

	if leader, unclean := b.electLeader(); leader != b.cur.Leader {
		if slices.Contains(b.targetELR, leader) {
			// Elected from the ELR: it is the ISR now.
			b.targetISR = []int32{leader}
			b.targetELR = without(b.targetELR, leader)
		}
		next.Leader, leaderSet = leader, true
		if unclean {
			// An unclean election forcibly resets the ISR to the new leader.
			next.ISR, isrSet = []int32{leader}, true
		}
	}
	// Removing a replica bumps the leader epoch, so that the removed
	// replica's fetches are fenced.
	if !leaderSet && !containsAll(b.targetReplicas, b.cur.Replicas) {
		leaderSet = true
	}
	elrSet, lastKnownSet := b.updateELR(isrSet)
	if !isrSet && (len(b.targetISR) > 0 || b.elrEnabled) && !slices.Equal(b.targetISR, b.cur.ISR) {
		next.ISR, isrSet = slices.Clone(b.targetISR), true
	}
	if elrSet {
		next.ELR = nilIfEmpty(b.targetELR)
	}
	if lastKnownSet {
		next.LastKnownELR = nilIfEmpty(b.targetLastKnownELR)
	}
	if b.updateLastKnownLeader(&next, leaderSet) {
		lastKnownSet = true
	}
	changed := leaderSet || isrSet || elrSet || lastKnownSet
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
	if leaderSet {
		next.LeaderEpoch++
	}
	next.PartitionEpoch++
	return next, true
}

// populateTargetELR is maybePopulateTargetElr: an ISR of at least minISR
// clears the ELR; a smaller one moves the replicas leaving the ISR into the
// ELR (less those that shut down uncleanly), and the last known ELR keeps
// what is in neither.
func (b *partitionChange) populateTargetELR() {
	if !b.elrEnabled {
		return
	}
	if len(b.targetISR) >= b.minISR {
		b.targetELR, b.targetLastKnownELR = nil, nil
		return
	}
	candidates := union(b.targetELR, b.cur.ISR)
	elr := make([]int32, 0, len(candidates))
	for _, r := range candidates {
		if !slices.Contains(b.targetISR, r) && !slices.Contains(b.uncleanShutdown, r) {
			elr = append(elr, r)
		}
	}
	var lastKnown []int32
	for _, r := range union(candidates, b.targetLastKnownELR) {
		if !slices.Contains(b.targetISR, r) && !slices.Contains(elr, r) {
			lastKnown = append(lastKnown, r)
		}
	}
	b.targetELR, b.targetLastKnownELR = elr, lastKnown
}

// updateELR is maybeUpdateRecordElr: an unclean election (isrSet already) or
// ELR disabled clears the ELR. It reports whether the ELR and lastKnownElr
// change. In Kafka's controller lastKnownElr holds the last known leader
// (useLastKnownLeaderInBalancedRecovery), which updateLastKnownLeader
// maintains; only without it is the last known ELR written here.
func (b *partitionChange) updateELR(isrSet bool) (elrSet, lastKnownSet bool) {
	if isrSet || !b.elrEnabled {
		b.targetELR, b.targetLastKnownELR = nil, nil
	}
	elrSet = !slices.Equal(b.targetELR, b.cur.ELR)
	if !b.noLastKnownLeader {
		return elrSet, false
	}
	return elrSet, !slices.Equal(b.targetLastKnownELR, b.cur.LastKnownELR)
}

// updateLastKnownLeader is maybeUpdateLastKnownLeader (as simplified in
// Kafka 4.2): when the partition loses its leader, lastKnownElr records it
// unless it holds one already; when the partition gets or keeps a leader,
// lastKnownElr is cleared. It reports whether lastKnownElr changes.
func (b *partitionChange) updateLastKnownLeader(next *PartitionInfo, leaderSet bool) bool {
	if !b.elrEnabled || b.noLastKnownLeader {
		return false
	}
	cur := b.cur.LastKnownELR
	if leaderSet && next.Leader == noLeader && len(cur) == 0 {
		if b.cur.Leader == noLeader {
			return false // a replica removal's epoch bump: no leader to record
		}
		next.LastKnownELR = []int32{b.cur.Leader}
		return true
	}
	// Kafka: the record's leader is set to a replica, or the partition had
	// a leader and the record does not set "none".
	hasLeader := leaderSet && next.Leader >= 0 || b.cur.Leader != noLeader && !(leaderSet && next.Leader == noLeader)
	if hasLeader && len(cur) > 0 {
		next.LastKnownELR = nil
		return true
	}
	return false
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
// (or, with the ISR empty, in the target ELR) and acceptable.
func (b *partitionChange) validLeader(r int32) bool {
	return (slices.Contains(b.targetISR, r) || len(b.targetISR) == 0 && slices.Contains(b.targetELR, r)) &&
		b.acceptable(r)
}

// electLeader returns the leader after the change (noLeader when none) and
// whether the election is unclean (Kafka's electPreferredLeader and
// electAnyLeader).
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
	if b.canElectLastKnownLeader() {
		return b.cur.LastKnownELR[0], true
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

// canElectLastKnownLeader reports whether the last known leader may lead a
// partition whose ISR and ELR are both empty ("balanced recovery", which
// Kafka does even without unclean.leader.election.enable: it is the replica
// that led last). Kafka's check of the leader's liveness only logs; here an
// unacceptable last leader is not elected, as Kafka's documentation says
// ("select the last known leader if it is unfenced").
func (b *partitionChange) canElectLastKnownLeader() bool {
	if !b.elrEnabled || b.noLastKnownLeader || len(b.targetELR) > 0 || len(b.targetISR) > 0 {
		return false
	}
	return len(b.cur.LastKnownELR) == 1 && b.acceptable(b.cur.LastKnownELR[0])
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

// union returns a's elements then b's not in a, in ascending order (Kafka
// builds these lists from hash sets of small integers, which iterate in
// ascending order).
func union(a, b []int32) []int32 {
	out := slices.Clone(a)
	for _, r := range b {
		if !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	slices.Sort(out)
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
