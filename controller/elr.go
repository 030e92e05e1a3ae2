package controller

// Eligible leader replicas (KIP-966) as Kafka 4.4's controller keeps them
// with eligible.leader.replicas.version 1, which a new Kafka 4.4 cluster
// finalizes: the rules are partitionChange's (partition_change.go); this
// file has the topic-level inputs and the clean-shutdown record that decides
// whether a restarted broker stays eligible.
//
// A broker that stops through Close (controlled shutdown, then its
// registration revoked) writes clean_shutdown/<id> with the epoch of the
// registration it ends; a broker that registers again reads and deletes it
// (rejoin): found, its last shutdown was clean and it keeps its place in the
// ELRs; missing (killed, crashed), it is removed from every ELR as well as
// every ISR, as Kafka's controller does when a broker registers with a
// previous broker epoch other than the one it last had
// (ReplicationControlManager.handleBrokerUncleanShutdown). Registering again
// after a lost lease, in the same process, counts as clean.

import (
	"context"
	"fmt"
	"strconv"
	"sync"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// elrFeature is the feature that turns eligible leader replicas on.
const elrFeature = "eligible.leader.replicas.version"

// elrEnabled is eligible.leader.replicas.version >= 1: level 1 unless
// UpdateFeatures stored another, as a new Kafka 4.4 cluster finalizes it.
func (c *Controller) elrEnabled() bool {
	level, ok := c.FinalizedFeatures().Levels[elrFeature]
	return !ok || level >= 1
}

// minInsyncReplicasConfig is the topic (and broker) config key.
const minInsyncReplicasConfig = "min.insync.replicas"

// effectiveMinISR is ReplicationControlManager.getTopicEffectiveMinIsr: the
// topic's min.insync.replicas (else the broker default), at most the
// partition's replication factor.
func (c *Controller) effectiveMinISR(t *TopicInfo, p PartitionInfo) int {
	minISR := int(c.cfg.MinInsyncReplicas)
	if t != nil {
		if v, err := strconv.Atoi(t.Configs[minInsyncReplicasConfig]); err == nil && v > 0 {
			minISR = v
		}
	}
	return max(1, min(minISR, len(p.Replicas)))
}

// changeOf starts a partitionChange of p of topic t with ELR maintained.
func (c *Controller) changeOf(t *TopicInfo, p PartitionInfo, acceptable func(int32) bool) *partitionChange {
	b := newPartitionChange(p, acceptable)
	if c.elrEnabled() {
		b.withELR(c.effectiveMinISR(t, p))
	}
	return b
}

// cleanShutdownSegment holds one key per broker whose last registration
// ended cleanly.
const cleanShutdownSegment = "clean_shutdown/"

func (k keyspace) cleanShutdown(id int32) string {
	return k.root() + cleanShutdownSegment + strconv.Itoa(int(id))
}

// incarnation tracks whether this process registered already and how the
// previous process ended. Registering again after a lost lease is the same
// incarnation (Kafka's broker keeps its incarnation id when its session
// expires): its logs are as they were, so it counts as clean.
type incarnation struct {
	mu         sync.Mutex
	registered bool // a rejoin of this process succeeded
	known      bool // the clean shutdown record was read (and deleted)
	clean      bool
}

// previousShutdownClean reports whether this registration follows a clean
// shutdown: the record the previous process left, read once per process.
func (c *Controller) previousShutdownClean(ctx context.Context) (bool, error) {
	in := &c.incarnation
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.registered {
		return true, nil
	}
	if !in.known {
		clean, err := c.takeCleanShutdown(ctx)
		if err != nil {
			return false, err
		}
		in.known, in.clean = true, clean
	}
	return in.clean, nil
}

// rejoined notes that a rejoin of this process succeeded.
func (in *incarnation) rejoined() {
	in.mu.Lock()
	in.registered = true
	in.mu.Unlock()
}

// clearELRs empties the ELR and lastKnownElr of every partition of topic
// after its min.insync.replicas changed, as Kafka's ClearElrRecord: the
// eligible replicas were chosen against the old value, which the high
// watermark no longer follows. Each cleared partition's epoch is bumped.
func (c *Controller) clearELRs(ctx context.Context, topic string) error {
	t, ok := c.Topic(topic)
	if !ok {
		return nil
	}
	var refs []partitionRef
	for _, p := range t.Partitions {
		if len(p.ELR) > 0 || len(p.LastKnownELR) > 0 {
			refs = append(refs, partitionRef{topic, p.Partition})
		}
	}
	if len(refs) == 0 {
		return nil
	}
	outcomes, err := c.changePartitions(ctx, refs, changeOptions{waitForCache: true},
		func(v *partitionView, _ brokerSet) (*PartitionInfo, []int32, error) {
			if !v.exists || len(v.state.ELR) == 0 && len(v.state.LastKnownELR) == 0 {
				return nil, nil, nil
			}
			next := v.state
			next.ELR, next.LastKnownELR = nil, nil
			next.PartitionEpoch++
			return &next, nil, nil
		})
	if err != nil {
		return fmt.Errorf("controller: clearing the eligible leader replicas of topic %s: %w", topic, err)
	}
	c.log.Info("cleared the eligible leader replicas after a min.insync.replicas change", "topic", topic,
		"partitions", summarize(outcomes, noLeader).changed)
	return nil
}

// writeCleanShutdown records that this broker's registration of epoch
// ended cleanly (see the file comment). Best effort: without it the next
// start counts as unclean, which only costs eligibility.
func (c *Controller) writeCleanShutdown(ctx context.Context, epoch int64) error {
	if epoch < 0 {
		return nil
	}
	_, err := c.client.Put(ctx, c.ks.cleanShutdown(c.cfg.NodeID), strconv.FormatInt(epoch, 10))
	if err != nil {
		return fmt.Errorf("controller: recording the clean shutdown: %w", err)
	}
	return nil
}

// takeCleanShutdown reads and deletes this broker's clean shutdown record,
// reporting whether it was there: whether the previous incarnation ended
// cleanly.
func (c *Controller) takeCleanShutdown(ctx context.Context) (bool, error) {
	resp, err := c.client.Delete(ctx, c.ks.cleanShutdown(c.cfg.NodeID), clientv3.WithPrevKV())
	if err != nil {
		return false, fmt.Errorf("controller: reading the clean shutdown record: %w", err)
	}
	return resp.Deleted > 0, nil
}
