package broker

// ShareFetch (key 78, KIP-932) as Kafka 4.4's KafkaApis.handleShareFetchRequest
// and SharePartitionManager: the share session is checked and updated
// (coordinator/share sessions.go), the acknowledgements riding on the
// request are applied, then records are acquired for the member from each
// partition of its session that this broker leads: whole log batches are
// returned with the acquired offset ranges and their delivery counts, and
// the client keeps only the acquired records. With nothing acquired the
// request waits up to MaxWaitMillis for an append or a lock expiry.
//
// Errors: an empty group or member id INVALID_REQUEST; READ on the group
// (GROUP_AUTHORIZATION_FAILED, top level) and on each topic
// (TOPIC_AUTHORIZATION_FAILED per partition); acknowledgements on an
// initial fetch (epoch 0) and fetch data on a final one (-1)
// INVALID_REQUEST; an unknown session SHARE_SESSION_NOT_FOUND; a wrong
// epoch INVALID_SHARE_SESSION_EPOCH; acknowledging a record the member has
// not acquired INVALID_RECORD_STATE (per partition, AcknowledgeErrorCode).
//
// Group configs: share.auto.offset.reset (latest, earliest, or
// by_duration: the first record at or after now minus the duration) sets a
// new share-partition's start; share.isolation.level
// read_committed stops at the last stable offset and archives aborted
// transactions' records; share.record.lock.duration.ms,
// share.delivery.count.limit and share.partition.max.record.locks are
// read at each request.

import (
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/config"
	"github.com/strait/strait/coordinator/share"
	"github.com/strait/strait/recordbatch"
	"github.com/strait/strait/replication"
	"github.com/strait/strait/security/acl"
	"github.com/strait/strait/storage"
)

func init() { register(kmsg.ShareFetch, 1, 2, handleShareFetch) }

// shareTarget is one partition of a ShareFetch or ShareAcknowledge.
type shareTarget struct {
	tp       share.TopicPartition
	topic    string
	part     *replication.Partition
	code     int16 // fetch error
	msg      string
	ackCode  int16
	ackMsg   string
	acked    bool
	fetch    bool
	records  []byte
	acquired []share.AcquiredRange
}

type shareFetchOp struct {
	c       *conn
	x       *exchange
	req     *kmsg.ShareFetchRequest
	group   string
	member  string
	targets []*shareTarget
	byTP    map[share.TopicPartition]*shareTarget
	// deadline (wall clock) is when the answer must be on its way: the
	// client gives up on the request not long after its MaxWait (franz-go
	// 10 s after it, the Java client 30 s after sending), and an answer it
	// never reads loses the records acquired for it, each one delivery.
	deadline time.Time
}

func (op *shareFetchOp) target(tp share.TopicPartition) *shareTarget {
	if t := op.byTP[tp]; t != nil {
		return t
	}
	t := &shareTarget{tp: tp}
	op.c.resolveShareTarget(t)
	op.byTP[tp] = t
	op.targets = append(op.targets, t)
	return t
}

// resolveShareTarget finds the partition this broker leads, or the error.
func (c *conn) resolveShareTarget(t *shareTarget) {
	lt := c.srv.replicas.TopicByID(t.tp.Topic)
	if lt == nil {
		if ti, ok := c.srv.ctrl.TopicByID(t.tp.Topic); ok {
			t.topic = ti.Name
			t.code = kerr.NotLeaderForPartition.Code
		} else {
			t.code = kerr.UnknownTopicID.Code
			return
		}
	} else {
		t.topic = lt.Name()
	}
	if !c.authorizeTopic(acl.OpRead, t.topic) {
		t.code = kerr.TopicAuthorizationFailed.Code
		return
	}
	if t.code != 0 {
		return
	}
	t.part = lt.Partition(t.tp.Partition)
	if t.part == nil {
		t.code = c.srv.missingPartitionCode(t.topic, t.tp.Partition)
		return
	}
	t.code = checkLeader(t.part, -1)
}

// shareFail answers a ShareFetch or ShareAcknowledge with a top-level
// error (Kafka's carry no acquisition lock timeout).
func shareFail(x *exchange, resp kmsg.Response, e *kerr.Error, msg string) {
	var m *string
	if msg != "" {
		m = &msg
	}
	switch r := resp.(type) {
	case *kmsg.ShareFetchResponse:
		r.ErrorCode, r.ErrorMessage, r.AcquisitionLockTimeoutMillis = e.Code, m, 0
	case *kmsg.ShareAcknowledgeResponse:
		r.ErrorCode, r.ErrorMessage, r.AcquisitionLockTimeoutMillis = e.Code, m, 0
	}
	x.respond(resp)
}

// shareCheck is ShareFetch's and ShareAcknowledge's common checks: a group
// and member id, READ on the group. On failure it answers and returns
// false.
func (c *conn) shareCheck(x *exchange, resp kmsg.Response, group, member *string) bool {
	switch {
	case group == nil || *group == "":
		shareFail(x, resp, kerr.InvalidRequest, "Group id must be set.")
	case member == nil || *member == "":
		shareFail(x, resp, kerr.InvalidRequest, "Member id must be set.")
	case !c.authorizeGroup(acl.OpRead, *group):
		shareFail(x, resp, kerr.GroupAuthorizationFailed, "")
	default:
		return true
	}
	return false
}

func handleShareFetch(c *conn, x *exchange) {
	req := x.req.Body.(*kmsg.ShareFetchRequest)
	resp := req.ResponseKind().(*kmsg.ShareFetchResponse)
	if !c.shareCheck(x, resp, req.GroupID, req.MemberID) {
		return
	}
	sc := c.srv.shares()
	op := &shareFetchOp{c: c, x: x, req: req, group: *req.GroupID, member: *req.MemberID, byTP: map[share.TopicPartition]*shareTarget{},
		deadline: time.Now().Add(time.Duration(max(req.MaxWaitMillis, 0))*time.Millisecond + shareAnswerMargin)}
	lim := sc.Limits(op.group)
	resp.AcquisitionLockTimeoutMillis = int32(lim.LockDuration / time.Millisecond)

	var add, forget []share.TopicPartition
	acks := map[share.TopicPartition][]share.AckBatch{}
	var ackOrder []share.TopicPartition
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			tp := share.TopicPartition{Topic: rt.TopicID, Partition: rp.Partition}
			add = append(add, tp)
			for _, b := range rp.AcknowledgementBatches {
				if _, ok := acks[tp]; !ok {
					ackOrder = append(ackOrder, tp)
				}
				acks[tp] = append(acks[tp], share.AckBatch{First: b.FirstOffset, Last: b.LastOffset, Types: b.AcknowledgeTypes})
			}
		}
	}
	for _, ft := range req.ForgottenTopicsData {
		for _, p := range ft.Partitions {
			forget = append(forget, share.TopicPartition{Topic: ft.TopicID, Partition: p})
		}
	}
	final := req.ShareSessionEpoch == share.FinalEpoch
	if req.ShareSessionEpoch == share.InitialEpoch && len(acks) > 0 {
		shareFail(x, resp, kerr.InvalidRequest, "Acknowledge data present on initial fetch request")
		return
	}
	// A final fetch naming partitions without acknowledgements is not
	// refused: Kafka 4.4 closes the session and answers no partitions.
	parts, code := sc.SessionUpdate(op.group, op.member, req.ShareSessionEpoch, add, forget, false)
	if code != 0 {
		shareFail(x, resp, kerr.ErrorForCode(code).(*kerr.Error), "")
		return
	}
	// Each partition's acknowledgements are written before the answer,
	// the partitions' writes together.
	now := c.srv.clock.Now()
	acked := make([]*shareTarget, len(ackOrder))
	for i, tp := range ackOrder {
		acked[i] = op.target(tp)
		acked[i].acked = true
	}
	shareParallel(len(acked), func(i int) {
		t := acked[i]
		t.ackCode, t.ackMsg = c.srv.shareAcknowledge(op.group, op.member, t, acks[t.tp], now, op.deadline)
	})
	if final {
		sc.CloseSession(op.group, op.member)
		op.respond(false)
		return
	}
	for _, tp := range parts {
		op.target(tp).fetch = true
	}
	// Partitions the session did not keep (they do not exist) are answered
	// with their error.
	for _, tp := range add {
		op.target(tp).fetch = true
	}
	// Forgotten partitions that only carried acknowledgements are answered,
	// not fetched.
	for _, tp := range forget {
		if t := op.byTP[tp]; t != nil {
			t.fetch = false
		}
	}
	next, done := op.acquire()
	if done || req.MaxWaitMillis <= 0 {
		op.respond(false)
		return
	}
	if !c.srv.bg.Go(func() { op.park(next) }) {
		op.park(next)
	}
}

// shareAcknowledge applies one partition's acknowledgement batches and
// writes the share-partition's state before answering, as Kafka's
// SharePartition waits for its persister (and rolls the acknowledgement
// back when the write fails). Offsets never acquired are
// INVALID_RECORD_STATE with Kafka's message.
func (s *Server) shareAcknowledge(group, member string, t *shareTarget, batches []share.AckBatch, now, deadline time.Time) (int16, string) {
	if t.code != 0 {
		return t.code, ""
	}
	sp := s.shares().LookupPartition(group, t.tp.Topic, t.tp.Partition)
	if sp == nil {
		return kerr.InvalidRecordState.Code, "Batch record not found. The request batch offsets are not found in the cache."
	}
	lim := s.shares().Limits(group)
	sp.Lock()
	if sp.Initialized() && sp.LeaderEpoch() != t.part.LeaderEpoch() {
		// The leadership moved since these records were acquired: the
		// state is reloaded by the next fetch, and no lock survives that.
		sp.Uninit()
	}
	sp.Expire(now, lim)
	code, msg, undo := sp.AcknowledgeHeld(member, batches, now, lim)
	sp.Unlock()
	if code != 0 {
		return code, msg
	}
	code = s.sharePersistBy(group, t.tp, sp, deadline)
	// A failed write rolls the acknowledgement back, as Kafka's
	// SharePartition does: the records stay acquired by the member, which
	// may acknowledge them again.
	sp.Lock()
	sp.Settle(undo, code == 0)
	sp.Unlock()
	return code, ""
}

// acquire acquires records on every fetched partition, within MaxRecords
// and MaxBytes. It returns the next lock expiry on them and whether the
// fetch can be answered now (records, or an error).
//
// The delivery counts raised are written before the records go out, so a
// leader move cannot hand them out again as first deliveries. The writes
// of the partitions run together (at most shareWriteParallel at once), so
// a slow share coordinator delays the answer by one write rather than one
// per partition. A partition whose write fails, or ends past the fetch's
// deadline, gives its acquisition back with the delivery counts as before
// (Unacquire); one whose write succeeds starts its locks then (Confirm).
func (op *shareFetchOp) acquire() (next time.Time, done bool) {
	if time.Until(op.deadline) < shareMinWriteBudget {
		// Too late to write and still answer in time: answer now (the
		// acknowledgements' results, or nothing), the client fetches
		// again.
		return time.Time{}, true
	}
	s := op.c.srv
	sc := s.shares()
	lim := sc.Limits(op.group)
	maxRecords := int(op.req.MaxRecords)
	if maxRecords <= 0 {
		maxRecords = 500
	}
	remaining := int64(op.req.MaxBytes)
	if remaining <= 0 {
		remaining = 1<<31 - 1
	}
	reset := sc.GroupConfig(op.group, "share.auto.offset.reset", "latest")
	readCommitted := sc.GroupConfig(op.group, "share.isolation.level", "read_uncommitted") == "read_committed"
	now := s.clock.Now()
	var acqs []shareAcquisition
	for _, t := range op.targets {
		if !t.fetch || t.code != 0 {
			if t.fetch && t.code != 0 {
				done = true
			}
			continue
		}
		if maxRecords <= 0 || remaining <= 0 {
			continue
		}
		sp := sc.Partition(op.group, t.tp.Topic, t.tp.Partition)
		code := s.shareLoad(op.group, t.tp, sp, t.part.LeaderEpoch(), lim, op.deadline, func() int64 {
			return shareResetOffset(t.part.Log(), reset, readCommitted, now)
		})
		if code != 0 {
			t.code = code
			if code == shareNotInitialized {
				t.msg = *shareStateNotFound(share.StateKey{Group: op.group, Topic: t.tp.Topic, Partition: t.tp.Partition})
			}
			done = true
			continue
		}
		a := shareAcquisition{t: t, sp: sp, ranges: len(t.acquired), records: len(t.records)}
		n, size, exp, code := s.shareAcquire(sp, op.member, t, maxRecords, remaining, lim, readCommitted, now)
		if code != 0 {
			t.code = code
			done = true
		}
		if !exp.IsZero() && (next.IsZero() || exp.Before(next)) {
			next = exp
		}
		maxRecords -= n
		remaining -= size
		a.n = n
		acqs = append(acqs, a) // written even with nothing acquired: a lock expiry or a start move
	}
	shareParallel(len(acqs), func(i int) {
		acqs[i].code = s.sharePersistBy(op.group, acqs[i].t.tp, acqs[i].sp, op.deadline)
	})
	late := time.Now().After(op.deadline)
	now = s.clock.Now()
	for _, a := range acqs {
		t := a.t
		if a.n == 0 {
			continue
		}
		got := t.acquired[a.ranges:]
		a.sp.Lock()
		if a.code != 0 || late {
			a.sp.Unacquire(op.member, got)
			got = nil
		} else {
			got = a.sp.Confirm(op.member, got, now, lim)
		}
		a.sp.Unlock()
		t.acquired = append(t.acquired[:a.ranges], got...)
		if len(got) == 0 {
			t.records = t.records[:a.records]
			continue
		}
		done = true
		exp := now.Add(lim.LockDuration)
		if next.IsZero() || exp.Before(next) {
			next = exp
		}
		a.sp.Lock()
		s.shareScheduleExpiry(op.group, t.tp, a.sp, exp, now)
		a.sp.Unlock()
	}
	return next, done
}

// shareScheduleExpiry arranges for sp's locks running out at or after at to
// be released and written when they do (sp's lock held), as Kafka's
// SharePartition writes its state from the acquisition lock's timer task
// (and goes ahead with the release should that write fail). Otherwise the
// release would only be written at the share-partition's next operation,
// and a leader move before it would bring the records back as still
// unacknowledged with no record of the expiry.
func (s *Server) shareScheduleExpiry(group string, tp share.TopicPartition, sp *share.Partition, at, now time.Time) {
	sp.ScheduleExpiry(at, now, func() {
		s.bg.Go(func() { s.shareExpire(group, tp, sp) })
	})
}

// shareExpire releases sp's locks that ran out and writes the state.
func (s *Server) shareExpire(group string, tp share.TopicPartition, sp *share.Partition) {
	sc := s.shares()
	current := sc.LookupPartition(group, tp.Topic, tp.Partition) == sp // before sp's lock, as the coordinator's
	sp.Lock()
	sp.ExpiryFired()
	if !current {
		sp.Unlock() // deleted or forgotten since
		return
	}
	now := s.clock.Now()
	if next := sp.Expire(now, sc.Limits(group)); !next.IsZero() {
		s.shareScheduleExpiry(group, tp, sp, next, now)
	}
	sp.Unlock()
	s.sharePersist(group, tp, sp)
}

// shareAcquisition is one partition's acquisition of a fetch, before its
// state is written: where it starts in the target's acquired ranges and
// records, how many records it took, and the write's outcome.
type shareAcquisition struct {
	t               *shareTarget
	sp              *share.Partition
	ranges, records int
	n               int
	code            int16
}

// shareAnswerMargin is how long past its MaxWait a ShareFetch may take to
// answer: half of franz-go's request timeout overhead (10 s).
const shareAnswerMargin = 5 * time.Second

// shareMinWriteBudget is the least time before its deadline a fetch needs
// to acquire (and write) more records.
const shareMinWriteBudget = time.Second

// shareWriteParallel bounds the state writes one request runs at once.
const shareWriteParallel = 16

// shareParallel runs fn(0..n-1), at most shareWriteParallel at a time.
func shareParallel(n int, fn func(i int)) {
	if n == 1 {
		fn(0)
		return
	}
	sem := make(chan struct{}, shareWriteParallel)
	var wg sync.WaitGroup
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			fn(i)
		})
	}
	wg.Wait()
}

// shareFetchMaxBytes caps a ShareFetch response's records, as Kafka caps
// the request's MaxBytes with fetch.max.bytes (55 MiB by default). Unlike
// Fetch's file regions, a ShareFetch's records are copied into memory.
const shareFetchMaxBytes = 57671680

// shareReadChunk is how much of the log one read takes: the log is read in
// such steps until MaxRecords are acquired, so a small MaxRecords does not
// read MaxBytes.
const shareReadChunk = 1 << 20

// shareAcquire reads t's log from the share-partition's next fetch offset
// and acquires what it can for member. It returns the records acquired,
// the bytes returned, the next lock expiry and an error code.
func (s *Server) shareAcquire(sp *share.Partition, member string, t *shareTarget, maxRecords int, maxBytes int64, lim share.Limits, readCommitted bool, now time.Time) (int, int64, time.Time, int16) {
	log := t.part.Log()
	sp.Lock()
	defer sp.Unlock()
	if !sp.Initialized() {
		return 0, 0, time.Time{}, 0 // reloading after a leadership move
	}
	hw := log.HighWatermark()
	upTo := hw
	if readCommitted {
		upTo = min(log.LastStableOffset(), hw)
	}
	sp.TrimTo(log.LogStartOffset())
	next := sp.Expire(now, lim)
	maxBytes = min(maxBytes, shareFetchMaxBytes)
	n, size := 0, int64(0)
	for from := sp.NextFetchOffset(); from < upTo && n < maxRecords && size < maxBytes && !sp.WindowFull(lim); {
		// Only the first read may return a batch larger than asked (KIP-74).
		res, err := log.Read(from, min(maxBytes-size, shareReadChunk), upTo, size == 0)
		if err != nil {
			if n > 0 {
				break
			}
			code, _ := errorCode(err)
			return 0, 0, next, code
		}
		if res.Size == 0 {
			break
		}
		buf := make([]byte, res.Size)
		pos := int64(0)
		for _, sl := range res.Slices {
			if _, err := sl.File.ReadAt(buf[pos:pos+sl.Len], sl.Pos); err != nil {
				res.Release()
				return 0, 0, next, kerr.KafkaStorageError.Code
			}
			pos += sl.Len
		}
		res.Release() // copied: the segment files may close
		aborted, code := abortedRanges(log, readCommitted, from, res.EndOffset)
		if code != 0 {
			return 0, 0, next, code
		}
		var batches []share.Batch
		var raw [][]byte
		for rest := buf; len(rest) > 0; {
			b, r, ok := recordbatch.Split(rest)
			if !ok || len(b) < recordbatch.HeaderSize {
				break
			}
			rest = r
			rb := recordbatch.Batch(b)
			skip := rb.IsControl() || rb.IsTransactional() && aborted.covers(rb.ProducerID(), rb.BaseOffset())
			batches = append(batches, share.Batch{First: rb.BaseOffset(), Last: rb.LastOffset(), Control: skip})
			raw = append(raw, b)
		}
		if len(batches) == 0 {
			break
		}
		from = batches[len(batches)-1].Last + 1
		acq := sp.Acquire(member, batches, maxRecords-n, now, lim)
		if len(acq) == 0 {
			continue
		}
		for _, a := range acq {
			n += int(a.Last - a.First + 1)
		}
		// The batches holding acquired records, whole.
		for i, b := range batches {
			for _, a := range acq {
				if a.First <= b.Last && a.Last >= b.First {
					t.records = append(t.records, raw[i]...)
					size += int64(len(raw[i]))
					break
				}
			}
		}
		t.acquired = append(t.acquired, acq...)
	}
	if n == 0 {
		return 0, 0, sp.Expire(now, lim), 0
	}
	exp := now.Add(lim.LockDuration)
	if !next.IsZero() && next.Before(exp) {
		exp = next
	}
	return n, size, exp, 0
}

// shareResetOffset is a new share-partition's start offset by
// share.auto.offset.reset: latest (the high watermark, or the last stable
// offset for read_committed), earliest, or by_duration (the first record at
// or after now minus the duration; none: latest).
func shareResetOffset(log *storage.Log, reset string, readCommitted bool, now time.Time) int64 {
	upTo := log.HighWatermark()
	if readCommitted {
		upTo = min(log.LastStableOffset(), upTo)
	}
	start := upTo
	if reset == "earliest" {
		start = log.LogStartOffset()
	} else if d, ok := config.ShareResetDuration(reset); ok {
		if off, _, found, err := log.OffsetForTimestamp(now.Add(-d).UnixMilli()); err == nil && found {
			start = min(off, upTo)
		}
	}
	return start
}

// abortedTxns maps a producer id to its aborted transactions' [first,
// abort marker) offset pairs.
type abortedTxns map[int64][]int64

func (a abortedTxns) covers(producerID, offset int64) bool {
	ab := a[producerID]
	for i := 0; i+1 < len(ab); i += 2 {
		if offset >= ab[i] && offset < ab[i+1] {
			return true
		}
	}
	return false
}

// abortedRanges lists the aborted transactions overlapping [from, upTo)
// for read_committed (nil otherwise): their records are archived, never
// delivered.
func abortedRanges(log *storage.Log, readCommitted bool, from, upTo int64) (abortedTxns, int16) {
	if !readCommitted {
		return nil, 0
	}
	txns, err := log.AbortedTransactions(from, upTo)
	if err != nil {
		return nil, kerr.KafkaStorageError.Code
	}
	out := abortedTxns{}
	for _, a := range txns {
		out[a.ProducerID] = append(out[a.ProducerID], a.FirstOffset, a.LastOffset)
	}
	return out, 0
}

// park waits for an append to a fetched partition, records made available
// again (a release, a closed session, a lock expiry) or the wait's end,
// then answers.
func (op *shareFetchOp) park(next time.Time) {
	s := op.c.srv
	w := replication.NewFetchWaiter()
	released := make(chan struct{}, 1) // a record made available again
	var sps []*share.Partition
	for _, t := range op.targets {
		if t.fetch && t.part != nil && t.code == 0 {
			t.part.AddFetchWaiter(w)
			sp := s.shares().Partition(op.group, t.tp.Topic, t.tp.Partition)
			sp.AddWaiter(released)
			sps = append(sps, sp)
		}
	}
	defer func() {
		for _, t := range op.targets {
			if t.fetch && t.part != nil && t.code == 0 {
				t.part.RemoveFetchWaiter(w)
			}
		}
		for _, sp := range sps {
			sp.RemoveWaiter(released)
		}
	}()
	// A release or an append between the first acquire and the waiters'
	// registration above signalled nobody: acquire once more now that
	// they are registered, or that wakeup is lost until the wait ends.
	if n, done := op.acquire(); done {
		op.respond(true)
		return
	} else if !n.IsZero() && (next.IsZero() || n.Before(next)) {
		next = n
	}
	deadline := s.clock.Now().Add(time.Duration(op.req.MaxWaitMillis) * time.Millisecond)
	for {
		wait := deadline.Sub(s.clock.Now())
		if !next.IsZero() {
			wait = min(wait, next.Sub(s.clock.Now())+time.Millisecond)
		}
		if wait <= 0 {
			op.acquire()
			op.respond(true)
			return
		}
		timer := time.NewTimer(wait)
		select {
		case <-w.Wake():
		case <-released:
		case <-timer.C:
		case <-s.closing:
			timer.Stop()
			op.respond(true)
			return
		case <-op.c.dead:
			timer.Stop()
			// Nobody will see these records: give them back.
			op.releaseAcquired()
			op.x.noResponse()
			return
		}
		timer.Stop()
		n, done := op.acquire()
		if done {
			op.respond(true)
			return
		}
		next = n
	}
}

// releaseAcquired releases what this fetch acquired (its connection died).
func (op *shareFetchOp) releaseAcquired() {
	sc := op.c.srv.shares()
	lim := sc.Limits(op.group)
	for _, t := range op.targets {
		if len(t.acquired) == 0 {
			continue
		}
		sp := sc.LookupPartition(op.group, t.tp.Topic, t.tp.Partition)
		if sp == nil {
			continue
		}
		sp.Lock()
		for _, a := range t.acquired {
			sp.Acknowledge(op.member, []share.AckBatch{{First: a.First, Last: a.Last, Types: []int8{share.AckRelease}}}, op.c.srv.clock.Now(), lim)
		}
		sp.Unlock()
		op.c.srv.sharePersist(op.group, t.tp, sp)
	}
}

// respond answers with every partition that has records, an error or an
// acknowledgement result, grouped by topic in request order.
func (op *shareFetchOp) respond(async bool) {
	resp := op.req.ResponseKind().(*kmsg.ShareFetchResponse)
	resp.AcquisitionLockTimeoutMillis = int32(op.c.srv.shares().Limits(op.group).LockDuration / time.Millisecond)
	topicIdx := map[[16]byte]int{}
	for _, t := range op.targets {
		if len(t.acquired) == 0 && !t.acked && (t.code == 0 || !t.fetch) {
			continue
		}
		i, ok := topicIdx[t.tp.Topic]
		if !ok {
			i = len(resp.Topics)
			topicIdx[t.tp.Topic] = i
			rt := kmsg.NewShareFetchResponseTopic()
			rt.TopicID = t.tp.Topic
			resp.Topics = append(resp.Topics, rt)
		}
		rp := kmsg.NewShareFetchResponseTopicPartition()
		rp.Partition = t.tp.Partition
		if t.fetch {
			rp.ErrorCode = t.code
			if t.code != 0 && t.msg != "" {
				rp.ErrorMessage = &t.msg
			}
		}
		rp.AcknowledgeErrorCode = t.ackCode
		if t.ackMsg != "" {
			rp.AcknowledgeErrorMessage = &t.ackMsg
		}
		rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = op.c.srv.currentLeader(t.part, t.topic, t.tp.Partition)
		rp.Records = t.records
		if rp.Records == nil {
			// Not nullable from v1: a partition answered only for its
			// acknowledgements carries empty records, as Kafka's
			// MemoryRecords.EMPTY (the Java client fails on null).
			rp.Records = []byte{}
		}
		for _, a := range t.acquired {
			ar := kmsg.NewShareFetchResponseTopicPartitionAcquiredRecord()
			ar.FirstOffset, ar.LastOffset, ar.DeliveryCount = a.First, a.Last, a.DeliveryCount
			rp.AcquiredRecords = append(rp.AcquiredRecords, ar)
		}
		resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, rp)
	}
	for i := range resp.Topics {
		slices.SortFunc(resp.Topics[i].Partitions, func(a, b kmsg.ShareFetchResponseTopicPartition) int { return int(a.Partition - b.Partition) })
	}
	if async {
		op.x.respondAsync(resp)
	} else {
		op.x.respond(resp)
	}
}
