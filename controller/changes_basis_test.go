package controller

import (
	"slices"
	"sync"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// epochBump is a change that bumps a partition's epoch, recording the
// partition epochs it was computed from; relyOn are the brokers it relies on.
type epochBump struct {
	mu     sync.Mutex
	seen   []int32
	relyOn []int32
}

func (b *epochBump) fn(v *partitionView, _ brokerSet) (*PartitionInfo, []int32, error) {
	b.mu.Lock()
	b.seen = append(b.seen, v.state.PartitionEpoch)
	b.mu.Unlock()
	next := v.state
	next.PartitionEpoch++
	return &next, b.relyOn, nil
}

// storedPartition is partition p of topic as etcd holds it now.
func storedPartition(t *testing.T, c *Controller, topic string, p int32) PartitionInfo {
	t.Helper()
	resp, err := c.client.Get(ctxT(t), c.ks.partition(topic, p))
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("reading %s-%d: %v (%d keys)", topic, p, err, len(resp.Kvs))
	}
	info, err := decodePartition(p, resp.Kvs[0].Value)
	if err != nil {
		t.Fatal(err)
	}
	return info
}

// With a current basis, a change is computed from the cached states and
// written without reading etcd: a basis whose state differs from etcd's
// under the same mod revision (which the cache never holds) shows which
// state the change was computed from.
func TestChangeFromCurrentBasisSkipsTheRead(t *testing.T) {
	c := startController(t, testConfig(t, 1))
	createAssigned(t, c, "basis", [][]int32{{1}, {1}}, nil)
	snap := c.cache.snapshot()
	cached := snap.topic("basis")
	if cached == nil || len(cached.partitionModRevs) != 2 || cached.partitionModRevs[0] <= 0 {
		t.Fatalf("the cache holds no mod revisions for the topic: %+v", cached)
	}
	marked := *cached
	marked.Partitions = slices.Clone(cached.Partitions)
	marked.Partitions[0].PartitionEpoch = 777
	ed := snap.tix.edit()
	ed.put(&marked)
	basis := *snap
	basis.tix = ed.done()

	var bump epochBump
	refs := []partitionRef{{"basis", 0}}
	out, err := c.changePartitions(ctxT(t), refs, changeOptions{basis: &basis}, bump.fn)
	if err != nil || out[0].err != nil || !out[0].changed {
		t.Fatalf("change: %v, outcome %+v", err, out[0])
	}
	if !slices.Equal(bump.seen, []int32{777}) {
		t.Fatalf("computed from partition epochs %v, want the basis's [777] only (no read)", bump.seen)
	}
	if got := storedPartition(t, c, "basis", 0).PartitionEpoch; got != 778 {
		t.Fatalf("stored partition epoch %d, want 778", got)
	}
}

// A basis older than etcd's state never overwrites it: the write fails its
// compare and the batch is computed again from a read.
func TestChangeFromStaleBasisRecomputesFromEtcd(t *testing.T) {
	c := startController(t, testConfig(t, 1))
	createAssigned(t, c, "stale", [][]int32{{1}, {1}}, nil)
	stale := c.cache.snapshot()
	before := stale.topic("stale").Partitions[1].PartitionEpoch

	// Another writer changes partition 1 after the snapshot.
	var other epochBump
	if _, err := c.changePartitions(ctxT(t), []partitionRef{{"stale", 1}}, changeOptions{}, other.fn); err != nil {
		t.Fatal(err)
	}

	var bump epochBump
	refs := []partitionRef{{"stale", 0}, {"stale", 1}}
	out, err := c.changePartitions(ctxT(t), refs, changeOptions{basis: stale, waitForCache: true}, bump.fn)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range out {
		if o.err != nil || !o.changed {
			t.Fatalf("outcome %+v", o)
		}
	}
	// Partition 1: first from the stale basis, then from etcd.
	want := []int32{before, before, before, before + 1}
	if got := slices.Sorted(slices.Values(bump.seen)); !slices.Equal(got, want) {
		t.Fatalf("computed from partition epochs %v, want %v (the basis's, then etcd's)", got, want)
	}
	if got := storedPartition(t, c, "stale", 1).PartitionEpoch; got != before+2 {
		t.Fatalf("partition 1's stored epoch %d, want %d: the other writer's change was overwritten", got, before+2)
	}
	if got := storedPartition(t, c, "stale", 0).PartitionEpoch; got != before+1 {
		t.Fatalf("partition 0's stored epoch %d, want %d", got, before+1)
	}
}

// A change relying on a broker whose registration changed since the basis
// is computed again from a read.
func TestChangeFromBasisChecksRegistrations(t *testing.T) {
	c := startController(t, testConfig(t, 1))
	createAssigned(t, c, "regs", [][]int32{{1}}, nil)
	basis := c.cache.snapshot()

	// The registration's key is written again (same value, same lease): a
	// new mod revision.
	key := c.ks.broker(1)
	resp, err := c.client.Get(ctxT(t), key)
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("reading the registration: %v", err)
	}
	if _, err := c.client.Put(ctxT(t), key, string(resp.Kvs[0].Value), clientv3.WithIgnoreLease()); err != nil {
		t.Fatal(err)
	}

	bump := epochBump{relyOn: []int32{1}}
	out, err := c.changePartitions(ctxT(t), []partitionRef{{"regs", 0}}, changeOptions{basis: basis}, bump.fn)
	if err != nil || out[0].err != nil || !out[0].changed {
		t.Fatalf("change: %v, outcome %+v", err, out[0])
	}
	if len(bump.seen) != 2 {
		t.Fatalf("computed %d times, want 2 (from the basis, then from a read)", len(bump.seen))
	}
}
