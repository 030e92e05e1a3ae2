package controller

// Broker lifecycle and partition leadership, as Kafka's controller handles
// fencing (ReplicationControlManager.handleBrokerFenced / Unregistered),
// unfencing (handleBrokerUnfenced) and controlled shutdown
// (handleBrokerInControlledShutdown), all through generateLeaderAndIsrUpdates:
//
//   - A broker whose registration is gone (lease expired or revoked) or that
//     is in controlled shutdown is inactive: it leaves every ISR (into the
//     ELR when the ISR falls below min.insync.replicas, KIP-966: the ISR may
//     become empty), and every partition it led gets the first active ISR
//     member, in replica order, as leader with the leader epoch bumped, or
//     with the ISR empty the first active ELR member, or the last leader;
//     with none the leader is -1 and the partition is offline, unless
//     unclean.leader.election.enable lets the first active replica outside
//     the ISR take over (the ISR is then reset to it).
//   - An active broker that is in the ISR or ELR of a leaderless partition,
//     or was its last leader, becomes its leader (the partition comes back
//     online when one returns). A broker that comes back is otherwise not leader of anything
//     until an election makes it (preferred leader election, auto rebalance)
//     and is not in any ISR until a leader adds it (AlterPartition).
//
// The active controller applies this to every partition whenever the set of
// registered brokers changes (activeController.reconcile). A broker applies it
// to itself twice: when it registers (rejoin: it is fenced and unfenced at
// once, as Kafka fences a new incarnation until it registers) and in
// ControlledShutdown. All of it goes through changePartitions, so the three
// writers never undo each other.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// isrAndLeaderChange is generateLeaderAndIsrUpdates for one partition:
// inactive brokers (b.acceptable false) leave the ISR (into the ELR while
// the ISR is smaller than min.insync.replicas; without ELR an ISR is never
// emptied) and the leader is re-elected if it is no longer acceptable or
// missing.
func isrAndLeaderChange(b *partitionChange) (PartitionInfo, bool) {
	b.targetISR = slices.DeleteFunc(slices.Clone(b.cur.ISR), func(r int32) bool { return !b.acceptable(r) })
	return b.build()
}

// leaveChange prepares isrAndLeaderChange for partition p of topic t;
// uncleanShutdown (unless -1) is a broker that restarted after an unclean
// shutdown, which leaves the ELR too.
func (c *Controller) leaveChange(t *TopicInfo, p PartitionInfo, acceptable func(int32) bool, uncleanShutdown int32) *partitionChange {
	b := c.changeOf(t, p, acceptable)
	if c.uncleanElectionEnabled(t) {
		b.election = electionUnclean
	}
	if uncleanShutdown >= 0 {
		b.uncleanShutdown = []int32{uncleanShutdown}
	}
	return b
}

// brokerChange returns the changeFunc applying isrAndLeaderChange with the
// brokers read, treating excluded (unless -1) as inactive too; with
// unclean, excluded restarted after an unclean shutdown and leaves the ELRs
// as well (Kafka's brokerWithUncleanShutdown).
func (c *Controller) brokerChange(excluded int32, unclean bool) changeFunc {
	return func(v *partitionView, brokers brokerSet) (*PartitionInfo, []int32, error) {
		if !v.exists || v.topic == nil {
			return nil, nil, nil // deleted meanwhile
		}
		acceptable := func(id int32) bool { return id != excluded && brokers.active(id) }
		uncleanShutdown := noLeader
		if unclean {
			uncleanShutdown = excluded
		}
		next, changed := isrAndLeaderChange(c.leaveChange(v.topic, v.state, acceptable, uncleanShutdown))
		if !changed {
			return nil, nil, nil
		}
		return &next, nil, nil
	}
}

// partitionsWithBroker returns the partitions in snap that id leads or is in
// the ISR of, and with inELR those whose ELR holds it too.
func partitionsWithBroker(snap *metadataSnapshot, id int32, inELR bool) []partitionRef {
	var refs []partitionRef
	for _, t := range snap.topicList() {
		for _, p := range t.Partitions {
			if p.Leader == id || slices.Contains(p.ISR, id) || inELR && slices.Contains(p.ELR, id) {
				refs = append(refs, partitionRef{t.Name, p.Partition})
			}
		}
	}
	return refs
}

// rejoin takes this broker from fenced to active right after it registered
// (fenced) at regRev, as Kafka's controller handles a new registration:
//
//  1. it leaves the ISRs and leaderships its previous incarnation may still
//     hold (its log may have lost unflushed records), as if that
//     incarnation's end had been processed; nobody adds a fenced broker to an
//     ISR, so the cache at regRev lists every partition concerned; after an
//     unclean shutdown (elr.go) it leaves the ELRs too
//     (handleBrokerUncleanShutdown);
//  2. it clears the fenced mark (handleBrokerUnfenced);
//  3. it leads the partitions that have no leader and whose ISR or ELR it
//     is in, or whose last leader it was, as the active controller would
//     too.
//
// It returns the revision of its last write.
func (c *Controller) rejoin(ctx context.Context, regRev int64) (int64, error) {
	self := c.cfg.NodeID
	began := time.Now()
	if err := c.cache.waitForRevision(ctx, c.stop, regRev); err != nil {
		return 0, err
	}
	// After an unclean shutdown the log may lack records it had
	// acknowledged: it leaves the ELRs too.
	clean, err := c.previousShutdownClean(ctx)
	if err != nil {
		return 0, err
	}
	var fenced changeSummary
	if refs := partitionsWithBroker(c.cache.snapshot(), self, !clean); len(refs) > 0 {
		outcomes, err := c.changePartitions(ctx, refs, changeOptions{waitForCache: true}, c.brokerChange(self, !clean))
		if err != nil {
			return 0, fmt.Errorf("controller: fencing this broker's previous registration: %w", err)
		}
		fenced = summarize(outcomes, self)
	}
	rev, err := c.updateRegistration(ctx, func(b *BrokerInfo) bool {
		if !b.Fenced {
			return false
		}
		b.Fenced = false
		return true
	})
	if err != nil {
		return 0, fmt.Errorf("controller: unfencing this broker: %w", err)
	}
	if err := c.cache.waitForRevision(ctx, c.stop, rev); err != nil {
		return 0, err
	}
	var led changeSummary
	if refs := leaderlessWithBroker(c.cache.snapshot(), self); len(refs) > 0 {
		outcomes, err := c.changePartitions(ctx, refs, changeOptions{waitForCache: true}, c.brokerChange(noLeader, false))
		if err != nil {
			return 0, fmt.Errorf("controller: electing this broker for its leaderless partitions: %w", err)
		}
		led = summarize(outcomes, self)
	}
	if fenced.changed > 0 || led.changed > 0 {
		c.log.Info("registered: fenced the previous registration of this broker, then unfenced",
			"node.id", self, "clean.shutdown", clean, "left.leadership", fenced.leaderMoved, "left.isr", fenced.leftISR,
			"leading.again", led.ledBy, "elapsed", time.Since(began))
	}
	c.incarnation.rejoined()
	return max(rev, c.cache.snapshot().rev), nil
}

// leaderlessWithBroker returns the partitions in snap without a leader whose
// ISR, ELR or last known leader is id.
func leaderlessWithBroker(snap *metadataSnapshot, id int32) []partitionRef {
	var refs []partitionRef
	for _, t := range snap.topicList() {
		for _, p := range t.Partitions {
			if p.Leader == noLeader && (slices.Contains(p.ISR, id) || slices.Contains(p.ELR, id) ||
				slices.Equal(p.LastKnownELR, []int32{id})) {
				refs = append(refs, partitionRef{t.Name, p.Partition})
			}
		}
	}
	return refs
}

// updateRegistration changes this broker's registration with update (which
// reports whether it changed anything), keeping its lease, as a
// compare-and-swap. It returns the revision written, or the current one when
// update changed nothing.
func (c *Controller) updateRegistration(ctx context.Context, update func(*BrokerInfo) bool) (int64, error) {
	key := c.ks.broker(c.cfg.NodeID)
	for {
		resp, err := c.client.Get(ctx, key)
		if err != nil {
			return 0, fmt.Errorf("reading the registration: %w", err)
		}
		if len(resp.Kvs) == 0 {
			return 0, errors.New("this broker is not registered")
		}
		kv := resp.Kvs[0]
		b, err := decodeBroker(kv.Value)
		if err != nil {
			return 0, err
		}
		if !update(&b) {
			return resp.Header.Revision, nil
		}
		txn, err := c.client.Txn(ctx).
			If(clientv3.Compare(clientv3.ModRevision(key), "=", kv.ModRevision)).
			Then(clientv3.OpPut(key, encodeBroker(b), clientv3.WithIgnoreLease())).
			Commit()
		if err != nil {
			return 0, fmt.Errorf("updating the registration: %w", err)
		}
		if txn.Succeeded {
			return txn.Header.Revision, nil
		}
	}
}

// ControlledShutdown prepares this broker to leave, as Kafka's controlled
// shutdown: it marks the registration as in controlled shutdown (from then
// on the broker may neither lead nor join an ISR, and new partitions are not
// placed on it), moves the leadership of every partition it leads to another
// active ISR member with the leader epoch bumped (a partition with no other
// active ISR member is left without a leader, offline, as Kafka does) and
// removes it from every ISR it is not the last member of. It returns once
// this broker's cache shows the result. The broker keeps its registration
// until Close; Close calls ControlledShutdown itself when other active
// brokers exist.
func (c *Controller) ControlledShutdown(ctx context.Context) error {
	if !c.running() {
		return ErrNotStarted
	}
	return c.controlledShutdown(ctx, false)
}

func (c *Controller) controlledShutdown(ctx context.Context, fromClose bool) error {
	self := c.cfg.NodeID
	began := time.Now()
	// Close has already closed c.stop; the cache runs until after this.
	stop := c.stop
	if fromClose {
		stop = nil
	}
	c.shuttingDown.Store(true)
	rev, err := c.markControlledShutdown(ctx)
	if err != nil {
		return err
	}
	var total changeSummary
	// The cache at the mark lists every partition this broker is in; a topic
	// created from a snapshot taken before the mark may still place a
	// partition here afterwards: go again until nothing is left.
	for pass := 0; pass < 3; pass++ {
		if err := c.cache.waitForRevision(ctx, stop, rev); err != nil {
			return fmt.Errorf("controller: controlled shutdown: waiting for the metadata cache: %w", err)
		}
		refs := partitionsWithBroker(c.cache.snapshot(), self, false)
		if len(refs) == 0 {
			break
		}
		outcomes, err := c.changePartitions(ctx, refs, changeOptions{}, c.brokerChange(self, false))
		if err != nil {
			return fmt.Errorf("controller: controlled shutdown: %w", err)
		}
		s := summarize(outcomes, self)
		total.add(s)
		// The active controller moves leaderships off a broker in controlled
		// shutdown too: what it changed first counts as done here, and the
		// cache must show it before this returns.
		rev = max(rev, lastSeenRevision(outcomes))
		if s.changed == 0 {
			break
		}
	}
	if err := c.cache.waitForRevision(ctx, stop, rev); err != nil {
		return fmt.Errorf("controller: controlled shutdown: waiting for the metadata cache: %w", err)
	}
	c.log.Info("controlled shutdown: moved leadership and left the ISRs", "node.id", self,
		"leaders.moved", total.leaderMoved, "left.isr", total.leftISR, "offline", total.offline,
		"elapsed", time.Since(began))
	return nil
}

// markControlledShutdown sets InControlledShutdown in this broker's
// registration, keeping its lease, and returns the revision it is set at.
func (c *Controller) markControlledShutdown(ctx context.Context) (int64, error) {
	rev, err := c.updateRegistration(ctx, func(b *BrokerInfo) bool {
		if b.InControlledShutdown {
			return false
		}
		b.InControlledShutdown = true
		return true
	})
	if err != nil {
		return 0, fmt.Errorf("controller: controlled shutdown: %w", err)
	}
	return rev, nil
}

// BrokerEpoch returns this broker's epoch: the etcd revision that created its
// current registration (see BrokerInfo.Epoch), or -1 when not registered. A
// follower sends it in its fetches (ReplicaState.ReplicaEpoch) and the leader
// passes it on in AlterPartitionISR, so a restarted follower is not added to
// the ISR on the strength of its previous incarnation's fetches.
func (c *Controller) BrokerEpoch() int64 {
	for _, b := range c.cache.snapshot().brokers {
		if b.NodeID == c.cfg.NodeID {
			return b.Epoch
		}
	}
	return -1
}

// otherActiveBrokers reports whether the cache shows an active broker other
// than this one.
func (c *Controller) otherActiveBrokers() bool {
	for _, b := range c.cache.snapshot().brokers {
		if b.NodeID != c.cfg.NodeID && isActive(b) {
			return true
		}
	}
	return false
}

// changeSummary counts what a batch of changes did, for one log line.
type changeSummary struct {
	changed     int // partitions written
	leaderMoved int // leader changed to another broker
	ledBy       int // partitions whose leader is now the broker summarized for
	leftISR     int // partitions whose ISR lost the broker summarized for
	offline     int // partitions now without a leader
	isrChanged  int
}

func (s *changeSummary) add(o changeSummary) {
	s.changed += o.changed
	s.leaderMoved += o.leaderMoved
	s.ledBy += o.ledBy
	s.leftISR += o.leftISR
	s.offline += o.offline
	s.isrChanged += o.isrChanged
}

// summarize counts the outcomes; broker is the one leaving or joining (or -1).
func summarize(outcomes []changeOutcome, broker int32) changeSummary {
	var s changeSummary
	for _, o := range outcomes {
		if !o.changed {
			continue
		}
		s.changed++
		if o.after.Leader != o.before.Leader {
			s.leaderMoved++
		}
		if broker >= 0 && o.after.Leader == broker {
			s.ledBy++
		}
		if broker >= 0 && slices.Contains(o.before.ISR, broker) && !slices.Contains(o.after.ISR, broker) {
			s.leftISR++
		}
		if o.after.Leader == noLeader {
			s.offline++
		}
		if !slices.Equal(o.before.ISR, o.after.ISR) {
			s.isrChanged++
		}
	}
	return s
}

// LeavePartitions takes this broker out of the given partitions as if it
// had left for them alone: it leaves their ISRs (unless it is the last
// member) and their leadership moves to another active ISR member, with the
// leader epoch bumped (none: the partition is offline), as controlled
// shutdown does for every partition. The broker calls it for the replicas
// of a log dir that failed, the way Kafka's controller handles a broker's
// offline log dir. It returns once this controller's cache shows the result.
func (c *Controller) LeavePartitions(ctx context.Context, partitions []TopicPartitions) error {
	if !c.running() {
		return ErrNotStarted
	}
	var refs []partitionRef
	for _, tp := range partitions {
		for _, p := range tp.Partitions {
			refs = append(refs, partitionRef{tp.Topic, p})
		}
	}
	if len(refs) == 0 {
		return nil
	}
	self := c.cfg.NodeID
	outcomes, err := c.changePartitions(ctx, refs, changeOptions{waitForCache: true}, c.brokerChange(self, false))
	if err != nil {
		return fmt.Errorf("controller: leaving the partitions of a failed log dir: %w", err)
	}
	s := summarize(outcomes, self)
	c.log.Info("left the partitions of a failed log dir", "node.id", self,
		"leaders.moved", s.leaderMoved, "left.isr", s.leftISR, "offline", s.offline)
	return nil
}
