package share

import (
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// RecordState is a record's state in a share-partition (Kafka's
// RecordState): Available to be acquired, Acquired by one member under a
// lock, Acknowledged (accepted) or Archived (rejected, a gap, past the
// delivery limit, or a control record). The last two are terminal.
type RecordState uint8

const (
	Available RecordState = iota
	Acquired
	Acknowledged
	Archived
)

func (s RecordState) String() string {
	switch s {
	case Available:
		return "Available"
	case Acquired:
		return "Acquired"
	case Acknowledged:
		return "Acknowledged"
	case Archived:
		return "Archived"
	}
	return "Unknown"
}

// Acknowledgement types of ShareFetch and ShareAcknowledge.
const (
	AckGap     int8 = 0
	AckAccept  int8 = 1
	AckRelease int8 = 2
	AckReject  int8 = 3
	AckRenew   int8 = 4
)

type record struct {
	state      RecordState
	deliveries int16
	member     string
	deadline   time.Time // lock expiry while Acquired
}

// Batch is what the state machine needs of a log batch: its offset range
// and whether it is a control batch (a transaction marker, never
// delivered).
type Batch struct {
	First, Last int64
	Control     bool
}

// AcquiredRange is a run of acquired offsets with one delivery count, as
// ShareFetch's AcquiredRecords lists them.
type AcquiredRange struct {
	First, Last   int64
	DeliveryCount int16
}

// Limits are the settings of one share-partition's group, read at each
// operation so that a group config change acts on the next one.
type Limits struct {
	LockDuration  time.Duration // share.record.lock.duration.ms (30 s)
	DeliveryLimit int16         // share.delivery.count.limit (5)
	MaxLocks      int           // share.partition.max.record.locks (2000): the in-flight window
}

// Partition is one share-partition: the in-flight records of one topic
// partition for one share group, from the share-partition start offset
// (SPSO: every offset below is acknowledged or archived) to the end offset
// (ESPO: the first offset never acquired). recs[i] is offset start+i.
// The broker leading the topic partition owns it (as Kafka's
// SharePartitionManager); all methods lock it.
type Partition struct {
	mu          sync.Mutex
	initialized bool
	start       int64
	recs        []record
	// waiters are parked ShareFetches, signalled (never blocking) when a
	// record becomes available again, as Kafka's DelayedShareFetch.
	waiters  map[chan struct{}]struct{}
	released bool // a record became available since the last flushWake

	// Persistence (state.go): the leader epoch of the topic partition when
	// the state was loaded (a leadership change reloads it), the state
	// epoch, and a version counting changes against the last one written.
	leaderEpoch int32
	stateEpoch  int32
	version     uint64
	persisted   uint64
	// writeSem orders the writes of this share-partition's state, so a
	// later snapshot of it is never overtaken by an earlier one; a channel
	// so that a writer with a deadline can give up waiting.
	writeSem chan struct{}
	// expiry fires at expiryAt, the earliest lock deadline scheduled, so
	// that a lock running out is written when it happens (ScheduleExpiry).
	expiry   *time.Timer
	expiryAt time.Time
	// holds counts the acknowledgements applied whose write is under way
	// (AcknowledgeHeld): the start does not move past their records until
	// Settle, so that a failed write can roll them back.
	holds int
}

// ScheduleExpiry arranges for fn to run (on its own goroutine) at the lock
// deadline at, unless a call is already due by then (the lock held); now
// is the broker clock's time. fn calls ExpiryFired first.
func (p *Partition) ScheduleExpiry(at, now time.Time, fn func()) {
	if p.expiry != nil && !p.expiryAt.After(at) {
		return
	}
	if p.expiry != nil {
		p.expiry.Stop()
	}
	p.expiryAt = at
	p.expiry = time.AfterFunc(max(at.Sub(now), 0)+time.Millisecond, fn)
}

// ExpiryFired forgets the timer that fired (the lock held).
func (p *Partition) ExpiryFired() { p.expiry, p.expiryAt = nil, time.Time{} }

// stopExpiry stops the expiry timer of a share-partition being forgotten,
// which would otherwise keep it in memory until the lock duration ends.
func (p *Partition) stopExpiry() {
	p.mu.Lock()
	if p.expiry != nil {
		p.expiry.Stop()
		p.expiry, p.expiryAt = nil, time.Time{}
	}
	p.mu.Unlock()
}

// AddWaiter parks ch (buffered, one slot) until RemoveWaiter.
func (p *Partition) AddWaiter(ch chan struct{}) {
	p.mu.Lock()
	if p.waiters == nil {
		p.waiters = map[chan struct{}]struct{}{}
	}
	p.waiters[ch] = struct{}{}
	p.mu.Unlock()
}

// RemoveWaiter unparks ch.
func (p *Partition) RemoveWaiter(ch chan struct{}) {
	p.mu.Lock()
	delete(p.waiters, ch)
	p.mu.Unlock()
}

// wake signals the parked fetches (the lock held).
func (p *Partition) wake() {
	for ch := range p.waiters {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// NewPartition returns an uninitialized share-partition: Init sets its start.
func NewPartition() *Partition { return &Partition{} }

// Lock and Unlock let the broker read the log and acquire under one lock,
// so two fetches never acquire the same offsets.
func (p *Partition) Lock()   { p.mu.Lock() }
func (p *Partition) Unlock() { p.mu.Unlock() }

// Initialized reports whether the start offset is set (the lock held).
func (p *Partition) Initialized() bool { return p.initialized }

// Init sets the start offset of a new share-partition (from
// share.auto.offset.reset), the lock held.
func (p *Partition) Init(start int64) {
	p.initialized, p.start, p.recs = true, start, nil
	p.version++
}

// Uninit forgets the state so that the next operation loads it again (the
// topic partition's leadership moved). The lock held.
func (p *Partition) Uninit() {
	p.initialized, p.start, p.recs = false, 0, nil
}

// LeaderEpoch and StateEpoch are the epochs the state was loaded at; SetEpochs
// sets them (the lock held).
func (p *Partition) LeaderEpoch() int32 { return p.leaderEpoch }
func (p *Partition) StateEpoch() int32  { return p.stateEpoch }
func (p *Partition) SetEpochs(leader, state int32) {
	p.leaderEpoch, p.stateEpoch = leader, state
}

// Restore sets the state read from __share_group_state (the lock held):
// the start offset and the window's batches, acquired records persisted as
// Available with their delivery counts. Batches past max locks are
// dropped: they were never in flight.
func (p *Partition) Restore(start int64, batches []StateBatch, lim Limits) {
	p.initialized, p.start, p.recs = true, start, nil
	for _, b := range batches {
		if b.Last < p.start {
			continue
		}
		first := max(b.First, p.start)
		for off := p.End(); off < first && len(p.recs) < lim.MaxLocks; off++ {
			// A hole between batches: never acquired, so available.
			p.recs = append(p.recs, record{state: Available})
		}
		for off := first; off <= b.Last && len(p.recs) < lim.MaxLocks; off++ {
			r := record{state: Available, deliveries: b.Count}
			switch b.State {
			case DeliveryAcknowledged:
				r.state = Acknowledged
			case DeliveryArchived:
				r.state = Archived
			}
			p.recs = append(p.recs, r)
		}
	}
	// Trailing available records never delivered are not in flight.
	for len(p.recs) > 0 {
		r := p.recs[len(p.recs)-1]
		if r.state != Available || r.deliveries != 0 {
			break
		}
		p.recs = p.recs[:len(p.recs)-1]
	}
	p.advance()
	p.version++
	p.persisted = p.version
}

// Snapshot returns the state to persist if it changed since the last
// write (the lock held): the start and the window as state batches.
func (p *Partition) Snapshot() (start int64, batches []StateBatch, version uint64, changed bool) {
	if !p.initialized || p.version == p.persisted {
		return 0, nil, p.version, false
	}
	// Acknowledged or archived records at the head, which an
	// acknowledgement's write under way keeps in the window, are written
	// as the start moved past them.
	head := 0
	for head < len(p.recs) && (p.recs[head].state == Acknowledged || p.recs[head].state == Archived) {
		head++
	}
	for i, r := range p.recs[head:] {
		i += head
		st := DeliveryAvailable
		switch r.state {
		case Acknowledged:
			st = DeliveryAcknowledged
		case Archived:
			st = DeliveryArchived
		}
		off := p.start + int64(i)
		if k := len(batches) - 1; k >= 0 && batches[k].State == st && batches[k].Count == r.deliveries {
			batches[k].Last = off
			continue
		}
		batches = append(batches, StateBatch{First: off, Last: off, State: st, Count: r.deliveries})
	}
	return p.start + int64(head), batches, p.version, true
}

// Persisted records that version was written (the lock held).
func (p *Partition) Persisted(version uint64) {
	if version > p.persisted {
		p.persisted = version
	}
}

// WriteLockBy and WriteUnlock order the state's writes (taken before
// Lock). WriteLockBy waits until deadline at most (zero: no deadline) and
// reports whether it got the write lock.
func (p *Partition) WriteLockBy(deadline time.Time) bool {
	p.mu.Lock()
	if p.writeSem == nil {
		p.writeSem = make(chan struct{}, 1)
	}
	sem := p.writeSem
	p.mu.Unlock()
	select {
	case sem <- struct{}{}:
		return true
	default:
	}
	if deadline.IsZero() {
		sem <- struct{}{}
		return true
	}
	d := time.Until(deadline)
	if d <= 0 {
		return false
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case sem <- struct{}{}:
		return true
	case <-t.C:
		return false
	}
}

// WriteLock is WriteLockBy with no deadline.
func (p *Partition) WriteLock() { p.WriteLockBy(time.Time{}) }

// WriteUnlock releases the write lock.
func (p *Partition) WriteUnlock() { <-p.writeSem }

// Start is the share-partition start offset; End the first offset never
// acquired (the lock held).
func (p *Partition) Start() int64 { return p.start }
func (p *Partition) End() int64   { return p.start + int64(len(p.recs)) }

// State returns the state and delivery count of offset (the lock held):
// below the start it is Acknowledged-or-Archived (reported Archived), at or
// past the end Available with no delivery.
func (p *Partition) State(offset int64) (RecordState, int16) {
	if offset < p.start {
		return Archived, 0
	}
	i := offset - p.start
	if i >= int64(len(p.recs)) {
		return Available, 0
	}
	return p.recs[i].state, p.recs[i].deliveries
}

// Expire releases every acquisition whose lock has run out at now (the lock
// held): back to Available, or Archived once the delivery limit is reached.
// It returns the time of the next expiry (zero if nothing is acquired).
func (p *Partition) Expire(now time.Time, lim Limits) time.Time {
	var next time.Time
	for i := range p.recs {
		r := &p.recs[i]
		if r.state != Acquired {
			continue
		}
		if !now.Before(r.deadline) {
			p.release(r, lim)
			continue
		}
		if next.IsZero() || r.deadline.Before(next) {
			next = r.deadline
		}
	}
	p.advance()
	p.flushWake()
	return next
}

func (p *Partition) release(r *record, lim Limits) {
	p.version++
	r.member, r.deadline = "", time.Time{}
	if r.deliveries >= lim.DeliveryLimit {
		r.state = Archived
	} else {
		r.state = Available
		p.released = true
	}
}

// flushWake wakes the parked fetches if a record became available.
func (p *Partition) flushWake() {
	if p.released {
		p.released = false
		p.wake()
	}
}

// advance moves the start past the terminal records at its head (none
// while an acknowledgement's write is under way).
func (p *Partition) advance() {
	if p.holds > 0 {
		return
	}
	n := 0
	for n < len(p.recs) && (p.recs[n].state == Acknowledged || p.recs[n].state == Archived) {
		n++
	}
	if n > 0 {
		p.recs = p.recs[n:]
		p.start += int64(n)
		if len(p.recs) == 0 {
			p.recs = nil
		}
	}
}

// TrimTo moves the start to logStart when the log no longer holds the
// offsets below it (retention, DeleteRecords): those records are gone.
func (p *Partition) TrimTo(logStart int64) {
	if logStart <= p.start {
		return
	}
	p.version++
	n := logStart - p.start
	if n >= int64(len(p.recs)) {
		p.recs = nil
	} else {
		p.recs = p.recs[n:]
	}
	p.start = logStart
}

// NextFetchOffset is where the next acquisition reads the log from: the
// first Available record in the window, else the end (the lock held).
func (p *Partition) NextFetchOffset() int64 {
	for i := range p.recs {
		if p.recs[i].state == Available {
			return p.start + int64(i)
		}
	}
	return p.End()
}

// WindowFull reports whether the in-flight window leaves no room for new
// offsets and holds nothing available: a fetch then has nothing to acquire.
func (p *Partition) WindowFull(lim Limits) bool {
	return len(p.recs) >= lim.MaxLocks && p.NextFetchOffset() >= p.End()
}

// Acquire acquires for member up to maxRecords offsets of batches (log
// batches in offset order, read from NextFetchOffset), as Kafka's
// SharePartition.acquire: Available records in the window are acquired
// again with their delivery count raised; offsets past the end join the
// window (at most lim.MaxLocks in flight) with delivery count 1; control
// batches and holes between batches are archived. The lock held.
func (p *Partition) Acquire(member string, batches []Batch, maxRecords int, now time.Time, lim Limits) []AcquiredRange {
	var out []AcquiredRange
	deadline := now.Add(lim.LockDuration)
	n := 0
	add := func(off int64, dc int16) {
		if k := len(out) - 1; k >= 0 && out[k].Last == off-1 && out[k].DeliveryCount == dc {
			out[k].Last = off
		} else {
			out = append(out, AcquiredRange{First: off, Last: off, DeliveryCount: dc})
		}
		n++
	}
	for _, b := range batches {
		if n >= maxRecords {
			break
		}
		if b.Last < p.start {
			continue
		}
		first := max(b.First, p.start)
		// A hole before this batch (compaction, aborted data removed):
		// nothing to deliver there. With nothing in flight the start jumps
		// over it; otherwise it is archived if the window has room.
		if end := p.End(); first > end && len(p.recs) == 0 {
			p.start = first
			p.version++
		} else if first > end {
			p.version++
			if len(p.recs)+int(first-end) > lim.MaxLocks {
				break
			}
			for o := end; o < first; o++ {
				p.recs = append(p.recs, record{state: Archived})
			}
		}
		for off := first; off <= b.Last && n < maxRecords; off++ {
			i := off - p.start
			if i >= int64(len(p.recs)) {
				if len(p.recs) >= lim.MaxLocks {
					break
				}
				p.recs = append(p.recs, record{state: Available})
			}
			r := &p.recs[i]
			if r.state != Available {
				continue
			}
			if b.Control {
				r.state = Archived
				p.version++
				continue
			}
			r.state, r.member, r.deadline = Acquired, member, deadline
			r.deliveries++
			p.version++
			add(off, r.deliveries)
		}
	}
	p.advance()
	return out
}

// Unacquire gives back an acquisition that will not go out, its state
// write having failed or ended too late for the answer to reach the
// client (the lock held): each record of acq still held by member at that
// delivery count, or released meanwhile by its lock running out, is
// available again with the count it had before, as Kafka's SharePartition
// rolls a state transition back when its persister write fails. A
// coordinator outage then costs no delivery attempt: otherwise each fetch
// answered late would raise the counts until the delivery limit archived
// records no consumer ever received.
func (p *Partition) Unacquire(member string, acq []AcquiredRange) {
	for _, a := range acq {
		for off := max(a.First, p.start); off <= a.Last && off < p.End(); off++ {
			r := &p.recs[off-p.start]
			if r.deliveries != a.DeliveryCount || !(r.state == Acquired && r.member == member || r.state == Available) {
				continue
			}
			r.state, r.member, r.deadline = Available, "", time.Time{}
			r.deliveries--
			p.version++
		}
	}
	// Offsets at the end never delivered leave the window again.
	for len(p.recs) > 0 {
		r := p.recs[len(p.recs)-1]
		if r.state != Available || r.deliveries != 0 {
			break
		}
		p.recs = p.recs[:len(p.recs)-1]
	}
	if len(p.recs) == 0 {
		p.recs = nil
	}
	// No parked fetch is woken: its write would most likely fail the same
	// way; the records go to the next fetch.
}

// Confirm starts the locks of an acquisition whose state was written, as
// its records go out now (the lock held): the write may have taken a good
// part of the lock duration. A record whose lock ran out during the write
// is taken back if nobody took it since (its count is the one written).
// It returns the ranges member holds, leaving out the records another
// member took meanwhile, which must not go out twice.
func (p *Partition) Confirm(member string, acq []AcquiredRange, now time.Time, lim Limits) []AcquiredRange {
	deadline := now.Add(lim.LockDuration)
	var out []AcquiredRange
	for _, a := range acq {
		for off := max(a.First, p.start); off <= a.Last && off < p.End(); off++ {
			r := &p.recs[off-p.start]
			if r.deliveries != a.DeliveryCount || !(r.state == Acquired && r.member == member || r.state == Available) {
				continue
			}
			// Acquired or Available persist alike: no new write.
			r.state, r.member, r.deadline = Acquired, member, deadline
			if k := len(out) - 1; k >= 0 && out[k].Last == off-1 && out[k].DeliveryCount == a.DeliveryCount {
				out[k].Last = off
			} else {
				out = append(out, AcquiredRange{First: off, Last: off, DeliveryCount: a.DeliveryCount})
			}
		}
	}
	return out
}

// AckBatch is one acknowledgement batch of a request: Types has one type
// for the whole range or one per offset.
type AckBatch struct {
	First, Last int64
	Types       []int8
}

// Acknowledge applies member's acknowledgement batches, as Kafka's
// SharePartition.acknowledge: every offset must be Acquired by member, or
// nothing is applied and the answer is INVALID_RECORD_STATE; a malformed
// batch is INVALID_REQUEST. Accept acknowledges, Release makes the record
// available again (archived at the delivery limit), Reject and Gap
// archive, Renew restarts the lock. The lock held; returns an error code.
func (p *Partition) Acknowledge(member string, batches []AckBatch, now time.Time, lim Limits) int16 {
	code, _ := p.AcknowledgeMsg(member, batches, now, lim)
	return code
}

// Kafka's SharePartition messages for acknowledging records not acquired.
const (
	msgBatchNotFound = "Batch record not found. The request batch offsets are not found in the cache."
	msgNotAcquired   = "The record cannot be acknowledged. The record is not in the acquired state."
	msgNotOwner      = "Member is not the owner of the record."
)

// AcknowledgeMsg is Acknowledge with Kafka's error message.
func (p *Partition) AcknowledgeMsg(member string, batches []AckBatch, now time.Time, lim Limits) (int16, string) {
	for _, b := range batches {
		if b.Last < b.First || len(b.Types) == 0 {
			return kerr.InvalidRequest.Code, ""
		}
		if len(b.Types) != 1 && int64(len(b.Types)) != b.Last-b.First+1 {
			return kerr.InvalidRequest.Code, ""
		}
		for _, t := range b.Types {
			if t < AckGap || t > AckRenew {
				return kerr.InvalidRequest.Code, ""
			}
		}
		if b.First < p.start || b.Last >= p.End() {
			return kerr.InvalidRecordState.Code, msgBatchNotFound
		}
		for off := b.First; off <= b.Last; off++ {
			r := &p.recs[off-p.start]
			if r.state != Acquired {
				return kerr.InvalidRecordState.Code, msgNotAcquired
			}
			if r.member != member {
				return kerr.InvalidRecordState.Code, msgNotOwner
			}
		}
	}
	p.version++
	for _, b := range batches {
		for off := b.First; off <= b.Last; off++ {
			t := b.Types[0]
			if len(b.Types) > 1 {
				t = b.Types[off-b.First]
			}
			r := &p.recs[off-p.start]
			switch t {
			case AckAccept:
				r.state, r.member, r.deadline = Acknowledged, "", time.Time{}
			case AckRelease:
				p.release(r, lim)
			case AckReject, AckGap:
				r.state, r.member, r.deadline = Archived, "", time.Time{}
			case AckRenew:
				r.deadline = now.Add(lim.LockDuration)
			}
		}
	}
	p.advance()
	p.flushWake()
	return 0, ""
}

// AckUndo is what an acknowledgement changed (AcknowledgeHeld): each
// offset's record before and after, to roll it back should its write fail.
type AckUndo struct {
	offs        []int64
	prev, after []record
}

// AcknowledgeHeld is AcknowledgeMsg for an acknowledgement whose state
// write follows: the start stays where it is until Settle reports the
// write's outcome. A nil undo (an error answered) needs no Settle. The
// lock held.
func (p *Partition) AcknowledgeHeld(member string, batches []AckBatch, now time.Time, lim Limits) (int16, string, *AckUndo) {
	u := &AckUndo{}
	for _, b := range batches {
		if b.First < p.start || b.Last >= p.End() || b.Last < b.First {
			break // refused below
		}
		for off := b.First; off <= b.Last; off++ {
			u.offs = append(u.offs, off)
			u.prev = append(u.prev, p.recs[off-p.start])
		}
	}
	p.holds++
	code, msg := p.AcknowledgeMsg(member, batches, now, lim)
	if code != 0 {
		p.holds--
		return code, msg, nil
	}
	for _, off := range u.offs {
		u.after = append(u.after, p.recs[off-p.start])
	}
	return 0, "", u
}

// Settle ends an acknowledgement's hold once its write is done (the lock
// held). When the write failed (ok false) each record the acknowledgement
// changed and nothing changed since is as it was before: acquired by the
// member again, its lock and delivery count as they were, as Kafka's
// SharePartition rolls an acknowledgement back when its persister write
// fails. A share-partition whose state was dropped meanwhile (Uninit,
// Init, Restore) keeps what it has.
func (p *Partition) Settle(u *AckUndo, ok bool) {
	if u == nil {
		return
	}
	p.holds--
	if !ok {
		for i, off := range u.offs {
			if off < p.start || off >= p.End() {
				continue
			}
			r := &p.recs[off-p.start]
			if *r != u.after[i] {
				continue // acquired again, expired, or reloaded since
			}
			*r = u.prev[i]
			p.version++
		}
	}
	p.advance()
	p.flushWake()
}

// ReleaseMember releases every record member holds (its share session
// closed or it left the group), as Kafka's releaseAcquiredRecords. The
// lock held.
func (p *Partition) ReleaseMember(member string, lim Limits) {
	for i := range p.recs {
		r := &p.recs[i]
		if r.state == Acquired && r.member == member {
			p.release(r, lim)
		}
	}
	p.advance()
	p.flushWake()
}

// Reset moves the start offset (AlterShareGroupOffsets), dropping the
// in-flight window. The lock held.
func (p *Partition) Reset(start int64) { p.Init(start) }

// Lag is the number of records below hw not yet acknowledged or archived
// (DescribeShareGroupOffsets v1), the lock held.
func (p *Partition) Lag(hw int64) int64 {
	if hw <= p.start {
		return 0
	}
	lag := hw - p.start
	for i := range p.recs {
		if p.start+int64(i) >= hw {
			break
		}
		if s := p.recs[i].state; s == Acknowledged || s == Archived {
			lag--
		}
	}
	return lag
}
