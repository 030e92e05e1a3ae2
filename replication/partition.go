package replication

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/strait/strait/controller"
	"github.com/strait/strait/storage"
)

// Partition is one partition hosted on this broker (Kafka's Partition): its
// log, its state from the metadata, its replication state (leader.go) and
// the fetches parked until it grows.
//
// Thread-safety: safe for concurrent use. topic, topicID, index and log are
// fixed at creation; state is swapped atomically by the Manager's metadata
// application; repl is guarded by repl.mu, the parked fetches by waitMu (a
// leaf lock). The request path takes only these per-partition locks.
type Partition struct {
	m       *Manager
	topic   string
	topicID [16]byte
	index   int32
	log     *storage.Log
	state   atomic.Pointer[controller.PartitionInfo]
	// stopped: the replica no longer serves from this object (moved to
	// another log dir, or its dir failed; logdirs.go). Its log is closed.
	stopped atomic.Bool

	waitMu  sync.Mutex
	waiters map[*FetchWaiter]struct{}

	// leaderThrottled and followerThrottled: the topic's
	// leader/follower.replication.throttled.replicas name this broker's
	// replica of the partition (throttle.go).
	leaderThrottled, followerThrottled atomic.Bool

	repl replicaState

	// The partition's place in the maintenance schedule (schedule.go):
	// sched guarded by Manager.sched.mu, pending set while it is on the
	// changed list, visited owned by the maintenance loop.
	sched   [numQueues]slot
	pending atomic.Bool
	visited uint64
}

// Topic is the partition's topic name.
func (p *Partition) Topic() string { return p.topic }

// TopicID is the partition's topic id.
func (p *Partition) TopicID() [16]byte { return p.topicID }

// Index is the partition number.
func (p *Partition) Index() int32 { return p.index }

// Log is the partition's log.
func (p *Partition) Log() *storage.Log { return p.log }

// State is the partition's state from the metadata (read-only), nil before
// the first.
func (p *Partition) State() *controller.PartitionInfo { return p.state.Load() }

// IsLeader reports whether this broker leads the partition, by the
// metadata, and this replica serves (not stopped by a log dir move or
// failure).
func (p *Partition) IsLeader() bool {
	st := p.state.Load()
	return st != nil && st.Leader == p.m.cfg.NodeID && !p.stopped.Load()
}

// LeaderEpoch is the partition's leader epoch by the metadata, -1 before
// the first state.
func (p *Partition) LeaderEpoch() int32 {
	if st := p.state.Load(); st != nil {
		return st.LeaderEpoch
	}
	return -1
}

// FetchWaiter is a parked Fetch: Wake is signalled (never blocking) when any
// partition it waits on is appended to or stops being served here.
type FetchWaiter struct{ wake chan struct{} }

// NewFetchWaiter returns a waiter to register with AddFetchWaiter.
func NewFetchWaiter() *FetchWaiter { return &FetchWaiter{wake: make(chan struct{}, 1)} }

// Wake receives once after each append (coalesced).
func (w *FetchWaiter) Wake() <-chan struct{} { return w.wake }

// AddFetchWaiter parks w on p until RemoveFetchWaiter.
func (p *Partition) AddFetchWaiter(w *FetchWaiter) {
	p.waitMu.Lock()
	if p.waiters == nil {
		p.waiters = make(map[*FetchWaiter]struct{})
	}
	p.waiters[w] = struct{}{}
	p.waitMu.Unlock()
}

// RemoveFetchWaiter unparks w.
func (p *Partition) RemoveFetchWaiter(w *FetchWaiter) {
	p.waitMu.Lock()
	delete(p.waiters, w)
	p.waitMu.Unlock()
}

// wakeFetchWaiters signals every parked fetch after an append and returns
// how many it signalled (a waiter already signalled is not counted).
func (p *Partition) wakeFetchWaiters() int {
	n := 0
	p.waitMu.Lock()
	for w := range p.waiters {
		select {
		case w.wake <- struct{}{}:
			n++
		default:
		}
	}
	p.waitMu.Unlock()
	return n
}

func (p *Partition) now() time.Time { return p.m.now() }

// newPartition wraps an opened log as a Partition of this Manager's, on
// the maintenance schedule from now on (its log's changes list it).
func (m *Manager) newPartition(topic string, id [16]byte, idx int32, l *storage.Log) *Partition {
	p := &Partition{m: m, topic: topic, topicID: id, index: idx, log: l}
	l.SetChangeHook(p.noteChanged)
	p.noteChanged()
	return p
}

// partSettings is what a Partition holds from its topic's configuration
// besides its log's: min.insync.replicas and the replication throttles.
type partSettings struct {
	minISR                             int32
	leaderThrottled, followerThrottled bool
}

// settings is p's, to carry to the Partition of a reopened log.
func (p *Partition) settings() partSettings {
	p.repl.mu.Lock()
	defer p.repl.mu.Unlock()
	return partSettings{minISR: p.repl.minISR,
		leaderThrottled: p.leaderThrottled.Load(), followerThrottled: p.followerThrottled.Load()}
}

// start gives p its settings and, with a state (pi not nil), moves it to
// the role pi gives this broker: for a Partition opened or changed by the
// metadata (apply.go) and for the one of a log reopened elsewhere
// (logdirmove.go) alike.
func (m *Manager) start(p *Partition, s partSettings, pi *controller.PartitionInfo) {
	p.repl.mu.Lock()
	p.repl.minISR = s.minISR
	p.repl.mu.Unlock()
	p.leaderThrottled.Store(s.leaderThrottled)
	p.followerThrottled.Store(s.followerThrottled)
	if pi == nil {
		return
	}
	p.state.Store(pi)
	m.transition(p, pi)
}
