package controller

// Partition-state changes. Every change of a partitions/<topic>/<p> key after
// its creation goes through changePartitions, which makes it a
// compare-and-swap in etcd:
//
//  1. read, in one transaction (so at one revision), the registered brokers,
//     the partition keys and their topics' keys;
//  2. compute each partition's next state from what was read;
//  3. write the changed partitions in one transaction that succeeds only if
//     none of them changed since (mod revision) and every broker the new
//     states rely on (a new leader, a broker added to an ISR) still has the
//     registration that was read; on conflict go back to 1 for the partitions
//     of that transaction, recomputing from the new state.
//
// So a change is never computed from a stale state, no broker whose lease
// expired meanwhile is made leader or ISR member, and concurrent writers (the
// active controller, a leader's AlterPartition, a broker shutting down, an
// admin request on any broker) serialize on the partition key without a lock.
// Duties of the active controller add a guard: the election key they were
// elected with must still exist, so a deposed controller writes nothing.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// changeBatchPartitions bounds the partitions read and written per
// transaction: a read is 1 + partitions + topics operations and a write has
// a compare per partition and per broker relied on, within etcd's default
// --max-txn-ops of 128 for an external etcd. The embedded etcd takes
// embeddedMaxTxnOps, so batches there are larger.
const (
	changeBatchPartitions         = 50
	embeddedChangeBatchPartitions = 1000
)

// changeBatchSize is the number of partitions per transaction.
func (c *Controller) changeBatchSize() int {
	if c.etcd != nil {
		return embeddedChangeBatchPartitions
	}
	return changeBatchPartitions
}

// errNotActiveController is returned by a guarded change when the guard
// failed: this broker is no longer the active controller.
var errNotActiveController = errors.New("controller: no longer the active controller")

// partitionRef names one partition.
type partitionRef struct {
	topic     string
	partition int32
}

// registeredBroker is a broker registration read from etcd.
type registeredBroker struct {
	info   BrokerInfo
	modRev int64
}

// brokerSet is the registered brokers at one revision, by node id.
type brokerSet map[int32]registeredBroker

// active reports whether id may lead or join an ISR: registered, unfenced
// and not in controlled shutdown (Kafka's ClusterControlManager.isActive; a
// broker whose lease expired is unregistered, which Kafka calls fenced).
func (s brokerSet) active(id int32) bool {
	b, ok := s[id]
	return ok && isActive(b.info)
}

func isActive(b BrokerInfo) bool { return !b.Fenced && !b.InControlledShutdown }

// partitionView is one partition as read for a change.
type partitionView struct {
	ref    partitionRef
	index  int        // of ref in the refs given to changePartitions
	topic  *TopicInfo // without partitions; nil if the topic does not exist
	exists bool       // the partition key exists
	state  PartitionInfo
	modRev int64
}

// changeFunc computes a partition's next state from v and the brokers read
// with it: nil for no change, or an error for that partition (returned to the
// caller, not retried). relyOn lists brokers the change relies on being
// registered as read, beyond the new leader and the brokers added to the ISR
// (which are always checked). It may be called several times for one
// partition (once per attempt) and must not modify v.
type changeFunc func(v *partitionView, brokers brokerSet) (next *PartitionInfo, relyOn []int32, err error)

// changeOutcome is the result of changePartitions for one partition.
type changeOutcome struct {
	ref     partitionRef
	before  PartitionInfo // as last read
	after   PartitionInfo // as written, or before when unchanged
	changed bool
	rev     int64 // revision of the write when changed
	readRev int64 // revision of before (another writer's when unchanged)
	err     error
}

// lastSeenRevision returns the highest revision of a partition state that
// outcomes wrote or found: a cache at it shows every one of them, also those
// another writer had changed already.
func lastSeenRevision(outcomes []changeOutcome) int64 {
	var rev int64
	for _, o := range outcomes {
		rev = max(rev, o.rev, o.readRev)
	}
	return rev
}

// changeOptions tunes changePartitions.
type changeOptions struct {
	// guard, when set, must hold for the write (the active controller's
	// election key); a failed guard ends the change with errNotActiveController.
	guard []clientv3.Cmp
	// waitForCache makes changePartitions return only once this controller's
	// cache and listeners have applied the writes.
	waitForCache bool
	// concurrent lets up to changeConcurrency transactions of the first
	// pass be in flight at once (fn must be safe for that): their order is
	// then not kept.
	concurrent bool
}

// changeConcurrency bounds the transactions a concurrent change has in
// flight: a broker's end changes every partition it led or followed, and
// etcd commits concurrent transactions together (one raft round, one WAL
// fsync), where one after another each pays its own.
const changeConcurrency = 4

// changePartitions applies fn to every partition in refs, each as one
// compare-and-swap (batched into transactions), retrying conflicts until ctx
// ends. A partition named several times is changed once per mention, in
// order. The outcomes are in the order of refs.
func (c *Controller) changePartitions(ctx context.Context, refs []partitionRef, opts changeOptions, fn changeFunc) ([]changeOutcome, error) {
	out := make([]changeOutcome, len(refs))
	pending := make([]int, len(refs))
	for i := range refs {
		out[i].ref = refs[i]
		pending[i] = i
	}
	var lastRev int64
	batch := c.changeBatchSize()
	for conflicts := 0; len(pending) > 0; {
		if conflicts > 0 {
			// Retry one partition per transaction, so a hot partition does
			// not make a whole batch fail again.
			batch = 1
			if err := sleepCtx(ctx, min(time.Duration(conflicts)*5*time.Millisecond, 100*time.Millisecond)); err != nil {
				return out, err
			}
		}
		// A transaction cannot write one key twice: later mentions of a
		// partition wait for the next pass.
		slices.Sort(pending)
		seen := map[partitionRef]bool{}
		var now, later []int
		for _, i := range pending {
			if seen[refs[i]] {
				later = append(later, i)
				continue
			}
			seen[refs[i]] = true
			now = append(now, i)
		}
		var retry []int
		if opts.concurrent && conflicts == 0 && len(now) > batch {
			failed, rev, err := c.changeBatchesConcurrently(ctx, refs, now, batch, out, opts, fn)
			if err != nil {
				return out, err
			}
			lastRev = max(lastRev, rev)
			retry = failed
		} else {
			for start := 0; start < len(now); start += batch {
				chunk := now[start:min(start+batch, len(now))]
				failed, rev, err := c.changeBatch(ctx, refs, chunk, out, opts, fn)
				if err != nil {
					return out, err
				}
				lastRev = max(lastRev, rev)
				retry = append(retry, failed...)
			}
		}
		if len(retry) > 0 {
			conflicts++
		}
		pending = append(retry, later...)
	}
	if opts.waitForCache && lastRev > 0 {
		if err := c.cache.waitForRevision(ctx, c.stop, lastRev); err != nil {
			return out, fmt.Errorf("controller: partition states written, waiting for the metadata cache: %w", err)
		}
	}
	return out, nil
}

// changeBatchesConcurrently is changePartitions' pass over now in batches,
// up to changeConcurrency at once, started in order. It returns the indexes
// whose write conflicted, the highest revision written and the first error.
func (c *Controller) changeBatchesConcurrently(ctx context.Context, refs []partitionRef, now []int, batch int,
	out []changeOutcome, opts changeOptions, fn changeFunc) ([]int, int64, error) {
	var (
		mu       sync.Mutex
		retry    []int
		lastRev  int64
		firstErr error
		wg       sync.WaitGroup
	)
	sem := make(chan struct{}, changeConcurrency)
	for start := 0; start < len(now); start += batch {
		chunk := now[start:min(start+batch, len(now))]
		sem <- struct{}{}
		mu.Lock()
		stop := firstErr != nil
		mu.Unlock()
		if stop {
			<-sem
			break
		}
		wg.Go(func() {
			defer func() { <-sem }()
			failed, rev, err := c.changeBatch(ctx, refs, chunk, out, opts, fn)
			mu.Lock()
			defer mu.Unlock()
			if err != nil && firstErr == nil {
				firstErr = err
			}
			lastRev = max(lastRev, rev)
			retry = append(retry, failed...)
		})
	}
	wg.Wait()
	return retry, lastRev, firstErr
}

// changeBatch reads and conditionally writes the partitions refs[i] for i in
// idx. It returns the indexes whose write conflicted and the revision written.
func (c *Controller) changeBatch(ctx context.Context, refs []partitionRef, idx []int, out []changeOutcome,
	opts changeOptions, fn changeFunc) ([]int, int64, error) {
	views, brokers, err := c.readPartitions(ctx, refs, idx)
	if err != nil {
		return nil, 0, err
	}
	var cmps []clientv3.Cmp
	var puts []clientv3.Op
	var written []int
	relied := map[int32]bool{}
	for k, i := range idx {
		v := views[k]
		o := &out[i]
		o.before, o.after, o.changed, o.rev, o.readRev, o.err = v.state, v.state, false, 0, v.modRev, nil
		next, relyOn, err := fn(v, brokers)
		if err != nil {
			o.err = err
			continue
		}
		if next == nil {
			continue
		}
		if !v.exists {
			return nil, 0, fmt.Errorf("controller: change of the missing partition %s-%d", v.ref.topic, v.ref.partition)
		}
		key := c.ks.partition(v.ref.topic, v.ref.partition)
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(key), "=", v.modRev))
		puts = append(puts, clientv3.OpPut(key, encodePartition(*next)))
		o.after, o.changed = *next, true
		written = append(written, i)
		for _, id := range relyOn {
			relied[id] = true
		}
		if next.Leader >= 0 && next.Leader != v.state.Leader {
			relied[next.Leader] = true
		}
		for _, id := range next.ISR {
			if !slices.Contains(v.state.ISR, id) {
				relied[id] = true
			}
		}
	}
	if len(puts) == 0 {
		return nil, 0, nil
	}
	for _, id := range slices.Sorted(maps.Keys(relied)) {
		key := c.ks.broker(id)
		if b, ok := brokers[id]; ok {
			cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(key), "=", b.modRev))
		} else {
			cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(key), "=", 0))
		}
	}
	var resp *clientv3.TxnResponse
	casSucceeded := false
	if len(opts.guard) > 0 {
		resp, err = c.client.Txn(ctx).If(opts.guard...).Then(clientv3.OpTxn(cmps, puts, nil)).Commit()
		if err == nil {
			if !resp.Succeeded {
				return nil, 0, errNotActiveController
			}
			casSucceeded = resp.Responses[0].GetResponseTxn().Succeeded
		}
	} else {
		resp, err = c.client.Txn(ctx).If(cmps...).Then(puts...).Commit()
		if err == nil {
			casSucceeded = resp.Succeeded
		}
	}
	if err != nil {
		return nil, 0, fmt.Errorf("controller: writing partition states: %w", err)
	}
	if !casSucceeded {
		for _, i := range written {
			out[i].after, out[i].changed = out[i].before, false
		}
		return written, 0, nil
	}
	for _, i := range written {
		out[i].rev = resp.Header.Revision
	}
	return nil, resp.Header.Revision, nil
}

// readPartitions reads the brokers and the partitions refs[i] (i in idx) with
// their topics in one transaction.
func (c *Controller) readPartitions(ctx context.Context, refs []partitionRef, idx []int) ([]*partitionView, brokerSet, error) {
	ops := []clientv3.Op{clientv3.OpGet(c.ks.root()+brokersSegment, clientv3.WithPrefix())}
	topicOp := map[string]int{}
	for _, i := range idx {
		ops = append(ops, clientv3.OpGet(c.ks.partition(refs[i].topic, refs[i].partition)))
	}
	for _, i := range idx {
		if _, ok := topicOp[refs[i].topic]; !ok {
			topicOp[refs[i].topic] = len(ops)
			ops = append(ops, clientv3.OpGet(c.ks.topic(refs[i].topic)))
		}
	}
	resp, err := c.client.Txn(ctx).Then(ops...).Commit()
	if err != nil {
		return nil, nil, fmt.Errorf("controller: reading partition states: %w", err)
	}
	brokers := c.decodeBrokers(resp.Responses[0].GetResponseRange().Kvs)
	topics := map[string]*TopicInfo{}
	for name, op := range topicOp {
		kvs := resp.Responses[op].GetResponseRange().Kvs
		if len(kvs) == 0 {
			continue
		}
		t, err := decodeTopic(kvs[0].Value)
		if err != nil {
			return nil, nil, fmt.Errorf("controller: topic %s: %w", name, err)
		}
		t.Name = name
		topics[name] = &t
	}
	views := make([]*partitionView, len(idx))
	for k, i := range idx {
		v := &partitionView{ref: refs[i], index: i, topic: topics[refs[i].topic]}
		if kvs := resp.Responses[1+k].GetResponseRange().Kvs; len(kvs) > 0 {
			p, err := decodePartition(refs[i].partition, kvs[0].Value)
			if err != nil {
				return nil, nil, fmt.Errorf("controller: partition %s-%d: %w", refs[i].topic, refs[i].partition, err)
			}
			v.exists, v.state, v.modRev = true, p, kvs[0].ModRevision
		}
		views[k] = v
	}
	return views, brokers, nil
}

// decodeBrokers turns the keys under brokers/ into a brokerSet, skipping
// undecodable ones (which the cache logs).
func (c *Controller) decodeBrokers(kvs []*mvccpb.KeyValue) brokerSet {
	out := make(brokerSet, len(kvs))
	for _, kv := range kvs {
		pk := c.ks.parse(string(kv.Key))
		if pk.kind != keyBroker {
			continue
		}
		b, err := decodeBroker(kv.Value)
		if err != nil {
			continue
		}
		b.Epoch = kv.CreateRevision
		out[pk.nodeID] = registeredBroker{info: b, modRev: kv.ModRevision}
	}
	return out
}

// uncleanElectionEnabled reports the topic's unclean.leader.election.enable,
// falling back to the cluster default.
func (c *Controller) uncleanElectionEnabled(t *TopicInfo) bool {
	if t != nil {
		switch t.Configs[uncleanLeaderElectionConfig] {
		case "true":
			return true
		case "false":
			return false
		}
	}
	return c.cfg.UncleanLeaderElectionEnable
}

// uncleanLeaderElectionConfig is the topic (and broker) config key.
const uncleanLeaderElectionConfig = "unclean.leader.election.enable"

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
