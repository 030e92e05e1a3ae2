package replication

// The leader's side of replication (Kafka's Partition).
//
// A partition this broker leads tracks each follower's log end offset, which
// a follower reports as the fetch offset of its Fetch (replica id set); the
// high watermark is the smallest log end offset among the leader and the
// in-sync followers that are caught up (a member silent for longer than
// replica.lag.time.max.ms no longer holds it back, as in Kafka), and never
// moves backwards while the leadership lasts, nor while the ISR is smaller
// than min.insync.replicas (KIP-966). Produce with acks=all waits in
// ackWaiters until the high watermark passes its records; min.insync.replicas
// refuses it before the append when the ISR is too small
// (NOT_ENOUGH_REPLICAS), and after it when the ISR shrank meanwhile
// (NOT_ENOUGH_REPLICAS_AFTER_APPEND).
//
// ISR changes are asked of the ISRWriter (AlterPartition as an etcd
// compare-and-swap, controller/alter_partition.go) and take effect when the
// new partition state comes back through the metadata: a follower joins
// once its log end offset reaches the high watermark and the start of the
// current leader epoch; a member leaves once it has not caught up to the
// leader's log end offset for replica.lag.time.max.ms (the maintenance loop
// checks every second).
//
// The follower's side is in fetcher.go.

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/strait/strait/controller"
)

type replicaRole int8

const (
	roleNone replicaRole = iota
	roleLeader
	roleFollower
)

// replicaState is one partition's replication state on this broker, guarded
// by mu.
type replicaState struct {
	mu    sync.Mutex
	role  replicaRole
	epoch int32 // the leader epoch the role was taken in
	// Leader only.
	epochStartOffset int64 // log end offset when this leadership began
	followers        map[int32]*followerState
	ackWaiters       map[*AckWaiter]struct{}
	// isrProposal is the partition epoch an AlterPartition in flight was
	// based on, -1 when none: one change at a time, as Kafka's
	// PendingShrinkIsr/PendingExpandIsr states.
	isrProposal int32
	// isrJoining is the follower an expansion in flight adds (nil: none).
	// It holds the high watermark back from the proposal on, as Kafka's
	// maximal ISR counts a pending addition: the controller may elect it
	// as soon as the ISR with it is committed, so it must hold every
	// record below the high watermark by then.
	isrJoining []int32
	// minISR is the topic's min.insync.replicas.
	minISR int32
}

// followerState is what the leader knows of one follower (Kafka's Replica).
type followerState struct {
	leo                int64 // -1 until its first fetch in this leadership
	logStart           int64 // its log start offset, -1 until its first fetch
	brokerEpoch        int64
	lastCaughtUp       time.Time
	lastFetch          time.Time
	lastFetchLeaderLEO int64
}

func newFollowerState() *followerState {
	return &followerState{leo: -1, logStart: -1, lastFetchLeaderLEO: -1}
}

// AckWaiter is a parked acks=all produce to one partition: Done delivers
// its error code (0: replicated) once the high watermark reaches the
// offset it waits for, or the leadership ends.
type AckWaiter struct {
	required int64
	done     chan int16
}

// Done delivers the waiter's error code, once.
func (w *AckWaiter) Done() <-chan int16 { return w.done }

func (w *AckWaiter) complete(code int16) {
	select {
	case w.done <- code:
	default:
	}
}

// becomeLeader starts a leadership at pi's epoch: the epoch begins at the
// log end offset, every follower's position is unknown until it fetches,
// and in-sync followers count as caught up from now so that they are not
// dropped before they could fetch. The epoch goes to the log's leader
// epoch cache in memory: its checkpoint file is written when the recovery
// point next moves (storage/leader_epoch.go), so a survivor taking over
// thousands of partitions makes no fsync per partition here, where Kafka's
// Partition.makeLeader fsyncs the file and its directory.
func (p *Partition) becomeLeader(pi *controller.PartitionInfo) {
	m := p.m
	now := p.now()
	r := &p.repl
	r.mu.Lock()
	leo := p.log.LogEndOffset()
	if err := p.log.AssignEpochStartOffset(pi.LeaderEpoch, leo); err != nil {
		m.logger.Error("recording leader epoch", "topic", p.topic, "partition", p.index, "epoch", pi.LeaderEpoch, "err", err)
	}
	r.role, r.epoch, r.epochStartOffset, r.isrProposal, r.isrJoining = roleLeader, pi.LeaderEpoch, leo, -1, nil
	r.followers = make(map[int32]*followerState, len(pi.Replicas))
	for _, id := range pi.Replicas {
		if id == m.cfg.NodeID {
			continue
		}
		fs := newFollowerState()
		if slices.Contains(pi.ISR, id) {
			fs.lastCaughtUp = now
		}
		r.followers[id] = fs
	}
	r.mu.Unlock()
	m.logger.Info("became leader", "topic", p.topic, "partition", p.index, "leader_epoch", pi.LeaderEpoch,
		"isr", pi.ISR, "log_end_offset", leo, "high_watermark", p.log.HighWatermark())
	p.advanceHighWatermark()
}

// leaderStateChanged applies a new partition state within the same
// leadership (ISR or replica set changed).
func (p *Partition) leaderStateChanged(pi *controller.PartitionInfo) {
	r := &p.repl
	r.mu.Lock()
	for _, id := range pi.Replicas {
		if id != p.m.cfg.NodeID && r.followers[id] == nil {
			r.followers[id] = newFollowerState()
		}
	}
	for id := range r.followers {
		if !slices.Contains(pi.Replicas, id) {
			delete(r.followers, id)
		}
	}
	if r.isrProposal >= 0 && pi.PartitionEpoch != r.isrProposal {
		r.isrProposal, r.isrJoining = -1, nil
	}
	r.mu.Unlock()
	// A smaller ISR may let the high watermark move.
	p.advanceHighWatermark()
}

// resignLeadership ends a leadership (the partition now follows, or is
// gone): parked acks=all produces answer NOT_LEADER_OR_FOLLOWER, as Kafka's
// purgatory does when the leader changes.
func (p *Partition) resignLeadership(role replicaRole, epoch int32) {
	r := &p.repl
	r.mu.Lock()
	r.role, r.epoch = role, epoch
	r.followers = nil
	waiters := r.ackWaiters
	r.ackWaiters = nil
	r.mu.Unlock()
	for w := range waiters {
		w.complete(kerr.NotLeaderForPartition.Code)
	}
}

// Appended makes an append by this broker as leader visible: the high
// watermark moves if no follower holds it back, parked fetches (followers'
// and consumers') wake, and satisfied acks=all produces complete.
func (p *Partition) Appended() {
	p.AppendedNoWake()
	p.WakeFetches()
}

// AppendedNoWake is Appended but for waking the parked fetches, which the
// caller does with WakeFetches once it has appended every partition of its
// request. A fetch woken by the first of several appends of one request
// would only run once the appending goroutine blocks (Go runs a goroutine it
// readies next on the same core), after the other appends anyway, or, taken
// by another core meanwhile, answer with the first partition's records and
// leave the rest for the consumer's next round trip.
func (p *Partition) AppendedNoWake() {
	st := p.state.Load()
	if st == nil || len(st.Replicas) <= 1 {
		// One replica: the high watermark is the log end offset.
		p.log.UpdateHighWatermark(p.log.LogEndOffset())
		p.completeAckWaiters()
		return
	}
	p.advanceHighWatermark()
}

// WakeFetches signals the fetches parked on p (see AppendedNoWake) and
// returns how many were not signalled already.
func (p *Partition) WakeFetches() int { return p.wakeFetchWaiters() }

// advanceHighWatermark recomputes a leader's high watermark from its
// in-sync followers and completes the acks=all produces it satisfies. It
// returns whether the high watermark moved. Every member of the committed
// ISR holds it back, lagging or not (Kafka's maximal ISR): a follower stops
// counting only once the ISR without it is committed, which a leader cut off
// from etcd cannot do, so it cannot acknowledge alone; a follower being
// added counts from the proposal on, before the ISR with it is committed.
func (p *Partition) advanceHighWatermark() bool {
	m := p.m
	st := p.state.Load()
	if st == nil || st.Leader != m.cfg.NodeID {
		return false
	}
	r := &p.repl
	r.mu.Lock()
	if r.role != roleLeader {
		r.mu.Unlock()
		return false
	}
	// Under min ISR the high watermark stays (Kafka 4's
	// maybeIncrementLeaderHW, KIP-966): the replicas that left the ISR
	// meanwhile are eligible leaders (ELR) only because they hold every
	// record below it.
	if int32(len(st.ISR)) < min(r.minISR, int32(len(st.Replicas))) {
		r.mu.Unlock()
		return false
	}
	hw := p.log.LogEndOffset()
	for _, id := range slices.Concat(st.ISR, r.isrJoining) {
		if id == m.cfg.NodeID {
			continue
		}
		fs := r.followers[id]
		if fs == nil {
			continue // not a replica (the ISR is a subset of the replicas)
		}
		hw = min(hw, fs.leo)
	}
	moved := hw > p.log.HighWatermark()
	if moved {
		p.log.UpdateHighWatermark(hw)
	}
	r.mu.Unlock()
	if moved {
		p.wakeFetchWaiters()
		p.completeAckWaiters()
	}
	return moved
}

// completeAckWaiters answers the acks=all produces the high watermark has
// passed (Kafka's checkEnoughReplicasReachOffset).
func (p *Partition) completeAckWaiters() {
	r := &p.repl
	hw := p.log.HighWatermark()
	r.mu.Lock()
	if len(r.ackWaiters) == 0 {
		r.mu.Unlock()
		return
	}
	st := p.state.Load()
	code := int16(0)
	if st != nil && int32(len(st.ISR)) < r.minISR {
		code = kerr.NotEnoughReplicasAfterAppend.Code
	}
	for w := range r.ackWaiters {
		if w.required <= hw {
			delete(r.ackWaiters, w)
			w.complete(code)
		}
	}
	r.mu.Unlock()
}

// AwaitAcks parks an acks=all produce until the high watermark reaches
// required; nil when it has already (the caller answers at once). A waiter
// not completed must be dropped with DropAckWaiter.
func (p *Partition) AwaitAcks(required int64) *AckWaiter {
	if p.log.HighWatermark() >= required {
		return nil
	}
	w := &AckWaiter{required: required, done: make(chan int16, 1)}
	r := &p.repl
	r.mu.Lock()
	if r.role != roleLeader {
		r.mu.Unlock()
		w.complete(kerr.NotLeaderForPartition.Code)
		return w
	}
	if r.ackWaiters == nil {
		r.ackWaiters = make(map[*AckWaiter]struct{})
	}
	r.ackWaiters[w] = struct{}{}
	r.mu.Unlock()
	// The high watermark may have passed between the check and the
	// registration.
	p.completeAckWaiters()
	return w
}

// DropAckWaiter forgets a waiter that timed out or whose request is gone.
func (p *Partition) DropAckWaiter(w *AckWaiter) {
	p.repl.mu.Lock()
	delete(p.repl.ackWaiters, w)
	p.repl.mu.Unlock()
}

// WaitReplicated blocks until the high watermark reaches required (an
// internal-topic append by a coordinator, which Kafka makes with acks=all),
// the timeout passes (REQUEST_TIMED_OUT), leadership is lost or cancel is
// closed (NOT_LEADER_OR_FOLLOWER).
func (p *Partition) WaitReplicated(required int64, timeout time.Duration, cancel <-chan struct{}) error {
	w := p.AwaitAcks(required)
	if w == nil {
		return nil
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case code := <-w.done:
		if code != 0 {
			return kerr.ErrorForCode(code)
		}
		return nil
	case <-t.C:
		p.DropAckWaiter(w)
		return kerr.RequestTimedOut
	case <-cancel:
		p.DropAckWaiter(w)
		return kerr.NotLeaderForPartition
	}
}

// NotEnoughReplicas reports whether an acks=all produce must be refused
// before the append: the ISR is smaller than min.insync.replicas.
func (p *Partition) NotEnoughReplicas() bool {
	st := p.state.Load()
	return st != nil && int32(len(st.ISR)) < p.MinISR()
}

// MinISR is the topic's min.insync.replicas.
func (p *Partition) MinISR() int32 {
	p.repl.mu.Lock()
	defer p.repl.mu.Unlock()
	return p.repl.minISR
}

// FollowerFetched records a follower's fetch at fetchOffset (its log end
// offset), with its log start offset, on a partition this broker leads, as Kafka's
// updateFollowerFetchState, then lets the ISR grow and the high watermark
// move. It returns false when the fetching broker is not a replica of the
// partition.
func (p *Partition) FollowerFetched(replica int32, brokerEpoch, fetchOffset, logStartOffset int64) bool {
	now := p.now()
	r := &p.repl
	r.mu.Lock()
	fs := r.followers[replica]
	if r.role != roleLeader || fs == nil {
		r.mu.Unlock()
		return false
	}
	leaderLEO := p.log.LogEndOffset()
	switch {
	case fetchOffset >= leaderLEO:
		fs.lastCaughtUp = later(fs.lastCaughtUp, now)
	case fetchOffset >= fs.lastFetchLeaderLEO && fs.lastFetchLeaderLEO >= 0:
		fs.lastCaughtUp = later(fs.lastCaughtUp, fs.lastFetch)
	}
	fs.lastFetchLeaderLEO, fs.lastFetch = leaderLEO, now
	fs.leo, fs.logStart, fs.brokerEpoch = fetchOffset, logStartOffset, brokerEpoch
	r.mu.Unlock()
	p.maybeExpandISR(replica)
	p.advanceHighWatermark()
	return true
}

// HasFollower reports whether this broker leads p and replica is one of
// its followers: FollowerFetched's check, without recording a position
// (a follower whose log diverges from the leader's has none here yet).
func (p *Partition) HasFollower(replica int32) bool {
	r := &p.repl
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.role == roleLeader && r.followers[replica] != nil
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// maybeExpandISR asks for a follower that has caught up to join the ISR:
// its log end offset is at the high watermark and past the start of this
// leader epoch (Kafka's isFollowerInSync).
func (p *Partition) maybeExpandISR(replica int32) {
	st := p.state.Load()
	if st == nil || slices.Contains(st.ISR, replica) {
		return
	}
	r := &p.repl
	r.mu.Lock()
	fs := r.followers[replica]
	ok := r.role == roleLeader && fs != nil && r.isrProposal < 0 &&
		fs.leo >= p.log.HighWatermark() && fs.leo >= r.epochStartOffset
	if ok {
		r.isrProposal, r.isrJoining = st.PartitionEpoch, []int32{replica}
	}
	r.mu.Unlock()
	if !ok {
		return
	}
	newISR := append(slices.Clone(st.ISR), replica)
	p.proposeISR(st, newISR, "follower caught up", replica)
}

// maybeShrinkISR drops the in-sync followers that have not caught up for
// replica.lag.time.max.ms (Kafka's maybeShrinkIsr). It returns when it
// should look again (false: only after a change of role or state): the
// first time an in-sync follower could be out, were nothing to change, or
// the next pass while a change is in flight.
func (p *Partition) maybeShrinkISR(now time.Time) (time.Time, bool) {
	m := p.m
	st := p.state.Load()
	if st == nil || st.Leader != m.cfg.NodeID || len(st.ISR) <= 1 {
		return time.Time{}, false
	}
	r := &p.repl
	r.mu.Lock()
	if r.role != roleLeader {
		r.mu.Unlock()
		return time.Time{}, false
	}
	if r.isrProposal >= 0 {
		r.mu.Unlock()
		return now, true
	}
	var out []int32
	var next time.Time
	for _, id := range st.ISR {
		if id == m.cfg.NodeID {
			continue
		}
		fs := r.followers[id]
		if fs == nil || now.Sub(fs.lastCaughtUp) > m.cfg.ReplicaLagTimeMax {
			out = append(out, id)
			continue
		}
		// Out once now - lastCaughtUp > the lag; lastCaughtUp only moves
		// forward, so this is the earliest.
		if at := fs.lastCaughtUp.Add(m.cfg.ReplicaLagTimeMax + 1); next.IsZero() || at.Before(next) {
			next = at
		}
	}
	if len(out) > 0 {
		r.isrProposal = st.PartitionEpoch
	}
	r.mu.Unlock()
	if len(out) == 0 {
		return next, !next.IsZero()
	}
	newISR := slices.DeleteFunc(slices.Clone(st.ISR), func(id int32) bool { return slices.Contains(out, id) })
	p.proposeISR(st, newISR, "followers out of sync", out...)
	return now, true
}

// proposeISR sends the AlterPartition on a goroutine of the Manager's; the
// change applies when the metadata delivers it (leaderStateChanged clears
// the proposal), a failure clears it for the next attempt. After Close
// began nothing is sent.
func (p *Partition) proposeISR(st *controller.PartitionInfo, newISR []int32, why string, changed ...int32) {
	m := p.m
	members := make([]controller.ISRMember, 0, len(newISR))
	p.repl.mu.Lock()
	for _, id := range newISR {
		epoch := int64(-1)
		if fs := p.repl.followers[id]; fs != nil && fs.brokerEpoch > 0 {
			epoch = fs.brokerEpoch
		}
		members = append(members, controller.ISRMember{BrokerID: id, BrokerEpoch: epoch})
	}
	p.repl.mu.Unlock()
	req := controller.AlterPartitionRequest{
		Topic: p.topic, TopicID: p.topicID, Partition: p.index,
		LeaderEpoch: st.LeaderEpoch, PartitionEpoch: st.PartitionEpoch, NewISR: members,
	}
	abandon := func() {
		p.repl.mu.Lock()
		if p.repl.isrProposal == st.PartitionEpoch {
			p.repl.isrProposal, p.repl.isrJoining = -1, nil
		}
		p.repl.mu.Unlock()
	}
	started := m.tasks.Go(func() {
		ctx, cancel := context.WithTimeout(m.stopCtx, 10*time.Second)
		defer cancel()
		got, err := m.isr.AlterPartitionISR(ctx, req)
		if err != nil {
			abandon()
			m.logger.Warn("ISR change refused", "topic", p.topic, "partition", p.index, "reason", why,
				"proposed_isr", newISR, "err", err)
			return
		}
		if len(got.ISR) < len(st.ISR) {
			m.isrShrinks.Add(1)
		} else {
			m.isrExpands.Add(1)
		}
		m.logger.Info("ISR changed", "topic", p.topic, "partition", p.index, "reason", why, "replicas", changed,
			"isr", got.ISR, "partition_epoch", got.PartitionEpoch)
	})
	if !started {
		abandon()
	}
}
