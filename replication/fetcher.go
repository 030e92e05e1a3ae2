package replication

// The follower's side of replication (Kafka's ReplicaFetcherThread).
//
// One fetcher per leader broker fetches every partition this broker follows
// from it, with Kafka's Fetch protocol and this broker's replica id and
// broker epoch (replica_state from v15), reading up to the leader's log end
// offset. Each fetched partition names the latest epoch of its log
// (last_fetched_epoch, Fetch v12+): a log that diverges from the leader's
// is answered a diverging epoch instead of records, and is truncated where
// it diverges by Kafka's AbstractFetcherThread rules (KIP-101/KIP-279, as
// for an OffsetForLeaderEpoch answer), then fetches again from its new end
// (Kafka's truncation on fetch). So a partition that starts following (a
// new leader or epoch) fetches at once if the leader's registration says it
// truncates on fetch (Strait versions before it ignore the field: their
// followers truncate first, as below); only one whose log has no epochs
// (empty, or written before epochs were kept) first truncates to its high
// watermark, and one the leader answered OFFSET_OUT_OF_RANGE at or above
// its log start (an epoch it does not know) asks OffsetForLeaderEpoch.
// Fetched batches are appended byte for byte (storage.Log.AppendAsFollower);
// the follower's high watermark is the leader's, bounded by its own log end
// offset, and its log start offset follows the leader's. A fetch below the
// leader's log start offset starts the log afresh there. Errors back off for
// replica.fetch.backoff.ms, but for a leader that does not know its
// leadership yet (refusedBackoff).
//
// Requests go through the Manager's BrokerClient; a fetcher's context is
// cancelled when it stops, which ends a request in flight.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/recordbatch"
)

// fetchers owns the fetchers, one per leader broker (Kafka's
// ReplicaFetcherManager). Thread-safety: mu guards the maps; each fetcher's
// own mu its partitions (lock order: fetchers.mu > fetcher.mu). wg counts
// every fetcher goroutine, stopped ones included, for close.
type fetchers struct {
	m        *Manager
	mu       sync.Mutex
	byLeader map[int32]*fetcher
	of       map[*Partition]*fetcher
	closed   bool
	wg       sync.WaitGroup
}

func newFetchers(m *Manager) *fetchers {
	return &fetchers{m: m, byLeader: map[int32]*fetcher{}, of: map[*Partition]*fetcher{}}
}

// follow makes p fetch from leader at leaderEpoch, truncating first.
func (rf *fetchers) follow(p *Partition, leader, leaderEpoch int32) {
	rf.mu.Lock()
	defer rf.mu.Unlock()
	if rf.closed {
		return
	}
	if f := rf.of[p]; f != nil && f.leader != leader {
		f.remove(p)
		delete(rf.of, p)
		rf.stopIfIdleLocked(f)
	}
	f := rf.byLeader[leader]
	if f == nil {
		f = newFetcher(rf.m, leader)
		rf.byLeader[leader] = f
		rf.wg.Go(f.run)
	}
	f.add(p, leaderEpoch)
	rf.of[p] = f
}

// unfollow stops fetching p; once it returns, no fetched data is appended
// to p's log any more.
func (rf *fetchers) unfollow(p *Partition) {
	rf.mu.Lock()
	defer rf.mu.Unlock()
	f := rf.of[p]
	if f == nil {
		return
	}
	f.remove(p)
	delete(rf.of, p)
	rf.stopIfIdleLocked(f)
}

func (rf *fetchers) stopIfIdleLocked(f *fetcher) {
	if f.size() == 0 {
		delete(rf.byLeader, f.leader)
		f.stop()
	}
}

// close stops every fetcher and waits for all fetcher goroutines (those
// stopped earlier when they fell idle too); follow starts none afterwards.
func (rf *fetchers) close() {
	rf.mu.Lock()
	rf.closed = true
	for _, f := range rf.byLeader {
		f.stop()
	}
	rf.byLeader, rf.of = map[int32]*fetcher{}, map[*Partition]*fetcher{}
	rf.mu.Unlock()
	rf.wg.Wait()
}

// followState is one followed partition in a fetcher.
type followState struct {
	leaderEpoch int32
	// truncate: must truncate before fetching (truncateDiverged): a log
	// without epochs, or one the leader found beyond its end.
	truncate    bool
	backoffTill time.Time
	// lag is the leader's high watermark minus our log end offset at the
	// last fetch that brought records (or the first), -1 before it: 0 is
	// in sync (PartitionFetchState.isReplicaInSync), never throttled.
	lag int64
	// since is when this leader epoch's following began, zero once its
	// first fetch was answered (for the log of a failover's timeline).
	since time.Time
	// refusals counts the leader's refusals for not leading yet (see
	// refusedBackoff).
	refusals int
}

// fetcher fetches the partitions this broker follows from one leader
// (Kafka's ReplicaFetcherThread): one goroutine, run.
type fetcher struct {
	m      *Manager
	leader int32

	mu    sync.Mutex // guards parts and added; held while appending fetched data
	parts map[*Partition]*followState
	// added is when a partition last started following here (see
	// followingWait).
	added time.Time
	// parked cancels the fetch in flight while it may wait the whole
	// replica.fetch.wait.max.ms at the leader; add calls it (see
	// preemptParked) and sets preempted.
	parked    context.CancelFunc
	preempted bool

	// session is the fetch session with the leader and want the last
	// round's partitions (its array is reused): the run goroutine's only.
	session followerSession
	want    []wantPart
	// idleWait is how long run waits for a partition when the last round
	// had none to fetch: until the first one backing off may ask again,
	// at most idlePoll.
	idleWait time.Duration

	wake     chan struct{}
	quit     chan struct{}
	quitOnce sync.Once
	done     chan struct{}
	ctx      context.Context
	cancel   context.CancelFunc
}

func newFetcher(m *Manager, leader int32) *fetcher {
	ctx, cancel := context.WithCancel(context.Background())
	return &fetcher{
		m: m, leader: leader, parts: map[*Partition]*followState{},
		wake: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{}),
		ctx: ctx, cancel: cancel,
	}
}

func (f *fetcher) add(p *Partition, leaderEpoch int32) {
	// A log with an epoch fetches at once: the leader checks its fetch
	// offset against that epoch (Kafka's InitialFetchState with a
	// lastFetchedEpoch, which starts in the Fetching state), if its
	// registration says it does.
	_, hasEpoch := p.log.LatestEpoch()
	onFetch := hasEpoch && f.m.truncatesOnFetch(f.leader)
	f.mu.Lock()
	now := time.Now()
	f.parts[p] = &followState{leaderEpoch: leaderEpoch, truncate: !onFetch, lag: -1, since: now}
	f.added = now
	if f.parked != nil {
		f.parked()
		f.parked, f.preempted = nil, true
	}
	f.mu.Unlock()
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

func (f *fetcher) remove(p *Partition) {
	f.mu.Lock()
	delete(f.parts, p)
	f.mu.Unlock()
}

func (f *fetcher) size() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.parts)
}

func (f *fetcher) stop() {
	f.quitOnce.Do(func() {
		close(f.quit)
		f.cancel()
	})
}

// backoff is replica.fetch.backoff.ms.
func (f *fetcher) backoff() time.Duration { return f.m.cfg.FetchBackoff }

// leaderCatchUpBackoff is the first pause after a leader refused a
// partition it does not lead yet.
const leaderCatchUpBackoff = 50 * time.Millisecond

// Partitions added to a fetcher while its fetch waits at the leader (up to
// replica.fetch.wait.max.ms when nothing new comes) truncate and start
// only once it returns. A leadership change adds them in bursts over a
// second or more (a survivor of a failover at 10,000 partitions applies
// thousands of changes as the controller writes them), so for
// followingWindow after the last addition a fetch waits at most
// followingWait.
//
// A fetch already parked at the leader when the first of them comes would
// still hold them until something is appended to its partitions, and in a
// failover nothing is: the producers wait for the ISR changes still being
// written (at 10,000 partitions the new leaders' first fetches came 340-410
// ms after following began, against 55 ms at 100). So an addition cancels
// such a fetch (preemptParked): its connection closes, and the next fetch,
// on a new one, starts a new fetch session with the added partitions in it.
// Within followingWindow fetches wait at most followingWait and are not
// cancelled, so a burst of additions costs one connection.
const (
	followingWindow = time.Second
	followingWait   = 50 * time.Millisecond
)

// idlePoll is the longest a fetcher with nothing to fetch waits before it
// looks again (an addition wakes it at once).
const idlePoll = 100 * time.Millisecond

// refusedBackoff is how long a partition pauses after the leader answered
// it with code. NOT_LEADER_OR_FOLLOWER and UNKNOWN_LEADER_EPOCH mean the
// leader has not applied the leadership our metadata gives it yet: after a
// failover each survivor applies thousands of changes, and the followers
// of its last ones asked before it got to them (a third of a survivor's
// new partitions at 10,000, each then waiting the whole
// replica.fetch.backoff.ms of 1 s, as Kafka's fetcher does). Those ask
// again after 50 ms, doubling up to replica.fetch.backoff.ms (a leader
// that stays behind, or a leadership that moved on meanwhile, costs a
// small request now and then); other errors pause the whole back-off.
func (f *fetcher) refusedBackoff(st *followState, code int16) time.Duration {
	full := f.backoff()
	if code != kerr.NotLeaderForPartition.Code && code != kerr.UnknownLeaderEpoch.Code {
		return full
	}
	d := leaderCatchUpBackoff << min(st.refusals, 8)
	st.refusals++
	return min(d, full)
}

func (f *fetcher) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-f.quit:
		return false
	}
}

func (f *fetcher) run() {
	defer close(f.done)
	log := f.m.logger.With("fetcher_leader", f.leader)
	log.Debug("replica fetcher started")
	var lastErr string
	for {
		select {
		case <-f.quit:
			log.Debug("replica fetcher stopped")
			return
		default:
		}
		if err := f.truncateDiverged(); err != nil {
			if err.Error() != lastErr && !errors.Is(err, context.Canceled) {
				log.Warn("replica fetcher: truncation", "err", err)
				lastErr = err.Error()
			}
			if !f.sleep(f.backoff()) {
				return
			}
			continue
		}
		progressed, err := f.fetchOnce()
		if err != nil {
			if errors.Is(err, context.Canceled) {
				continue
			}
			if err.Error() != lastErr {
				log.Warn("replica fetch failed", "err", err)
				lastErr = err.Error()
			}
			if !f.sleep(f.backoff()) {
				return
			}
			continue
		}
		lastErr = ""
		if !progressed {
			// Nothing to fetch (all partitions backing off, or none).
			select {
			case <-f.wake:
			case <-f.quit:
			case <-time.After(f.idleWait):
			}
		}
	}
}

func (f *fetcher) request(req kmsg.Request) (kmsg.Response, error) {
	return f.m.client.Request(f.ctx, f.leader, req)
}

// truncateDiverged truncates the partitions marked to (followState's
// truncate) before they fetch: a log without epochs to its high watermark,
// others by the leader's OffsetForLeaderEpoch answer for their latest
// epoch (Kafka's Truncating state).
func (f *fetcher) truncateDiverged() error {
	type pending struct {
		p      *Partition
		epoch  int32 // leader epoch the state was taken in
		latest int32 // our latest epoch
	}
	var todo []pending
	f.mu.Lock()
	for p, st := range f.parts {
		if !st.truncate || time.Now().Before(st.backoffTill) {
			continue
		}
		latest, ok := p.log.LatestEpoch()
		if !ok {
			// No epochs recorded (an empty log, or one written before
			// epochs were kept): the high watermark is all we can trust,
			// Kafka's fallback.
			if err := p.log.TruncateTo(p.log.HighWatermark()); err != nil {
				f.mu.Unlock()
				return fmt.Errorf("truncating %s-%d: %w", p.topic, p.index, err)
			}
			st.truncate = false
			continue
		}
		todo = append(todo, pending{p, st.leaderEpoch, latest})
	}
	f.mu.Unlock()
	if len(todo) == 0 {
		return nil
	}
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	req.ReplicaID = f.m.cfg.NodeID
	byTopic := map[string]int{}
	for _, t := range todo {
		i, ok := byTopic[t.p.topic]
		if !ok {
			i = len(req.Topics)
			byTopic[t.p.topic] = i
			rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
			rt.Topic = t.p.topic
			req.Topics = append(req.Topics, rt)
		}
		rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
		rp.Partition, rp.CurrentLeaderEpoch, rp.LeaderEpoch = t.p.index, t.epoch, t.latest
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
	}
	asked := time.Now()
	raw, err := f.request(req)
	if err != nil {
		return err
	}
	resp := raw.(*kmsg.OffsetForLeaderEpochResponse)
	took := time.Since(asked)
	answers := map[string]map[int32]kmsg.OffsetForLeaderEpochResponseTopicPartition{}
	for _, rt := range resp.Topics {
		m := answers[rt.Topic]
		if m == nil {
			m = map[int32]kmsg.OffsetForLeaderEpochResponseTopicPartition{}
			answers[rt.Topic] = m
		}
		for _, rp := range rt.Partitions {
			m[rp.Partition] = rp
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	// Truncations (each cuts segment files, and may write the recovery
	// point) run concurrently, as fetched data does (fetchOnce).
	var errMu sync.Mutex
	var errs []error
	var refused, truncated atomic.Int32
	var refusal atomic.Int32 // the first error code
	forEachParallel(indexes(len(todo)), applyWorkers, func(i int32) {
		t := todo[i]
		st := f.parts[t.p]
		if st == nil || st.leaderEpoch != t.epoch {
			return // unfollowed or moved on meanwhile
		}
		a, ok := answers[t.p.topic][t.p.index]
		if !ok {
			return
		}
		if a.ErrorCode != 0 {
			// The leader does not know its leadership yet (or lost it):
			// ask again after a pause.
			st.backoffTill = time.Now().Add(f.refusedBackoff(st, a.ErrorCode))
			refused.Add(1)
			refusal.CompareAndSwap(0, int32(a.ErrorCode))
			return
		}
		offset, done := truncationOffset(t.p, a.LeaderEpoch, a.EndOffset)
		if offset < t.p.log.LogEndOffset() {
			f.logTruncation(t.p, t.p.log.LogEndOffset(), offset, a.LeaderEpoch, a.EndOffset)
			truncated.Add(1)
			if err := t.p.log.TruncateTo(offset); err != nil {
				errMu.Lock()
				errs = append(errs, fmt.Errorf("truncating %s-%d: %w", t.p.topic, t.p.index, err))
				errMu.Unlock()
				return
			}
		}
		st.truncate = !done
	})
	// One line per round (rounds follow changes of leadership): when the
	// followers of a new leader could start fetching.
	f.m.logger.Info("replica fetcher: leader epoch end offsets", "leader", f.leader, "partitions", len(todo),
		"refused", refused.Load(), "error", kerr.ErrorForCode(int16(refusal.Load())), "truncated", truncated.Load(),
		"request_took", took)
	return errors.Join(errs...)
}

// truncationOffset is Kafka's AbstractFetcherThread.getOffsetTruncationState
// for the leader's answer (leaderEpoch, leaderEnd) to our latest epoch: the
// offset to truncate to and whether truncation is complete.
func truncationOffset(p *Partition, leaderEpoch int32, leaderEnd int64) (int64, bool) {
	leo := p.log.LogEndOffset()
	if leaderEnd < 0 {
		// The leader knows no epoch at or below ours.
		return min(p.log.HighWatermark(), leo), true
	}
	if leaderEpoch < 0 {
		return min(leaderEnd, leo), true
	}
	ourEpoch, ourEnd := p.log.EndOffsetForEpoch(leaderEpoch)
	switch {
	case ourEpoch == leaderEpoch:
		return min(leaderEnd, ourEnd), true
	case ourEpoch < 0:
		return min(leaderEnd, leo), true
	default:
		// We hold an older epoch only: cut back to its end and ask again
		// with it.
		return min(ourEnd, leo), false
	}
}

// fetchOnce sends one Fetch for the partitions ready to fetch, on the
// fetcher's session with the leader (fetchsession.go), and applies the
// response; progressed is false when there was nothing to ask for.
func (f *fetcher) fetchOnce() (progressed bool, err error) {
	m := f.m
	type sent struct {
		p     *Partition
		epoch int32
		at    int64
	}
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = m.cfg.NodeID
	req.ReplicaState.ID = m.cfg.NodeID
	req.ReplicaState.Epoch = m.meta.BrokerEpoch()
	req.MaxWaitMillis = m.cfg.FetchWaitMaxMs
	req.MinBytes = m.cfg.FetchMinBytes
	req.MaxBytes = m.cfg.FetchResponseMaxBytes
	partMax := m.cfg.FetchMaxBytes
	want := f.want[:0] // the previous round's array: session.build copies what it keeps
	sentBy := map[[16]byte]map[int32]sent{}
	now := time.Now()
	// Checked once per fetch, and only when a throttled partition is
	// behind (ReplicaFetcherThread.shouldFollowerThrottle).
	throttled, exceeded := false, false
	var retryAt time.Time // the earliest a partition backing off asks again
	f.mu.Lock()
	following := now.Sub(f.added) < followingWindow
	for p, st := range f.parts {
		if now.Before(st.backoffTill) && (retryAt.IsZero() || st.backoffTill.Before(retryAt)) {
			retryAt = st.backoffTill
		}
		if st.truncate || now.Before(st.backoffTill) {
			continue
		}
		if st.lag != 0 && p.followerThrottled.Load() {
			if !throttled {
				throttled, exceeded = true, m.followerQuota.Exceeded(p.now())
			}
			if exceeded {
				continue
			}
		}
		lastFetched, ok := p.log.LatestEpoch()
		if !ok {
			lastFetched = -1
		}
		w := wantPart{
			key: sessionPartKey{topic: p.topic, topicID: p.topicID, partition: p.index},
			data: sessionPartData{fetchOffset: p.log.LogEndOffset(), logStartOffset: p.log.LogStartOffset(),
				leaderEpoch: st.leaderEpoch, lastFetchedEpoch: lastFetched, maxBytes: partMax},
		}
		want = append(want, w)
		byPart := sentBy[p.topicID]
		if byPart == nil {
			byPart = map[int32]sent{}
			sentBy[p.topicID] = byPart
		}
		byPart[p.index] = sent{p, st.leaderEpoch, w.data.fetchOffset}
	}
	f.mu.Unlock()
	f.want = want
	if len(want) == 0 {
		f.idleWait = idlePoll
		if !retryAt.IsZero() {
			f.idleWait = min(idlePoll, max(time.Until(retryAt), time.Millisecond))
		}
		return false, nil
	}
	if following {
		req.MaxWaitMillis = min(req.MaxWaitMillis, int32(followingWait/time.Millisecond))
	}
	if !retryAt.IsZero() {
		// The leader holds a fetch with nothing new for up to
		// replica.fetch.wait.max.ms; partitions it refused for not
		// leading yet ask again before that (refusedBackoff).
		wait := int32(max(time.Until(retryAt), time.Millisecond) / time.Millisecond)
		req.MaxWaitMillis = min(req.MaxWaitMillis, wait)
	}
	f.session.build(req, want)
	ctx, returned := f.preemptParked(req, now)
	raw, err := f.m.client.Request(ctx, f.leader, req)
	if preempted := returned(); preempted && err != nil {
		f.session.failed() // the leader may have taken the request: a new session
		m.logger.Debug("replica fetch cancelled for added partitions", "leader", f.leader)
		return true, nil
	}
	if err != nil {
		f.session.failed()
		return true, err
	}
	resp := raw.(*kmsg.FetchResponse)
	f.session.answered(resp)
	if resp.ErrorCode != 0 {
		if isSessionError(resp.ErrorCode) {
			// The next fetch is full; no need to wait for it.
			m.logger.Debug("replica fetch session reset", "leader", f.leader, "err", kerr.ErrorForCode(resp.ErrorCode))
			return true, nil
		}
		return true, kerr.ErrorForCode(resp.ErrorCode)
	}
	type fetched struct {
		p  *Partition
		st *followState
		rp *kmsg.FetchResponseTopicPartition
	}
	var todo []fetched
	f.mu.Lock()
	defer f.mu.Unlock()
	for ti := range resp.Topics {
		rt := &resp.Topics[ti]
		id := rt.TopicID
		if id == ([16]byte{}) {
			if lt := m.TopicByName(rt.Topic); lt != nil {
				id = lt.id
			}
		}
		for pi := range rt.Partitions {
			rp := &rt.Partitions[pi]
			sn, ok := sentBy[id][rp.Partition]
			if !ok {
				continue
			}
			st := f.parts[sn.p]
			if st == nil || st.leaderEpoch != sn.epoch || sn.p.log.LogEndOffset() != sn.at {
				continue // unfollowed, new epoch or truncated meanwhile
			}
			todo = append(todo, fetched{sn.p, st, rp})
		}
	}
	// The partitions are independent, and an append may wait for its disk
	// (flush.messages, a truncation by a new leader's first batch):
	// concurrent fsyncs share the filesystem's commits. (A first batch of a
	// new leader epoch no longer fsyncs the leader-epoch checkpoint, which
	// one partition after another took tens of seconds after a failover:
	// storage/leader_epoch.go.)
	var firsts, refused, diverged atomic.Int32
	var firstWait atomic.Int64 // the longest, in nanoseconds
	var refusal atomic.Int32   // the first error code
	forEachParallel(indexes(len(todo)), applyWorkers, func(i int32) {
		t := todo[i]
		if t.rp.ErrorCode == 0 && t.rp.DivergingEpoch.Epoch >= 0 {
			// FetchResponse.isDivergingEpoch: no records, truncate
			// (the first fetch is still to come).
			diverged.Add(1)
			f.truncateOnFetch(t.p, t.st, t.rp.DivergingEpoch)
			return
		}
		if code := t.rp.ErrorCode; code != 0 && code != kerr.OffsetOutOfRange.Code {
			refused.Add(1)
			refusal.CompareAndSwap(0, int32(code))
		} else if !t.st.since.IsZero() {
			firsts.Add(1)
			w := int64(time.Since(t.st.since))
			for {
				cur := firstWait.Load()
				if w <= cur || firstWait.CompareAndSwap(cur, w) {
					break
				}
			}
			t.st.since = time.Time{}
		}
		f.applyFetched(t.p, t.st, t.rp)
	})
	if firsts.Load() > 0 || refused.Load() > 0 || diverged.Load() > 0 {
		// One line per round that started partitions of a new leader
		// epoch, was refused some (each then backs off) or truncated
		// some where the leader's log diverges.
		m.logger.Info("replica fetcher: round", "leader", f.leader, "partitions", len(todo),
			"first_fetches", firsts.Load(), "longest_since_follow", time.Duration(firstWait.Load()),
			"refused", refused.Load(), "error", kerr.ErrorForCode(int16(refusal.Load())),
			"diverging", diverged.Load())
	}
	return true, nil
}

// preemptParked returns the context to send req with, put together at
// built, and a func to call once it returned (always) that reports whether
// add cancelled it meanwhile. A fetch that may wait longer than followingWait
// at the leader is cancellable (see followingWait); if a partition was
// added since built, its wait is shortened instead.
func (f *fetcher) preemptParked(req *kmsg.FetchRequest, built time.Time) (context.Context, func() bool) {
	notPreempted := func() bool { return false }
	if time.Duration(req.MaxWaitMillis)*time.Millisecond <= followingWait {
		return f.ctx, notPreempted
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.added.After(built) {
		req.MaxWaitMillis = int32(followingWait / time.Millisecond)
		return f.ctx, notPreempted
	}
	ctx, cancel := context.WithCancel(f.ctx)
	f.parked, f.preempted = cancel, false
	return ctx, func() bool {
		f.mu.Lock()
		preempted := f.preempted
		f.parked, f.preempted = nil, false
		f.mu.Unlock()
		cancel()
		return preempted && f.ctx.Err() == nil
	}
}

// logTruncation logs a follower's truncation to the leader's log, after an
// OffsetForLeaderEpoch answer or a Fetch answer's diverging epoch alike.
func (f *fetcher) logTruncation(p *Partition, from, to int64, leaderEpoch int32, leaderEndOffset int64) {
	f.m.logger.Info("truncating follower log to the leader's", "topic", p.topic, "partition", p.index,
		"from", from, "to", to, "leader_epoch", leaderEpoch, "leader_end_offset", leaderEndOffset)
}

// truncateOnFetch truncates p where the leader's answer to its fetch says
// its log diverges (Kafka's truncateOnFetchResponse), under f.mu: by the
// rules for an OffsetForLeaderEpoch answer (truncationOffset). The next
// fetch asks from the new end with the new latest epoch; if the leader's
// epoch was unknown here, the log was cut to the end of an older one, and
// the leader checks that one in turn. The truncation runs even to the log
// end: it drops an epoch recorded there without records (a leadership
// that wrote nothing), which would diverge again. A truncation that changes
// nothing (a divergence below the log start offset, where this log keeps
// no epoch to compare) would be answered the same again: the partition
// pauses replica.fetch.backoff.ms, so it costs a request now and then.
func (f *fetcher) truncateOnFetch(p *Partition, st *followState, diverging kmsg.FetchResponseTopicPartitionDivergingEpoch) {
	offset, _ := truncationOffset(p, diverging.Epoch, diverging.EndOffset)
	leo := p.log.LogEndOffset()
	latest, _ := p.log.LatestEpoch()
	if offset < leo {
		f.logTruncation(p, leo, offset, diverging.Epoch, diverging.EndOffset)
	}
	if err := p.log.TruncateTo(offset); err != nil {
		f.m.logger.Error("truncating follower log", "topic", p.topic, "partition", p.index, "to", offset, "err", err)
		st.backoffTill = time.Now().Add(f.backoff())
		return
	}
	if after, _ := p.log.LatestEpoch(); after == latest && p.log.LogEndOffset() == leo {
		f.m.logger.Warn("follower log diverges from the leader's where truncation cannot reach it",
			"topic", p.topic, "partition", p.index, "log_end_offset", leo, "latest_epoch", latest,
			"log_start_offset", p.log.LogStartOffset(), "leader_epoch", diverging.Epoch, "leader_end_offset", diverging.EndOffset)
		st.backoffTill = time.Now().Add(f.backoff())
	}
}

// indexes is 0..n-1, for forEachParallel.
func indexes(n int) []int32 {
	out := make([]int32, n)
	for i := range out {
		out[i] = int32(i)
	}
	return out
}

// applyFetched appends one partition's fetched batches, under f.mu.
func (f *fetcher) applyFetched(p *Partition, st *followState, rp *kmsg.FetchResponseTopicPartition) {
	m := f.m
	switch rp.ErrorCode {
	case 0:
	case kerr.OffsetOutOfRange.Code:
		f.outOfRange(p, st)
		return
	default:
		// NOT_LEADER_OR_FOLLOWER, FENCED/UNKNOWN_LEADER_EPOCH, unknown
		// topic...: the metadata will move us on; pause this partition.
		st.backoffTill = time.Now().Add(f.refusedBackoff(st, rp.ErrorCode))
		m.logger.Debug("replica fetch partition error", "topic", p.topic, "partition", p.index,
			"leader", f.leader, "err", kerr.ErrorForCode(rp.ErrorCode))
		return
	}
	records := recordbatch.WholeBatches(rp.RecordBatches)
	if len(records) > 0 {
		if _, err := p.log.AppendAsFollower(records); err != nil {
			m.logger.Error("appending fetched records", "topic", p.topic, "partition", p.index,
				"offset", p.log.LogEndOffset(), "err", err)
			st.backoffTill = time.Now().Add(f.backoff())
			return
		}
		if p.followerThrottled.Load() {
			m.followerQuota.Record(int64(len(records)), p.now())
		}
	}
	if rp.HighWatermark >= 0 {
		if len(records) > 0 || st.lag < 0 {
			st.lag = max(0, rp.HighWatermark-p.log.LogEndOffset())
		}
		before := p.log.HighWatermark()
		p.log.UpdateHighWatermark(min(rp.HighWatermark, p.log.LogEndOffset()))
		if p.log.HighWatermark() != before {
			// Consumers fetching from this follower (KIP-392) read up to
			// its high watermark: a parked one may now complete, as
			// Kafka's fetcher completes delayed fetches on a new high
			// watermark.
			p.wakeFetchWaiters()
		}
	}
	// DeleteRecordsBefore refuses offsets above the high watermark: it
	// moves first.
	if start := min(rp.LogStartOffset, p.log.HighWatermark()); start > p.log.LogStartOffset() {
		if _, err := p.log.DeleteRecordsBefore(start); err != nil {
			m.logger.Warn("following the leader's log start offset", "topic", p.topic, "partition", p.index, "err", err)
		}
	}
}

// outOfRange handles OFFSET_OUT_OF_RANGE: below the leader's log start
// offset the log starts afresh there; above its end (it truncated further
// than we did) we truncate by epoch again.
func (f *fetcher) outOfRange(p *Partition, st *followState) {
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = f.m.cfg.NodeID
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = p.topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.CurrentLeaderEpoch, rp.Timestamp = p.index, st.leaderEpoch, -2
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	raw, err := f.request(req)
	if err != nil {
		st.backoffTill = time.Now().Add(f.backoff())
		return
	}
	resp := raw.(*kmsg.ListOffsetsResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		st.backoffTill = time.Now().Add(f.backoff())
		return
	}
	start := resp.Topics[0].Partitions[0].Offset
	if p.log.LogEndOffset() < start {
		f.m.logger.Info("follower log is below the leader's log start offset; starting afresh",
			"topic", p.topic, "partition", p.index, "log_end_offset", p.log.LogEndOffset(), "leader_log_start_offset", start)
		if err := p.log.TruncateFullyAndStartAt(start); err != nil {
			f.m.logger.Error("restarting follower log", "topic", p.topic, "partition", p.index, "err", err)
			st.backoffTill = time.Now().Add(f.backoff())
		}
		return
	}
	st.truncate = true
}
