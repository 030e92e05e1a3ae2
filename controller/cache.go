package controller

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/strait/strait/quota"
)

// metadataSnapshot is the cache's state at one etcd revision. It is immutable
// once published: readers use it without locks, and the TopicInfo values it
// points to are never modified.
type metadataSnapshot struct {
	rev           int64
	tix           *topicIndex  // topics by name and id (topicindex.go)
	brokers       []BrokerInfo // sorted by node id
	controllerID  int32
	auth          *authSnapshot                // SCRAM credentials, delegation tokens, ACLs (auth_cache.go)
	groupConfigs  map[string]map[string]string // group id -> its configs (group_configs.go)
	quotas        *quota.Snapshot              // client quotas (quotas.go)
	clientMetrics map[string]map[string]string // subscription name -> its configs (client_metrics_configs.go)
	features      FinalizedFeatures            // UpdateFeatures' levels (features.go)
}

var emptySnapshot = &metadataSnapshot{
	tix:          emptyTopicIndex,
	controllerID: -1,
	auth:         emptyAuthSnapshot,
}

// topic is the topic called name, nil if none.
func (s *metadataSnapshot) topic(name string) *TopicInfo { return s.tix.get(name) }

// topicByID is the topic with id, nil if none.
func (s *metadataSnapshot) topicByID(id [16]byte) *TopicInfo { return s.tix.getByID(id) }

// topicList is every topic, sorted by name (built on first use).
func (s *metadataSnapshot) topicList() []*TopicInfo { return s.tix.sorted() }

// progress is what waiters wait on: the latest snapshot whose listeners have
// all been called, and a channel closed when a newer one replaces it.
type progress struct {
	snap *metadataSnapshot
	next chan struct{}
}

// topicState is the applier's mutable view of one topic's keys.
type topicState struct {
	topic      *TopicInfo // from topics/<name>, without partitions; nil if the key is absent
	partitions map[int32]PartitionInfo
	modRev     int64 // highest mod revision among its keys, to detect changes on resync

	// What changed since the last publish: the topic key, partitions put,
	// partitions deleted.
	topicChanged bool
	putParts     []int32
	deletedParts bool
}

func (s *topicState) clean() {
	s.topicChanged, s.putParts, s.deletedParts = false, nil, false
}

// build is the topic as published, its partitions by index.
func (s *topicState) build() *TopicInfo {
	t := *s.topic
	t.Partitions = make([]PartitionInfo, 0, len(s.partitions))
	for _, p := range slices.Sorted(maps.Keys(s.partitions)) {
		t.Partitions = append(t.Partitions, s.partitions[p])
	}
	return &t
}

// update is build for a topic whose published version is prev and whose
// topic key did not change: only the partitions put since are read, so a
// leader or ISR change costs a copy of the partition slice, not a sort of
// the partitions. The indexes it changed are returned; ok is false when
// partitions were deleted or are not numbered 0..n-1 (build then).
func (s *topicState) update(prev *TopicInfo) (t *TopicInfo, changed []int32, ok bool) {
	last := len(prev.Partitions) - 1
	if s.deletedParts || s.topicChanged || last >= 0 && (prev.Partitions[0].Partition != 0 || prev.Partitions[last].Partition != int32(last)) {
		return nil, nil, false
	}
	n := len(prev.Partitions)
	for _, p := range s.putParts {
		if p < 0 {
			return nil, nil, false
		}
		n = max(n, int(p)+1)
	}
	if n != len(s.partitions) {
		return nil, nil, false // a gap: not numbered 0..n-1
	}
	nt := *prev
	nt.Partitions = make([]PartitionInfo, n)
	copy(nt.Partitions, prev.Partitions)
	slices.Sort(s.putParts)
	changed = slices.Compact(s.putParts)
	if changed == nil {
		changed = []int32{} // nothing to look at, not everything
	}
	for _, p := range changed {
		nt.Partitions[p] = s.partitions[p]
	}
	return &nt, changed, true
}

// electionCandidate is one key under controller/election.
type electionCandidate struct {
	createRev int64
	nodeID    int32
}

// metadataCache mirrors every key under the prefix. One goroutine (run)
// applies etcd's changes revision by revision; readers load the published
// snapshot atomically.
type metadataCache struct {
	ks  keyspace
	log *slog.Logger

	snap atomic.Pointer[metadataSnapshot]
	prog atomic.Pointer[progress]

	// mu serializes applying revisions and (de)registering listeners, so a
	// listener sees every change exactly once. It is held while listeners run.
	mu            sync.Mutex
	topics        map[string]*topicState
	brokers       map[int32]BrokerInfo
	candidates    map[string]electionCandidate
	listeners     []func(TopicChange)
	auth          authState    // the keys behind snapshot.auth; dirty when they changed
	groupCfgs     namedConfigs // the keys behind snapshot.groupConfigs
	quotas        quotaState   // the keys behind snapshot.quotas
	clientMetrics namedConfigs // the keys behind snapshot.clientMetrics
	features      featureState // the key behind snapshot.features

	recent changeLog // the topics each recent publish changed
}

func newMetadataCache(ks keyspace, log *slog.Logger) *metadataCache {
	c := &metadataCache{
		ks:            ks,
		log:           log,
		topics:        map[string]*topicState{},
		brokers:       map[int32]BrokerInfo{},
		candidates:    map[string]electionCandidate{},
		auth:          newAuthState(),
		groupCfgs:     namedConfigs{what: "group", configs: map[string]map[string]string{}},
		clientMetrics: namedConfigs{what: "client metrics subscription"},
	}
	c.snap.Store(emptySnapshot)
	c.prog.Store(&progress{snap: emptySnapshot, next: make(chan struct{})})
	return c
}

func (c *metadataCache) snapshot() *metadataSnapshot { return c.snap.Load() }

// listen registers fn after replaying the current topics to it as creations,
// under the lock that applying holds, so fn misses and repeats nothing.
func (c *metadataCache) listen(fn func(TopicChange)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, t := range c.snap.Load().topicList() {
		fn(TopicChange{Topic: *t})
	}
	c.listeners = append(c.listeners, fn)
}

// waitFor blocks until cond holds for a snapshot whose listeners have run, or
// ctx or stop ends.
func (c *metadataCache) waitFor(ctx context.Context, stop <-chan struct{}, cond func(*metadataSnapshot) bool) error {
	for {
		p := c.prog.Load()
		if cond(p.snap) {
			return nil
		}
		select {
		case <-p.next:
		case <-ctx.Done():
			return ctx.Err()
		case <-stop:
			return ErrNotStarted
		}
	}
}

// waitForRevision blocks until the cache has applied rev.
func (c *metadataCache) waitForRevision(ctx context.Context, stop <-chan struct{}, rev int64) error {
	return c.waitFor(ctx, stop, func(s *metadataSnapshot) bool { return s.rev >= rev })
}

// load replaces the whole state by the keys of one Get at one revision,
// notifying listeners of the difference. Used at start and after a watch
// failure (e.g. compaction), when individual events are lost.
func (c *metadataCache) load(kvs []*mvccpb.KeyValue, rev int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.topics
	c.topics = map[string]*topicState{}
	c.brokers = map[int32]BrokerInfo{}
	c.candidates = map[string]electionCandidate{}
	c.auth.reset()
	c.groupCfgs.reset()
	c.quotas.reset()
	c.clientMetrics.reset()
	c.features.reset()
	for _, kv := range kvs {
		c.applyPutLocked(kv)
	}
	for _, st := range c.topics {
		st.topicChanged = true // rebuilt whole
	}
	changed := map[string]bool{}
	for name, st := range c.topics {
		if o := old[name]; o == nil || o.modRev != st.modRev || len(o.partitions) != len(st.partitions) {
			changed[name] = true
		}
	}
	for name := range old {
		if c.topics[name] == nil {
			changed[name] = true
		}
	}
	c.publishLocked(rev, changed, true, true)
}

// applyRevision applies the events of one revision.
func (c *metadataCache) applyRevision(rev int64, events []*clientv3.Event) {
	c.applyEvents(rev, events)
}

// applyEvents applies the events of one watch response, up to rev, and
// publishes one snapshot for them all: under a burst of changes (a
// failover moving thousands of leaders, one etcd revision each) a topic is
// rebuilt and its listeners called once per response, not once per
// revision, as Kafka's metadata loader publishes batches of records.
func (c *metadataCache) applyEvents(rev int64, events []*clientv3.Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	changed := map[string]bool{}
	var brokersChanged, candidatesChanged bool
	for _, ev := range events {
		pk := c.ks.parse(string(ev.Kv.Key))
		switch pk.kind {
		case keyTopic, keyPartition:
			changed[pk.topic] = true
		case keyBroker:
			brokersChanged = true
		case keyElection:
			candidatesChanged = true
		}
		if ev.Type == clientv3.EventTypeDelete {
			c.applyDeleteLocked(pk, string(ev.Kv.Key))
		} else {
			c.applyPutLocked(ev.Kv)
		}
	}
	c.publishLocked(rev, changed, brokersChanged, candidatesChanged)
}

func (c *metadataCache) topicStateLocked(name string) *topicState {
	st := c.topics[name]
	if st == nil {
		st = &topicState{partitions: map[int32]PartitionInfo{}}
		c.topics[name] = st
	}
	return st
}

func (c *metadataCache) applyPutLocked(kv *mvccpb.KeyValue) {
	key := string(kv.Key)
	pk := c.ks.parse(key)
	switch pk.kind {
	case keyBroker:
		b, err := decodeBroker(kv.Value)
		if err != nil {
			c.log.Warn("ignoring undecodable broker registration", "key", key, "err", err)
			return
		}
		b.Epoch = kv.CreateRevision
		c.brokers[pk.nodeID] = b
	case keyScram, keyToken, keyACL:
		c.auth.put(pk, kv, c.log)
	case keyGroupConfig:
		c.groupCfgs.put(pk, kv, c)
	case keyQuota:
		c.quotas.put(pk, kv, c.log)
	case keyClientMetrics:
		c.clientMetrics.put(pk, kv, c)
	case keyFeatures:
		c.features.put(kv, c)
	case keyElection:
		id, err := strconv.ParseInt(string(kv.Value), 10, 32)
		if err != nil {
			c.log.Warn("ignoring undecodable controller candidate", "key", key, "err", err)
			return
		}
		c.candidates[key] = electionCandidate{createRev: kv.CreateRevision, nodeID: int32(id)}
	case keyTopic:
		t, err := decodeTopic(kv.Value)
		if err != nil {
			c.log.Warn("ignoring undecodable topic", "key", key, "err", err)
			return
		}
		st := c.topicStateLocked(pk.topic)
		t.Name = pk.topic
		st.topic = &t
		st.topicChanged = true
		st.modRev = max(st.modRev, kv.ModRevision)
	case keyPartition:
		p, err := decodePartition(pk.partition, kv.Value)
		if err != nil {
			c.log.Warn("ignoring undecodable partition state", "key", key, "err", err)
			return
		}
		st := c.topicStateLocked(pk.topic)
		st.partitions[pk.partition] = p
		st.putParts = append(st.putParts, pk.partition)
		st.modRev = max(st.modRev, kv.ModRevision)
	}
}

func (c *metadataCache) applyDeleteLocked(pk parsedKey, key string) {
	switch pk.kind {
	case keyBroker:
		delete(c.brokers, pk.nodeID)
	case keyScram, keyToken, keyACL:
		c.auth.delete(pk)
	case keyGroupConfig:
		c.groupCfgs.delete(pk)
	case keyQuota:
		c.quotas.delete(pk)
	case keyClientMetrics:
		c.clientMetrics.delete(pk)
	case keyFeatures:
		c.features.delete()
	case keyElection:
		delete(c.candidates, key)
	case keyTopic:
		if st := c.topics[pk.topic]; st != nil {
			st.topic = nil
			st.topicChanged = true
		}
	case keyPartition:
		if st := c.topics[pk.topic]; st != nil {
			delete(st.partitions, pk.partition)
			st.deletedParts = true
		}
	}
}

// publishLocked builds and publishes the snapshot of rev (sharing what did not
// change with the previous one), calls the listeners for the changed topics,
// then wakes the waiters.
func (c *metadataCache) publishLocked(rev int64, changedTopics map[string]bool, brokersChanged, candidatesChanged bool) {
	prev := c.snap.Load()
	next := &metadataSnapshot{
		rev:           rev,
		tix:           prev.tix,
		brokers:       prev.brokers,
		controllerID:  prev.controllerID,
		auth:          prev.auth,
		groupConfigs:  prev.groupConfigs,
		quotas:        prev.quotas,
		clientMetrics: prev.clientMetrics,
		features:      prev.features,
	}
	if c.auth.dirty {
		next.auth = c.auth.snapshot()
	}
	if c.groupCfgs.dirty {
		next.groupConfigs = c.groupCfgs.snapshot()
	}
	if c.quotas.dirty {
		next.quotas = c.quotas.snapshot()
	}
	if c.clientMetrics.dirty {
		next.clientMetrics = c.clientMetrics.snapshot()
	}
	if c.features.dirty {
		next.features, c.features.dirty = c.features.cur, false
	}
	var changes []TopicChange
	if len(changedTopics) > 0 {
		// Only the changed topics are visited: nothing here grows with the
		// number of topics or partitions that did not change.
		ed := prev.tix.edit()
		for _, name := range slices.Sorted(maps.Keys(changedTopics)) {
			old := prev.tix.get(name)
			st := c.topics[name]
			if st != nil && st.topic == nil && len(st.partitions) == 0 {
				delete(c.topics, name)
				st = nil
			}
			if old != nil && (st == nil || st.topic == nil || st.topic.ID != old.ID) {
				ed.remove(old)
				changes = append(changes, TopicChange{Topic: *old, Deleted: true})
				old = nil
			}
			if st != nil && st.topic != nil {
				var t *TopicInfo
				var parts []int32
				ok := false
				if old != nil {
					t, parts, ok = st.update(old)
				}
				if !ok {
					t, parts = st.build(), nil
				}
				ed.put(t)
				changes = append(changes, TopicChange{Topic: *t, Partitions: parts})
			}
			if st != nil {
				st.clean()
			}
		}
		next.tix = ed.done()
	}
	if brokersChanged {
		next.brokers = make([]BrokerInfo, 0, len(c.brokers))
		for _, id := range slices.Sorted(maps.Keys(c.brokers)) {
			next.brokers = append(next.brokers, c.brokers[id])
		}
	}
	if candidatesChanged {
		next.controllerID = -1
		var leaderRev int64
		for _, cand := range c.candidates {
			if next.controllerID == -1 || cand.createRev < leaderRev {
				next.controllerID, leaderRev = cand.nodeID, cand.createRev
			}
		}
	}
	c.recent.record(prev.rev, rev, changedTopics)
	c.snap.Store(next)
	for _, ch := range changes {
		for _, fn := range c.listeners {
			fn(ch)
		}
	}
	old := c.prog.Swap(&progress{snap: next, next: make(chan struct{})})
	close(old.next)
}

// changeLogSize bounds the publishes changeLog remembers.
const changeLogSize = 256

// changeLog remembers which topics the last publishes changed, so that a
// reader that saw an earlier snapshot (the active controller) can visit
// only those instead of every topic.
type changeLog struct {
	mu      sync.Mutex
	entries []changeEntry // oldest first, consecutive
}

type changeEntry struct {
	from, to int64 // the snapshot's revision before and after
	topics   []string
}

func (l *changeLog) record(from, to int64, topics map[string]bool) {
	e := changeEntry{from: from, to: to}
	if len(topics) > 0 {
		e.topics = slices.Collect(maps.Keys(topics))
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if n := len(l.entries); n > 0 && l.entries[n-1].to != from {
		l.entries = l.entries[:0] // not consecutive (never expected): start again
	}
	if len(l.entries) == changeLogSize {
		l.entries = append(l.entries[:0], l.entries[1:]...)
	}
	l.entries = append(l.entries, e)
}

// changedBetween is the names of the topics changed by the publishes after
// the snapshot of revision from up to that of revision to; ok is false
// when they are not all remembered (then every topic may have changed).
func (c *metadataCache) changedBetween(from, to int64) (names []string, ok bool) {
	if from == to {
		return nil, true
	}
	l := &c.recent
	l.mu.Lock()
	defer l.mu.Unlock()
	i := slices.IndexFunc(l.entries, func(e changeEntry) bool { return e.from == from })
	if i < 0 {
		return nil, false
	}
	seen := map[string]bool{}
	for _, e := range l.entries[i:] {
		if e.from >= to {
			break
		}
		for _, n := range e.topics {
			if !seen[n] {
				seen[n] = true
				names = append(names, n)
			}
		}
		if e.to == to {
			slices.Sort(names)
			return names, true
		}
	}
	return nil, false
}

// run watches the prefix from rev+1 until ctx ends, reloading everything when
// the watch fails (compaction, lost connection).
func (c *metadataCache) run(ctx context.Context, client *clientv3.Client, rev int64) {
	for ctx.Err() == nil {
		rev = c.watch(ctx, client, rev)
		if ctx.Err() != nil {
			return
		}
		// Events may have been lost: reload at a new revision, with backoff
		// while etcd is unreachable.
		for backoff := 50 * time.Millisecond; ; backoff = min(2*backoff, 2*time.Second) {
			resp, err := client.Get(ctx, c.ks.root(), clientv3.WithPrefix())
			if err == nil {
				c.load(resp.Kvs, resp.Header.Revision)
				rev = resp.Header.Revision
				break
			}
			if ctx.Err() != nil {
				return
			}
			c.log.Warn("reloading metadata from etcd failed; retrying", "err", err, "backoff", backoff)
			select {
			case <-time.After(backoff):
			case <-ctx.Done():
				return
			}
		}
	}
}

// watch applies events after rev until the watch ends, returning the last
// applied revision.
func (c *metadataCache) watch(ctx context.Context, client *clientv3.Client, rev int64) int64 {
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	for resp := range client.Watch(wctx, c.ks.root(), clientv3.WithPrefix(), clientv3.WithRev(rev+1)) {
		if err := resp.Err(); err != nil {
			if ctx.Err() == nil {
				c.log.Warn("metadata watch failed; reloading", "err", err, "revision", rev)
			}
			return rev
		}
		if resp.Canceled {
			return rev
		}
		// A watch response never splits a revision: its events are
		// applied together, published as of its last revision.
		if n := len(resp.Events); n > 0 {
			r := resp.Events[n-1].Kv.ModRevision
			c.applyEvents(r, resp.Events)
			rev = r
		}
	}
	return rev
}
