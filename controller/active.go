package controller

// The active controller's duties. Exactly one broker holds the election key
// at a time (concurrency.Election); while it does, it
//
//   - keeps every partition consistent with the registered brokers
//     (isrAndLeaderChange, see broker_lifecycle.go): when a broker's lease
//     expires or it is in controlled shutdown, the partitions it led get a new
//     leader from the ISR and it leaves the ISRs; when a broker comes back,
//     the leaderless partitions whose ISR it is in get it as leader. This is
//     level-triggered: every new cache snapshot whose brokers differ from the
//     last one checks all partitions, any other checks the topics that
//     changed, so a change missed during a controller handover is made by the
//     next controller's first pass;
//   - with auto.leader.rebalance.enable, every
//     leader.imbalance.check.interval.seconds, moves leadership back to the
//     preferred replicas of brokers whose share of partitions led by another
//     broker exceeds leader.imbalance.per.broker.percentage.
//
// Each write carries the guard "my election key still exists with the
// revision I won it at": a controller deposed without knowing it (its lease
// expired while it was partitioned away) writes nothing.

import (
	"context"
	"errors"
	"slices"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
)

// Pacing of the active controller.
const (
	// activeResyncInterval is how often the active controller checks every
	// partition even without a change of brokers: a safety net, cheap since
	// only partitions that need a change cost an etcd request.
	activeResyncInterval = time.Minute
	// maxElectionsPerImbalance bounds the preferred elections of one
	// rebalancing round (Kafka's MAX_ELECTIONS_PER_IMBALANCE); a round that
	// hits it is followed by another at once.
	maxElectionsPerImbalance = 1000
)

// runActive performs the active controller's duties until ctx ends (the
// session is lost or the controller closes) or a write finds the election key
// gone (errNotActiveController).
func (c *Controller) runActive(ctx context.Context, election *concurrency.Election) error {
	c.active.Store(true)
	defer c.active.Store(false)
	guard := []clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(election.Key()), "=", election.Rev())}

	resync := time.NewTicker(activeResyncInterval)
	defer resync.Stop()
	var rebalance <-chan time.Time
	if c.cfg.autoLeaderRebalance() {
		t := time.NewTicker(c.cfg.LeaderImbalanceCheckInterval)
		defer t.Stop()
		rebalance = t.C
	}
	var tokenExpiry <-chan time.Time
	if c.TokensEnabled() {
		t := time.NewTicker(c.cfg.DelegationTokens.ExpiryCheckInterval)
		defer t.Stop()
		tokenExpiry = t.C
	}

	var prev *metadataSnapshot // the snapshot last reconciled; nil: check everything
	for backoff := 50 * time.Millisecond; ; {
		p := c.cache.prog.Load()
		err := c.reconcile(ctx, guard, prev, p.snap)
		switch {
		case err == nil:
			prev = p.snap
			backoff = 50 * time.Millisecond
		case errors.Is(err, errNotActiveController) || ctx.Err() != nil:
			return err
		default:
			c.log.Warn("active controller: updating partitions failed; retrying", "err", err, "backoff", backoff)
			if err := sleepCtx(ctx, backoff); err != nil {
				return err
			}
			backoff = min(2*backoff, 2*time.Second)
			continue // with prev unchanged: check the same partitions again
		}
		select {
		case <-p.next:
		case <-resync.C:
			prev = nil
		case <-rebalance:
			for {
				n, err := c.balanceLeaders(ctx, guard)
				if errors.Is(err, errNotActiveController) || ctx.Err() != nil {
					return err
				}
				if err != nil {
					c.log.Warn("active controller: preferred leader elections failed", "err", err)
				}
				if err != nil || n < maxElectionsPerImbalance {
					break
				}
			}
		case <-tokenExpiry:
			if err := c.sweepExpiredTokens(ctx, guard); err != nil && ctx.Err() == nil {
				c.log.Warn("active controller: removing expired delegation tokens failed", "err", err)
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// reconcile applies isrAndLeaderChange to the partitions of snap that may
// need it: every partition when the brokers differ from prev's (or prev is
// nil), else those of the topics that changed. Only partitions whose cached
// state needs a change are written (and recomputed from etcd first).
func (c *Controller) reconcile(ctx context.Context, guard []clientv3.Cmp, prev, snap *metadataSnapshot) error {
	all := prev == nil || !sameBrokers(prev.brokers, snap.brokers)
	if all && prev != nil {
		c.logBrokerChanges(prev.brokers, snap.brokers)
	}
	cached := brokerSetOf(snap.brokers)
	var topics []*TopicInfo
	listed := false
	if !all {
		// Only the topics changed since the last pass, when the cache
		// still remembers them: a pass costs what changed, not every
		// topic (100,000 partitions, thousands of changes in a failover).
		if names, ok := c.cache.changedBetween(prev.rev, snap.rev); ok {
			listed = true
			for _, n := range names {
				if t := snap.topic(n); t != nil {
					topics = append(topics, t)
				}
			}
		}
	}
	if !listed {
		topics = snap.topicList()
	}
	// Partitions that need a new leader are written first: they take no
	// writes at all until then, while those only leaving a broker out of
	// their ISR wait for acks=all only (a broker's end changes both kinds,
	// thousands of each at scale, in transactions one after another).
	var refs, isrOnly []partitionRef
	for _, t := range topics {
		if !all && prev.topic(t.Name) == t {
			continue // unchanged since the last pass: the cache shares the pointer
		}
		for _, p := range t.Partitions {
			next, changed := isrAndLeaderChange(c.leaveChange(t, p, cached.active, noLeader))
			switch {
			case !changed:
			case next.Leader != p.Leader:
				refs = append(refs, partitionRef{t.Name, p.Partition})
			default:
				isrOnly = append(isrOnly, partitionRef{t.Name, p.Partition})
			}
		}
	}
	refs = append(refs, isrOnly...)
	if len(refs) == 0 {
		return nil
	}
	began := time.Now()
	outcomes, err := c.changePartitions(ctx, refs, changeOptions{guard: guard, concurrent: true}, c.brokerChange(noLeader, false))
	if err != nil {
		return err
	}
	s := summarize(outcomes, noLeader)
	for _, o := range outcomes {
		if o.changed {
			c.log.Debug("active controller: partition changed", "topic", o.ref.topic, "partition", o.ref.partition,
				"leader", o.after.Leader, "leader.epoch", o.after.LeaderEpoch, "isr", o.after.ISR,
				"partition.epoch", o.after.PartitionEpoch)
		}
	}
	if s.changed > 0 {
		c.log.Info("active controller: updated leaders and ISRs for the registered brokers",
			"partitions", s.changed, "leaders.changed", s.leaderMoved, "isr.changed", s.isrChanged,
			"offline", s.offline, "elapsed", time.Since(began))
	}
	return nil
}

// logBrokerChanges logs, once per broker, those that left, joined or began a
// controlled shutdown between two snapshots.
func (c *Controller) logBrokerChanges(prev, next []BrokerInfo) {
	before := brokerSetOf(prev)
	after := brokerSetOf(next)
	for id, b := range before {
		if a, ok := after[id]; !ok || a.info.Epoch != b.info.Epoch {
			c.log.Info("active controller: broker registration ended", "broker", id, "broker.epoch", b.info.Epoch)
		}
	}
	for id, a := range after {
		b, ok := before[id]
		if !ok || a.info.Epoch != b.info.Epoch {
			c.log.Info("active controller: broker registered", "broker", id, "broker.epoch", a.info.Epoch)
		} else if b.info.Fenced && !a.info.Fenced {
			c.log.Info("active controller: broker unfenced", "broker", id, "broker.epoch", a.info.Epoch)
		} else if a.info.InControlledShutdown && !b.info.InControlledShutdown {
			c.log.Info("active controller: broker in controlled shutdown", "broker", id)
		}
	}
}

// sameBrokers reports whether two broker lists have the same registrations
// in the same states.
func sameBrokers(a, b []BrokerInfo) bool {
	return slices.EqualFunc(a, b, func(x, y BrokerInfo) bool {
		return x.NodeID == y.NodeID && x.Epoch == y.Epoch && x.Fenced == y.Fenced &&
			x.InControlledShutdown == y.InControlledShutdown
	})
}

// brokerSetOf turns cached registrations into a brokerSet (without mod
// revisions: only for deciding which partitions to look at).
func brokerSetOf(brokers []BrokerInfo) brokerSet {
	out := make(brokerSet, len(brokers))
	for _, b := range brokers {
		out[b.NodeID] = registeredBroker{info: b}
	}
	return out
}
