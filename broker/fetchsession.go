package broker

// Fetch sessions (KIP-227), Fetch v7 and up, as Kafka's FetchManager,
// FetchContext, FetchSession and FetchSessionCacheShard.
//
// A fetch request carries a session id and an epoch:
//
//	id 0, epoch 0     full fetch; the broker tries to create a session and
//	                  answers with its id (0 if the cache has no room)
//	id N, epoch 0     full fetch; session N is closed first
//	any id, epoch -1  full fetch without a session (FINAL_EPOCH); session N,
//	                  if named, is closed; Fetch v4-6 always count as this
//	id N, epoch E>0   incremental fetch on session N, whose expected epoch
//	                  must be E (else INVALID_FETCH_SESSION_EPOCH; an
//	                  unknown N is FETCH_SESSION_ID_NOT_FOUND, a session
//	                  made with topic names used from v13 on, or the
//	                  reverse, FETCH_SESSION_TOPIC_ID_ERROR)
//
// An incremental request lists only partitions added to the session or
// whose fetch parameters changed, and forgotten_topics_data removes some;
// the fetch reads every partition of the session, in the session's order.
// Its response lists only partitions with records, a changed high
// watermark or log start offset, a diverging epoch, or an error; a
// partition that returned records moves to the end of the session, so
// that the next fetches start with the others. A session left with no partitions is closed and the
// request answered without one. The expected epoch advances when the
// request is accepted; it is checked again when the response is made (a
// duplicate request gets INVALID_FETCH_SESSION_EPOCH then).
//
// The cache holds max.incremental.fetch.session.cache.slots sessions
// (1000), split into 8 shards of equal size that new sessions take in
// turn; a shard's ids lie in its own range (an id outside every range is
// FETCH_SESSION_ID_NOT_FOUND; Kafka fails such a request). A full shard
// evicts, to make room, its least recently used session if idle for over
// 2 minutes, else its least valuable evictable one if the new session is
// worth at least as much: fewer partitions are worth less, a consumer's
// session less than a follower's; a consumer's session is evictable by a
// follower's at any age, any session by others once it was 2 minutes old
// when last used. Else no session is created. Sessions are not tied to
// connections.
//
// Locking: a shard's lock, then a session's, never the other way round.

import (
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	// fetchSessionShards is KafkaBroker.NumFetchSessionCacheShards.
	fetchSessionShards = 8
	// fetchSessionEvictionMs is KafkaBroker.MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS.
	fetchSessionEvictionMs = 120000
	// fetchSessionIDRange is how many session ids each shard hands out.
	fetchSessionIDRange = math.MaxInt32 / fetchSessionShards

	fetchInitialEpoch int32 = 0
	fetchFinalEpoch   int32 = -1
)

// nextFetchEpoch is FetchMetadata.nextEpoch.
func nextFetchEpoch(e int32) int32 {
	switch {
	case e < 0:
		return fetchFinalEpoch
	case e == math.MaxInt32:
		return 1
	}
	return e + 1
}

// fetchSessionCache is Kafka's FetchSessionCache: the shards and the
// round-robin counter that places new sessions.
type fetchSessionCache struct {
	shards  [fetchSessionShards]*fetchSessionShard
	counter atomic.Uint32
	now     func() int64 // milliseconds
	// incrementalFetches counts accepted incremental fetches.
	incrementalFetches atomic.Int64
}

func newFetchSessionCache(slots int) *fetchSessionCache {
	c := &fetchSessionCache{now: func() int64 { return time.Now().UnixMilli() }}
	for i := range c.shards {
		c.shards[i] = &fetchSessionShard{num: i, maxEntries: slots / fetchSessionShards, evictionMs: fetchSessionEvictionMs,
			sessions: map[int32]*fetchSession{}}
	}
	return c
}

// shardOf is the shard that handed out id, nil for an id no shard gives.
func (c *fetchSessionCache) shardOf(id int32) *fetchSessionShard {
	if id <= 0 || id/fetchSessionIDRange >= fetchSessionShards {
		return nil
	}
	return c.shards[id/fetchSessionIDRange]
}

// sessionCount is the number of sessions in the cache.
func (c *fetchSessionCache) sessionCount() int {
	n := 0
	for _, sh := range c.shards {
		sh.mu.Lock()
		n += len(sh.sessions)
		sh.mu.Unlock()
	}
	return n
}

// fetchSessionShard is FetchSessionCacheShard.
type fetchSessionShard struct {
	mu         sync.Mutex
	num        int
	maxEntries int
	evictionMs int64 // fetchSessionEvictionMs
	sessions   map[int32]*fetchSession
}

// sessionPartitionKey names a session partition: by topic id when the
// session uses ids (v13+), else by name.
type sessionPartitionKey struct {
	topic     string
	topicID   [16]byte
	partition int32
}

// cachedPartition is FetchSession.CachedPartition: the request parameters
// of a session partition and what its last response said.
type cachedPartition struct {
	key                   sessionPartitionKey
	topic                 string // name as requested (v13+: resolved at each fetch)
	maxBytes              int32
	fetchOffset           int64
	leaderEpoch           int32
	fetcherLogStartOffset int64
	lastFetchedEpoch      int32
	highWatermark         int64
	localLogStartOffset   int64
}

// fetchSession is FetchSession.
type fetchSession struct {
	mu           sync.Mutex
	id           int32
	privileged   bool // created by a follower
	usesTopicIDs bool
	creationMs   int64
	epoch        int32 // the epoch the next incremental request must carry
	parts        []*cachedPartition
	byKey        map[sessionPartitionKey]*cachedPartition

	// Eviction bookkeeping, set by touch under the shard's lock.
	lastUsedMs            int64
	cachedSize            int // -1: not in the cache
	evictableByAll        bool
	evictableByPrivileged bool
}

// evictableKey is FetchSession.EvictableKey: less is evicted first.
type evictableKey struct {
	privileged bool
	size       int
	id         int32
}

func (a evictableKey) less(b evictableKey) bool {
	if a.privileged != b.privileged {
		return !a.privileged
	}
	if a.size != b.size {
		return a.size < b.size
	}
	return a.id < b.id
}

func (s *fetchSession) evictableKey() evictableKey {
	return evictableKey{privileged: s.privileged, size: s.cachedSize, id: s.id}
}

// newSessionID is a random id of the shard's range not in use.
func (sh *fetchSessionShard) newSessionIDLocked() int32 {
	lo := max(1, int32(sh.num)*fetchSessionIDRange)
	hi := int32(sh.num+1) * fetchSessionIDRange
	for {
		id := lo + rand.Int32N(hi-lo)
		if _, taken := sh.sessions[id]; !taken {
			return id
		}
	}
}

// maybeCreateSession adds a session holding parts if there is room or a
// session can be evicted for it; it returns the new id, or 0.
func (sh *fetchSessionShard) maybeCreateSession(now int64, privileged bool, usesTopicIDs bool, parts []*cachedPartition) int32 {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if len(sh.sessions) >= sh.maxEntries && !sh.tryEvictLocked(privileged, evictableKey{privileged, len(parts), 0}, now) {
		return 0
	}
	s := &fetchSession{
		id: sh.newSessionIDLocked(), privileged: privileged, usesTopicIDs: usesTopicIDs,
		creationMs: now, lastUsedMs: now, epoch: nextFetchEpoch(fetchInitialEpoch),
		parts: parts, byKey: make(map[sessionPartitionKey]*cachedPartition, len(parts)), cachedSize: -1,
	}
	for _, cp := range parts {
		s.byKey[cp.key] = cp
	}
	sh.sessions[s.id] = s
	sh.touchLocked(s, now)
	return s.id
}

// tryEvictLocked is FetchSessionCacheShard.tryEvict: the least recently
// used session if it is stale, else the least valuable evictable one if
// the proposed session is worth at least as much.
func (sh *fetchSessionShard) tryEvictLocked(privileged bool, key evictableKey, now int64) bool {
	var lru *fetchSession
	for _, s := range sh.sessions {
		if lru == nil || s.lastUsedMs < lru.lastUsedMs || (s.lastUsedMs == lru.lastUsedMs && s.id < lru.id) {
			lru = s
		}
	}
	if lru == nil {
		return false
	}
	if now-lru.lastUsedMs > sh.evictionMs {
		sh.removeLocked(lru)
		return true
	}
	var victim *fetchSession
	for _, s := range sh.sessions {
		if (privileged && !s.evictableByPrivileged) || (!privileged && !s.evictableByAll) {
			continue
		}
		if victim == nil || s.evictableKey().less(victim.evictableKey()) {
			victim = s
		}
	}
	if victim == nil || key.less(victim.evictableKey()) {
		return false
	}
	sh.removeLocked(victim)
	return true
}

func (sh *fetchSessionShard) removeLocked(s *fetchSession) {
	if sh.sessions[s.id] == s {
		delete(sh.sessions, s.id)
	}
}

// remove closes session id if it exists.
func (sh *fetchSessionShard) remove(id int32) {
	sh.mu.Lock()
	if s := sh.sessions[id]; s != nil {
		sh.removeLocked(s)
	}
	sh.mu.Unlock()
}

// touchLocked is FetchSessionCacheShard.touch: records the use and where
// the session now stands for eviction.
func (sh *fetchSessionShard) touchLocked(s *fetchSession, now int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastUsedMs = now
	s.cachedSize = len(s.parts)
	old := now-s.creationMs > sh.evictionMs
	s.evictableByPrivileged = !s.privileged || old
	s.evictableByAll = old
}

// fetchContextKind says how a fetch request relates to a session.
type fetchContextKind int

const (
	fetchSessionless  fetchContextKind = iota // no session: every partition in the response
	fetchFull                                 // full fetch that may create a session
	fetchIncremental                          // incremental fetch on a session
	fetchSessionError                         // a session error answers the request
)

// fetchContext is Kafka's FetchContext for one request.
type fetchContext struct {
	kind     fetchContextKind
	errCode  int16 // fetchSessionError
	session  *fetchSession
	reqEpoch int32
	// parts is what the fetch reads: the request's partitions, or for an
	// incremental fetch the session's, in its order.
	parts []fetchPartition
}

// fetchPartition is one partition a fetch reads, with its parameters.
type fetchPartition struct {
	topic       string
	topicID     [16]byte
	partition   int32
	fetchOffset int64
	maxBytes    int32
	leaderEpoch int32
	// logStartOffset and lastFetchedEpoch are a follower's; a session
	// keeps them, the read does not use them.
	logStartOffset   int64
	lastFetchedEpoch int32
	// group numbers the response topic entry the partition goes to.
	group int
	// cached is the session's entry of an incremental fetch's partition,
	// so that finishing the fetch looks none up (a fetch of a session of
	// 10,000 partitions would hash every topic name again).
	cached *cachedPartition
}

func (c *fetchSessionCache) sessionKey(usesTopicIDs bool, topic string, topicID [16]byte, partition int32) sessionPartitionKey {
	if usesTopicIDs {
		return sessionPartitionKey{topicID: topicID, partition: partition}
	}
	return sessionPartitionKey{topic: topic, partition: partition}
}

// requestPartitions lists a request's partitions, one group per request
// topic entry. A partition named more than once is listed once, at its
// first place with its last parameters, as Kafka's FetchRequest.fetchData
// (a LinkedHashMap of TopicIdPartition) does: a request repeating one
// partition costs one read and one response entry.
func requestPartitions(req *kmsg.FetchRequest, usesTopicIDs bool) []fetchPartition {
	var out []fetchPartition
	var index map[sessionPartitionKey]int
	for ti := range req.Topics {
		rt := &req.Topics[ti]
		for _, rp := range rt.Partitions {
			fp := fetchPartition{
				topic: rt.Topic, topicID: rt.TopicID, partition: rp.Partition,
				fetchOffset: rp.FetchOffset, maxBytes: rp.PartitionMaxBytes, leaderEpoch: rp.CurrentLeaderEpoch,
				logStartOffset: rp.LogStartOffset, lastFetchedEpoch: rp.LastFetchedEpoch, group: ti,
			}
			key := sessionPartitionKey{partition: rp.Partition}
			if usesTopicIDs {
				key.topicID = rt.TopicID
			} else {
				key.topic = rt.Topic
			}
			if index == nil {
				index = make(map[sessionPartitionKey]int)
			}
			if i, dup := index[key]; dup {
				fp.group = out[i].group
				out[i] = fp
				continue
			}
			index[key] = len(out)
			out = append(out, fp)
		}
	}
	return out
}

// newContext is FetchManager.newContext.
func (c *fetchSessionCache) newContext(req *kmsg.FetchRequest, version int16, follower bool) *fetchContext {
	usesTopicIDs := version >= 13
	sessionID, epoch := req.SessionID, req.SessionEpoch
	if version < 7 {
		sessionID, epoch = 0, fetchFinalEpoch // FetchMetadata.LEGACY
	}
	if epoch == fetchInitialEpoch || epoch == fetchFinalEpoch {
		if sessionID != 0 {
			if sh := c.shardOf(sessionID); sh != nil {
				sh.remove(sessionID) // a full fetch closes the session it names
			}
		}
		kind := fetchFull
		if epoch == fetchFinalEpoch {
			kind = fetchSessionless
		}
		return &fetchContext{kind: kind, parts: requestPartitions(req, usesTopicIDs)}
	}
	sh := c.shardOf(sessionID)
	if sh == nil {
		return &fetchContext{kind: fetchSessionError, errCode: kerr.FetchSessionIDNotFound.Code}
	}
	sh.mu.Lock()
	defer sh.mu.Unlock()
	s := sh.sessions[sessionID]
	if s == nil {
		return &fetchContext{kind: fetchSessionError, errCode: kerr.FetchSessionIDNotFound.Code}
	}
	s.mu.Lock()
	switch {
	case s.epoch != epoch:
		s.mu.Unlock()
		return &fetchContext{kind: fetchSessionError, errCode: kerr.InvalidFetchSessionEpoch.Code}
	case s.usesTopicIDs != usesTopicIDs:
		s.mu.Unlock()
		return &fetchContext{kind: fetchSessionError, errCode: kerr.FetchSessionTopicIDError.Code}
	}
	c.updateSessionLocked(s, req)
	if len(s.parts) == 0 {
		s.mu.Unlock()
		sh.removeLocked(s)
		return &fetchContext{kind: fetchSessionless, parts: requestPartitions(req, usesTopicIDs)}
	}
	s.mu.Unlock()
	sh.touchLocked(s, c.now())
	s.mu.Lock()
	s.epoch = nextFetchEpoch(s.epoch)
	parts := sessionPartitions(s)
	s.mu.Unlock()
	c.incrementalFetches.Add(1)
	return &fetchContext{kind: fetchIncremental, session: s, reqEpoch: epoch, parts: parts}
}

// updateSessionLocked is FetchSession.update: the request's partitions
// are added (at the end) or take the new parameters, then the forgotten
// ones are removed.
func (c *fetchSessionCache) updateSessionLocked(s *fetchSession, req *kmsg.FetchRequest) {
	for ti := range req.Topics {
		rt := &req.Topics[ti]
		for _, rp := range rt.Partitions {
			key := c.sessionKey(s.usesTopicIDs, rt.Topic, rt.TopicID, rp.Partition)
			cp := s.byKey[key]
			if cp == nil {
				cp = &cachedPartition{key: key, topic: rt.Topic, highWatermark: -1, localLogStartOffset: -1}
				s.byKey[key] = cp
				s.parts = append(s.parts, cp)
			}
			cp.maxBytes, cp.fetchOffset, cp.fetcherLogStartOffset = rp.PartitionMaxBytes, rp.FetchOffset, rp.LogStartOffset
			cp.leaderEpoch, cp.lastFetchedEpoch = rp.CurrentLeaderEpoch, rp.LastFetchedEpoch
		}
	}
	removed := false
	for _, ft := range req.ForgottenTopics {
		for _, p := range ft.Partitions {
			key := c.sessionKey(s.usesTopicIDs, ft.Topic, ft.TopicID, p)
			if s.byKey[key] != nil {
				delete(s.byKey, key)
				removed = true
			}
		}
	}
	if removed {
		kept := s.parts[:0]
		for _, cp := range s.parts {
			if s.byKey[cp.key] == cp {
				kept = append(kept, cp)
			}
		}
		clear(s.parts[len(kept):])
		s.parts = kept
	}
}

// sessionPartitions lists a session's partitions in its order, a new
// group at each change of topic, as Kafka's FetchResponse groups them. The
// list's array comes from an earlier fetch of about as many partitions
// (recycleSessionPartitions): an incremental fetch makes one every time.
func sessionPartitions(s *fetchSession) []fetchPartition {
	var out []fetchPartition
	if n := len(s.parts); n >= minPooledFetch {
		if p, _ := sessionPartitionPools[poolClass(n)].Get().(*[]fetchPartition); p != nil && cap(*p) >= n {
			out = *p
		}
	}
	if out == nil {
		out = make([]fetchPartition, 0, len(s.parts))
	}
	group := -1
	for i, cp := range s.parts {
		if i == 0 || cp.key.topic != s.parts[i-1].key.topic || cp.key.topicID != s.parts[i-1].key.topicID {
			group++
		}
		out = append(out, fetchPartition{
			topic: cp.topic, topicID: cp.key.topicID, partition: cp.key.partition,
			fetchOffset: cp.fetchOffset, maxBytes: cp.maxBytes, leaderEpoch: cp.leaderEpoch,
			logStartOffset: cp.fetcherLogStartOffset, lastFetchedEpoch: cp.lastFetchedEpoch, group: group,
			cached: cp,
		})
	}
	return out
}

var sessionPartitionPools [32]sync.Pool // of *[]fetchPartition, by size as fetchScratchPools

// recycleSessionPartitions hands the array of a sessionPartitions list to a
// later fetch once the fetch is answered, cleared: it points at the
// session's entries and topic names.
func recycleSessionPartitions(parts []fetchPartition) {
	if len(parts) < minPooledFetch {
		return
	}
	clear(parts)
	parts = parts[:0]
	sessionPartitionPools[poolClass(cap(parts))].Put(&parts)
}

// mustRespond is CachedPartition.maybeUpdateResponseData with the update:
// whether the partition's response goes out, remembering what it said.
func (cp *cachedPartition) mustRespond(sp *kmsg.FetchResponseTopicPartition, recordBytes int64) bool {
	must := recordBytes > 0
	if cp.highWatermark != sp.HighWatermark {
		must = true
		cp.highWatermark = sp.HighWatermark
	}
	if cp.localLogStartOffset != sp.LogStartOffset {
		must = true
		cp.localLogStartOffset = sp.LogStartOffset
	}
	if sp.PreferredReadReplica != -1 {
		must = true
	}
	if sp.ErrorCode != 0 {
		cp.highWatermark = -1 // so the partition is sent again once the error is gone
		must = true
	}
	if sp.DivergingEpoch.Epoch != -1 || sp.DivergingEpoch.EndOffset != -1 {
		must = true
	}
	return must
}

// finishSession applies the context to a fetch's response before it is
// encoded: a full fetch creates the session and reports its id; an
// incremental one keeps only the partitions that must be sent (keep says
// which, by response index) and reorders the session.
func (c *fetchSessionCache) finishSession(ctx *fetchContext, resp *kmsg.FetchResponse, recordBytes func(t, p int) int64,
	follower, usesTopicIDs bool) (keep func(t, p int) bool) {
	switch ctx.kind {
	case fetchFull:
		var parts []*cachedPartition
		seen := make(map[sessionPartitionKey]*cachedPartition, len(ctx.parts))
		i := 0
		for ti := range resp.Topics {
			rt := &resp.Topics[ti]
			for pi := range rt.Partitions {
				sp := &rt.Partitions[pi]
				fp := &ctx.parts[i]
				i++
				key := c.sessionKey(usesTopicIDs, fp.topic, fp.topicID, fp.partition)
				cp := &cachedPartition{
					key: key, topic: fp.topic, maxBytes: fp.maxBytes, fetchOffset: fp.fetchOffset, leaderEpoch: fp.leaderEpoch,
					fetcherLogStartOffset: fp.logStartOffset, lastFetchedEpoch: fp.lastFetchedEpoch,
					highWatermark: sp.HighWatermark, localLogStartOffset: sp.LogStartOffset,
				}
				if prev := seen[key]; prev != nil {
					*prev = *cp // a partition named twice: one entry, the last parameters
					continue
				}
				seen[key] = cp
				parts = append(parts, cp)
			}
		}
		sh := c.shards[(c.counter.Add(1)-1)%fetchSessionShards] // getAndIncrement: shard 0 first
		resp.SessionID = sh.maybeCreateSession(c.now(), follower, usesTopicIDs, parts)
		return nil
	case fetchIncremental:
		s := ctx.session
		s.mu.Lock()
		defer s.mu.Unlock()
		resp.SessionID = s.id
		if s.epoch != nextFetchEpoch(ctx.reqEpoch) {
			// Another request on the session came in meanwhile.
			resp.ErrorCode = kerr.InvalidFetchSessionEpoch.Code
			return func(int, int) bool { return false }
		}
		include := make([][]bool, len(resp.Topics))
		var moved []*cachedPartition
		i := 0
		for ti := range resp.Topics {
			rt := &resp.Topics[ti]
			include[ti] = make([]bool, len(rt.Partitions))
			for pi := range rt.Partitions {
				// The session is as this request left it (the epoch
				// check above): its entries are those listed then.
				cp := ctx.parts[i].cached
				i++
				n := recordBytes(ti, pi)
				if cp.mustRespond(&rt.Partitions[pi], n) {
					include[ti][pi] = true
					if n > 0 {
						moved = append(moved, cp)
					}
				}
			}
		}
		moveToEnd(s, moved)
		return func(t, p int) bool { return include[t][p] }
	}
	return nil
}

// moveToEnd moves the partitions that returned records to the end of the
// session, in the order they came: the others keep theirs.
func moveToEnd(s *fetchSession, moved []*cachedPartition) {
	if len(moved) == 0 {
		return
	}
	isMoved := make(map[*cachedPartition]bool, len(moved))
	for _, cp := range moved {
		isMoved[cp] = true
	}
	kept := make([]*cachedPartition, 0, len(s.parts))
	for _, cp := range s.parts {
		if !isMoved[cp] {
			kept = append(kept, cp)
		}
	}
	s.parts = append(kept, moved...)
}
