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
	topics        map[string]*TopicInfo
	topicsByID    map[[16]byte]*TopicInfo
	topicList     []*TopicInfo // sorted by name
	brokers       []BrokerInfo // sorted by node id
	controllerID  int32
	auth          *authSnapshot                // SCRAM credentials, delegation tokens, ACLs (auth_cache.go)
	groupConfigs  map[string]map[string]string // group id -> its configs (group_configs.go)
	quotas        *quota.Snapshot              // client quotas (quotas.go)
	clientMetrics map[string]map[string]string // subscription name -> its configs (client_metrics_configs.go)
	features      FinalizedFeatures            // UpdateFeatures' levels (features.go)
}

var emptySnapshot = &metadataSnapshot{
	topics:       map[string]*TopicInfo{},
	topicsByID:   map[[16]byte]*TopicInfo{},
	controllerID: -1,
	auth:         emptyAuthSnapshot,
}

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
}

func (s *topicState) build() *TopicInfo {
	t := *s.topic
	t.Partitions = make([]PartitionInfo, 0, len(s.partitions))
	for _, p := range slices.Sorted(maps.Keys(s.partitions)) {
		t.Partitions = append(t.Partitions, s.partitions[p])
	}
	return &t
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
	for _, t := range c.snap.Load().topicList {
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
		st.modRev = max(st.modRev, kv.ModRevision)
	case keyPartition:
		p, err := decodePartition(pk.partition, kv.Value)
		if err != nil {
			c.log.Warn("ignoring undecodable partition state", "key", key, "err", err)
			return
		}
		st := c.topicStateLocked(pk.topic)
		st.partitions[pk.partition] = p
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
		}
	case keyPartition:
		if st := c.topics[pk.topic]; st != nil {
			delete(st.partitions, pk.partition)
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
		topics:        prev.topics,
		topicsByID:    prev.topicsByID,
		topicList:     prev.topicList,
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
		next.topics = maps.Clone(prev.topics)
		next.topicsByID = maps.Clone(prev.topicsByID)
		for _, name := range slices.Sorted(maps.Keys(changedTopics)) {
			old := prev.topics[name]
			st := c.topics[name]
			if st != nil && st.topic == nil && len(st.partitions) == 0 {
				delete(c.topics, name)
				st = nil
			}
			if old != nil && (st == nil || st.topic == nil || st.topic.ID != old.ID) {
				delete(next.topics, name)
				delete(next.topicsByID, old.ID)
				changes = append(changes, TopicChange{Topic: *old, Deleted: true})
			}
			if st != nil && st.topic != nil {
				t := st.build()
				next.topics[name] = t
				next.topicsByID[t.ID] = t
				changes = append(changes, TopicChange{Topic: *t})
			}
		}
		next.topicList = make([]*TopicInfo, 0, len(next.topics))
		for _, name := range slices.Sorted(maps.Keys(next.topics)) {
			next.topicList = append(next.topicList, next.topics[name])
		}
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
	c.snap.Store(next)
	for _, ch := range changes {
		for _, fn := range c.listeners {
			fn(ch)
		}
	}
	old := c.prog.Swap(&progress{snap: next, next: make(chan struct{})})
	close(old.next)
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
		// A watch response never splits a revision: apply one revision at a time.
		events := resp.Events
		for len(events) > 0 {
			r := events[0].Kv.ModRevision
			n := 1
			for n < len(events) && events[n].Kv.ModRevision == r {
				n++
			}
			c.applyRevision(r, events[:n])
			rev = r
			events = events[n:]
		}
	}
	return rev
}
