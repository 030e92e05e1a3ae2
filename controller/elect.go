package controller

// Leader elections requested by an admin (ElectLeaders, Kafka's
// ReplicationControlManager.electLeaders) and the active controller's
// automatic preferred leader elections (auto.leader.rebalance.enable).

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// ElectionType is ElectLeaders' election type, with Kafka's wire values.
type ElectionType int8

const (
	// ElectionPreferred makes the preferred (first) replica leader if it is
	// an active ISR member.
	ElectionPreferred ElectionType = 0
	// ElectionUnclean gives a leaderless partition a leader, from outside the
	// ISR if no ISR member is active (the ISR is then reset to the new leader).
	ElectionUnclean ElectionType = 1
)

// TopicPartitions names partitions of one topic.
type TopicPartitions struct {
	Topic      string
	Partitions []int32
}

// PartitionResult is the outcome for one partition of a request that
// handles partitions one by one: Err is nil or an *Error with the Kafka code
// and message for that partition.
type PartitionResult struct {
	Topic     string
	Partition int32
	Err       error
}

// ElectLeaders runs leader elections as Kafka's ElectLeaders: for every
// partition in partitions (nil: every partition of every topic), in order,
// a preferred or unclean election, each a compare-and-swap in etcd. Per
// partition errors: UNKNOWN_TOPIC_OR_PARTITION; ELECTION_NOT_NEEDED (the
// preferred replica already leads, or for unclean the partition has a
// leader); PREFERRED_LEADER_NOT_AVAILABLE (the preferred replica is not an
// active ISR member and the current leader stays); ELIGIBLE_LEADERS_NOT_AVAILABLE
// (unclean: no active replica at all). With partitions nil, partitions whose
// election was not needed are left out of the results, as Kafka does. It
// returns once this controller's cache shows the new leaders. The error is
// for the request as a whole (an unknown election type, etcd unavailable).
func (c *Controller) ElectLeaders(ctx context.Context, typ ElectionType, partitions []TopicPartitions) ([]PartitionResult, error) {
	if !c.running() {
		return nil, ErrNotStarted
	}
	if typ != ElectionPreferred && typ != ElectionUnclean {
		return nil, apiError(kerr.InvalidRequest, "Unknown election type %d", typ)
	}
	all := partitions == nil
	var refs []partitionRef
	if all {
		// Partitions the cache shows needing no election are left out
		// without asking etcd: their results would be left out anyway.
		for _, t := range c.cache.snapshot().topicList() {
			for _, p := range t.Partitions {
				if typ == ElectionPreferred && len(p.Replicas) > 0 && p.Leader == p.Replicas[0] ||
					typ == ElectionUnclean && p.Leader != noLeader {
					continue
				}
				refs = append(refs, partitionRef{t.Name, p.Partition})
			}
		}
	} else {
		for _, tp := range partitions {
			for _, p := range tp.Partitions {
				refs = append(refs, partitionRef{tp.Topic, p})
			}
		}
	}
	outcomes, err := c.changePartitions(ctx, refs, changeOptions{waitForCache: true}, c.leaderElection(typ))
	if err != nil {
		return nil, err
	}
	results := make([]PartitionResult, 0, len(outcomes))
	elected := 0
	for _, o := range outcomes {
		if all && isCode(o.err, kerr.ElectionNotNeeded) {
			continue
		}
		if o.changed {
			elected++
			c.log.Info("elected leader", "topic", o.ref.topic, "partition", o.ref.partition,
				"election", typ.String(), "leader", o.after.Leader, "leader.epoch", o.after.LeaderEpoch)
		}
		results = append(results, PartitionResult{Topic: o.ref.topic, Partition: o.ref.partition, Err: o.err})
	}
	return results, nil
}

func (t ElectionType) String() string {
	if t == ElectionUnclean {
		return "unclean"
	}
	return "preferred"
}

// leaderElection is ReplicationControlManager.electLeader as a changeFunc.
func (c *Controller) leaderElection(typ ElectionType) changeFunc {
	return func(v *partitionView, brokers brokerSet) (*PartitionInfo, []int32, error) {
		if v.topic == nil {
			return nil, nil, apiError(kerr.UnknownTopicOrPartition, "No such topic as %s", v.ref.topic)
		}
		if !v.exists {
			return nil, nil, apiError(kerr.UnknownTopicOrPartition, "No such partition as %s-%d", v.ref.topic, v.ref.partition)
		}
		p := v.state
		if typ == ElectionPreferred && len(p.Replicas) > 0 && p.Leader == p.Replicas[0] ||
			typ == ElectionUnclean && p.Leader != noLeader {
			return nil, nil, &Error{Err: kerr.ElectionNotNeeded}
		}
		b := c.changeOf(v.topic, p, brokers.active)
		b.election = electionPreferred
		if typ == ElectionUnclean {
			b.election = electionUnclean
		}
		next, changed := b.build()
		if !changed {
			if typ == ElectionPreferred {
				return nil, nil, &Error{Err: kerr.PreferredLeaderNotAvailable}
			}
			return nil, nil, &Error{Err: kerr.EligibleLeadersNotAvailable}
		}
		return &next, nil, nil
	}
}

// balanceLeaders is one round of automatic preferred leader elections, as
// Kafka's (ZooKeeper-era) KafkaController.checkAndTriggerAutoLeaderRebalance
// with leader.imbalance.per.broker.percentage: for each broker, the partitions
// it is the preferred replica of but does not lead, over all partitions it is
// the preferred replica of, is its imbalance; when that exceeds the
// percentage, its partitions whose preferred replica is an active ISR member
// get a preferred election, at most maxElectionsPerImbalance per round.
// (Kafka 4's KRaft controller ignores the percentage: it behaves as with 0.)
// It returns the number of elections attempted.
func (c *Controller) balanceLeaders(ctx context.Context, guard []clientv3.Cmp) (int, error) {
	refs := c.imbalancedPartitions(c.cache.snapshot(), c.cfg.leaderImbalancePercentage())
	if len(refs) > maxElectionsPerImbalance {
		refs = refs[:maxElectionsPerImbalance]
	}
	if len(refs) == 0 {
		return 0, nil
	}
	began := time.Now()
	outcomes, err := c.changePartitions(ctx, refs, changeOptions{guard: guard}, c.leaderElection(ElectionPreferred))
	if err != nil {
		return len(refs), err
	}
	s := summarize(outcomes, noLeader)
	c.log.Info("active controller: preferred leader elections", "attempted", len(refs),
		"leaders.changed", s.leaderMoved, "elapsed", time.Since(began))
	return len(refs), nil
}

// imbalancedPartitions returns the partitions of the brokers whose leader
// imbalance exceeds percentage that a preferred election can fix, in topic
// and partition order.
func (c *Controller) imbalancedPartitions(snap *metadataSnapshot, percentage int) []partitionRef {
	brokers := brokerSetOf(snap.brokers)
	type tally struct {
		preferred, notLed int
		candidates        []partitionRef
	}
	byBroker := map[int32]*tally{}
	for _, t := range snap.topicList() {
		for _, p := range t.Partitions {
			if len(p.Replicas) == 0 {
				continue
			}
			pref := p.Replicas[0]
			tl := byBroker[pref]
			if tl == nil {
				tl = &tally{}
				byBroker[pref] = tl
			}
			tl.preferred++
			if p.Leader == pref {
				continue
			}
			tl.notLed++
			if brokers.active(pref) && slices.Contains(p.ISR, pref) {
				tl.candidates = append(tl.candidates, partitionRef{t.Name, p.Partition})
			}
		}
	}
	threshold := float64(percentage) / 100
	var refs []partitionRef
	for _, id := range slices.Sorted(maps.Keys(byBroker)) {
		tl := byBroker[id]
		ratio := float64(tl.notLed) / float64(tl.preferred)
		if ratio <= threshold || len(tl.candidates) == 0 {
			continue
		}
		c.log.Info("active controller: leader imbalance above leader.imbalance.per.broker.percentage",
			"broker", id, "imbalance.percent", fmt.Sprintf("%.1f", 100*ratio), "elections", len(tl.candidates))
		refs = append(refs, tl.candidates...)
	}
	slices.SortFunc(refs, func(a, b partitionRef) int {
		return cmp.Or(cmp.Compare(a.topic, b.topic), cmp.Compare(a.partition, b.partition))
	})
	return refs
}

// isCode reports whether err carries the Kafka error code.
func isCode(err error, code *kerr.Error) bool {
	ce, ok := err.(*Error)
	return ok && ce.Err == code
}
