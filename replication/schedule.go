package replication

import (
	"container/heap"
	"math"
	"sync"
	"time"
)

// The maintenance schedule: which partitions the maintenance loop visits,
// so that its cost follows what changes rather than how many partitions
// are hosted (an idle partition costs nothing per pass).
//
// A partition is visited when its log reports a change (an append, a
// truncation, a high watermark or log start offset move, a cleaning, a
// config change, closing: storage.Log.SetChangeHook), when its role or
// state changes (transition), or when one of its deadlines comes. Each
// visit computes the deadlines again from the log's state, so that a
// deadline is always the earliest time at which the periodic check would
// act; the checks themselves are unchanged, which keeps their semantics:
//
//   - tick: flush.ms, releasing the idle active segment's descriptor and
//     the ISR shrink (replica.lag.time.max.ms after a follower was last
//     caught up), by the broker's clock (Manager.now) as the checks read
//     it; looked at every MaintenanceInterval. A follower's last
//     caught-up time only moves forward, so a deadline only moves later
//     between two visits.
//   - retention and producer expiry: by the wall clock in Unix
//     milliseconds, as DeleteOldSegments and ExpireProducers compare, and
//     looked at only every log.retention.check.interval.ms and
//     producer.id.expiration.check.interval.ms (monotonic). A changed
//     partition is checked at the next of those passes (as the scan
//     would), which computes its exact deadline for the ones after.
//
// A clock jump forward makes deadlines due at once, as the scan saw them;
// one back delays them exactly as long as the scan's comparisons would.
// No timer or goroutine per partition: three heaps and a list.

// queue names one of the schedule's heaps.
type queue int

const (
	qTick queue = iota
	qRetention
	qExpiry
	numQueues
)

// slot is a partition's place in one heap: pos is its index plus one (0:
// not in the heap), due its deadline (nanoseconds of Manager.now for
// qTick, Unix milliseconds otherwise).
type slot struct {
	pos int
	due int64
}

// schedule holds the heaps and the changed list; mu is taken after any
// log's locks (the change hook runs under them), so nothing calls a log
// while holding it.
type schedule struct {
	mu      sync.Mutex
	heaps   [numQueues]partHeap
	changed []*Partition
}

func (s *schedule) init() {
	for q := range s.heaps {
		s.heaps[q].q = queue(q)
	}
}

// partHeap is a min-heap of partitions by their slot's due in queue q.
type partHeap struct {
	q  queue
	ps []*Partition
}

func (h *partHeap) Len() int { return len(h.ps) }
func (h *partHeap) Less(i, j int) bool {
	return h.ps[i].sched[h.q].due < h.ps[j].sched[h.q].due
}
func (h *partHeap) Swap(i, j int) {
	h.ps[i], h.ps[j] = h.ps[j], h.ps[i]
	h.ps[i].sched[h.q].pos = i + 1
	h.ps[j].sched[h.q].pos = j + 1
}
func (h *partHeap) Push(x any) {
	p := x.(*Partition)
	h.ps = append(h.ps, p)
	p.sched[h.q].pos = len(h.ps)
}
func (h *partHeap) Pop() any {
	n := len(h.ps) - 1
	p := h.ps[n]
	h.ps[n] = nil
	h.ps = h.ps[:n]
	p.sched[h.q].pos = 0
	return p
}

// setLocked puts p in queue q at due (ok) or takes it out (!ok).
func (s *schedule) setLocked(p *Partition, q queue, due int64, ok bool) {
	h, sl := &s.heaps[q], &p.sched[q]
	switch {
	case !ok && sl.pos > 0:
		heap.Remove(h, sl.pos-1)
	case !ok:
	case sl.pos > 0:
		sl.due = due
		heap.Fix(h, sl.pos-1)
	default:
		sl.due = due
		heap.Push(h, p)
	}
}

func (s *schedule) set(p *Partition, q queue, due int64, ok bool) {
	s.mu.Lock()
	s.setLocked(p, q, due, ok)
	s.mu.Unlock()
}

// checkSoon makes p due at the next pass of the retention and expiry
// queues.
func (s *schedule) checkSoon(p *Partition) {
	s.mu.Lock()
	s.setLocked(p, qRetention, math.MinInt64, true)
	s.setLocked(p, qExpiry, math.MinInt64, true)
	s.mu.Unlock()
}

// remove takes p out of every queue (its log is closed).
func (s *schedule) remove(p *Partition) {
	s.mu.Lock()
	for q := range numQueues {
		s.setLocked(p, q, 0, false)
	}
	s.mu.Unlock()
}

// popDue takes the partitions due by now out of queue q, appended to out.
func (s *schedule) popDue(q queue, now int64, out []*Partition) []*Partition {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := &s.heaps[q]
	for len(h.ps) > 0 && h.ps[0].sched[q].due <= now {
		out = append(out, heap.Pop(h).(*Partition))
	}
	return out
}

// takeChanged returns the partitions changed since the last call, their
// pending marks cleared first, so that a change made while they are
// visited lists them again.
func (s *schedule) takeChanged(out []*Partition) []*Partition {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.changed {
		p.pending.Store(false)
	}
	out = append(out, s.changed...)
	clear(s.changed)
	s.changed = s.changed[:0]
	return out
}

// scheduled is how many partitions queue q holds (tests).
func (s *schedule) scheduled(q queue) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.heaps[q].ps)
}

// noteChanged lists p for the next maintenance pass; cheap when it is
// listed already (it runs on every append).
func (p *Partition) noteChanged() {
	if p.pending.Load() || !p.pending.CompareAndSwap(false, true) {
		return
	}
	s := &p.m.sched
	s.mu.Lock()
	s.changed = append(s.changed, p)
	s.mu.Unlock()
}

// passState is the maintenance loop's own: buffers reused from pass to
// pass and the pass counter that keeps a partition from being visited
// twice in one pass.
type passState struct {
	n          uint64
	buf, due   []*Partition
	retention  periodic
	expiry     periodic
	lastVisits int // partitions visited by the last pass (tests, benchmarks)
}

// maintenancePass runs one pass at now (Manager.now) and mono (the
// monotonic clock, which decides whether retention and producer expiry
// are checked in this pass).
func (m *Manager) maintenancePass(ps *passState, mono, now time.Time) {
	ps.n++
	ps.lastVisits = 0
	ps.buf = m.sched.takeChanged(ps.buf[:0])
	for i, p := range ps.buf {
		ps.buf[i] = nil
		if m.stopping() {
			return // closing a log flushes it
		}
		if m.visit(ps, p, now) {
			m.sched.checkSoon(p)
		}
	}
	ps.due = m.sched.popDue(qTick, now.UnixNano(), ps.due[:0])
	for i, p := range ps.due {
		ps.due[i] = nil
		if m.stopping() {
			return
		}
		m.visit(ps, p, now)
	}
	nowMs := now.UnixMilli()
	if ps.retention.due(mono) {
		ps.due = m.sched.popDue(qRetention, nowMs, ps.due[:0])
		for i, p := range ps.due {
			ps.due[i] = nil
			if m.stopping() {
				return
			}
			m.retain(p, now)
			if ms, ok := p.log.NextRetention(); ok {
				m.sched.set(p, qRetention, ms, true)
			}
		}
	}
	if ps.expiry.due(mono) {
		ps.due = m.sched.popDue(qExpiry, nowMs, ps.due[:0])
		for i, p := range ps.due {
			ps.due[i] = nil
			if m.stopping() {
				return
			}
			p.log.ExpireProducers(now)
			if ms, ok := p.log.NextProducerExpiry(); ok {
				m.sched.set(p, qExpiry, ms, true)
			}
		}
	}
}

// visit runs p's tick work (flush.ms, idle active segment, ISR shrink)
// and schedules its next tick deadline. It reports false when p's log is
// closed: p then leaves the schedule.
func (m *Manager) visit(ps *passState, p *Partition, now time.Time) bool {
	if p.visited == ps.n {
		return true
	}
	p.visited = ps.n
	if p.log.Closed() {
		m.sched.remove(p)
		return false
	}
	ps.lastVisits++
	if err := p.log.MaybeFlush(now); err != nil {
		m.logger.Error("flushing log", "topic", p.topic, "partition", p.index, "err", err)
	}
	next, ok := int64(math.MaxInt64), false
	if t, due := p.log.NextFlush(); due {
		next, ok = min(next, t.UnixNano()), true
	}
	if t, due := p.log.ReleaseIdleActive(now, activeSegmentIdle); due {
		next, ok = min(next, t.UnixNano()), true
	}
	if t, due := p.maybeShrinkISR(now); due {
		next, ok = min(next, t.UnixNano()), true
	}
	m.sched.set(p, qTick, next, ok)
	return true
}

// retain applies retention to p (log.retention.check.interval.ms).
func (m *Manager) retain(p *Partition, now time.Time) {
	n, err := p.log.DeleteOldSegments(now)
	switch {
	case err != nil && p.log.Closed():
	case err != nil:
		m.logger.Error("retention", "topic", p.topic, "partition", p.index, "err", err)
	case n > 0:
		m.logger.Info("deleted segments by retention", "topic", p.topic, "partition", p.index,
			"segments", n, "log_start_offset", p.log.LogStartOffset())
	}
}
