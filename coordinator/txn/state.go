package txn

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
)

// State is a transaction's state, with Kafka's ids (TransactionState), as
// stored in __transaction_state.
type State int8

const (
	Empty             State = 0
	Ongoing           State = 1
	PrepareCommit     State = 2
	PrepareAbort      State = 3
	CompleteCommit    State = 4
	CompleteAbort     State = 5
	Dead              State = 6
	PrepareEpochFence State = 7
	noState           State = -1 // no pending transition
)

var stateNames = [...]string{"Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort", "Dead", "PrepareEpochFence"}

// String is the name DescribeTransactions and ListTransactions show.
func (s State) String() string {
	if s >= 0 && int(s) < len(stateNames) {
		return stateNames[s]
	}
	return fmt.Sprintf("State(%d)", int8(s))
}

// stateByName parses a ListTransactions state filter.
func stateByName(name string) (State, bool) {
	i := slices.Index(stateNames[:], name)
	return State(i), i >= 0
}

// expirationAllowed: a transactional id in this state may expire.
func (s State) expirationAllowed() bool {
	return s == Empty || s == CompleteCommit || s == CompleteAbort
}

// validPrevious lists the states a transition to s may start from.
func (s State) validPrevious(from State) bool {
	switch s {
	case Empty:
		return from == Empty || from == CompleteCommit || from == CompleteAbort
	case Ongoing:
		return from == Ongoing || from == Empty || from == CompleteCommit || from == CompleteAbort
	case PrepareCommit, PrepareEpochFence:
		return from == Ongoing
	case PrepareAbort:
		return from == Ongoing || from == PrepareEpochFence || from == Empty || from == CompleteCommit || from == CompleteAbort
	case CompleteCommit:
		return from == PrepareCommit
	case CompleteAbort:
		return from == PrepareAbort
	case Dead:
		return from == Empty || from == CompleteAbort || from == CompleteCommit
	}
	return false
}

// Transaction versions (the transaction.version feature, KIP-890): 0 (and
// 1, which Strait's callers never pass: clients below EndTxn v5 are TV0)
// keep the producer epoch across transactions; 2 bumps it at every EndTxn
// and lets produce requests add partitions implicitly.
const (
	TV0 int16 = 0
	TV2 int16 = 2
)

func supportsEpochBump(tv int16) bool { return tv >= TV2 }

// noProducerID and noProducerEpoch are RecordBatch.NO_PRODUCER_ID/EPOCH.
const (
	noProducerID    int64 = -1
	noProducerEpoch int16 = -1
)

// epochExhausted: no epoch is handed out at MaxInt16-1 or above, so that
// the coordinator can always fence the current producer with one more.
func epochExhausted(e int16) bool { return e >= math.MaxInt16-1 }

// TopicPartition names a partition in a transaction.
type TopicPartition struct {
	Topic     string
	Partition int32
}

func (tp TopicPartition) String() string { return fmt.Sprintf("%s-%d", tp.Topic, tp.Partition) }

func comparePartitions(a, b TopicPartition) int {
	if c := strings.Compare(a.Topic, b.Topic); c != 0 {
		return c
	}
	return int(a.Partition) - int(b.Partition)
}

// txnMetadata is one transactional id's state (Kafka's TransactionMetadata).
// Every field is guarded by mu, except the id.
type txnMetadata struct {
	id string
	mu sync.Mutex

	producerID        int64
	prevProducerID    int64 // the producer id before the last rotation
	nextProducerID    int64 // the id a completing transaction rotates to (TV2, epoch exhausted)
	producerEpoch     int16
	lastProducerEpoch int16 // the epoch before the last bump, for retries
	timeoutMs         int32
	state             State
	partitions        map[TopicPartition]struct{}
	startMs           int64 // when the transaction began (first partition added); -1
	lastUpdateMs      int64
	clientTV          int16 // transaction version of the client's last transition

	// pending is the state a transition in flight (being written to
	// __transaction_state) goes to, noState if none: another transition
	// must not start meanwhile (CONCURRENT_TRANSACTIONS).
	pending State
	// failedEpochFence: a fence's write failed after its epoch was taken,
	// so the next fence reuses that epoch instead of bumping again.
	failedEpochFence bool
}

func newTxnMetadata(id string) *txnMetadata {
	return &txnMetadata{id: id, producerID: noProducerID, prevProducerID: noProducerID,
		nextProducerID: noProducerID, producerEpoch: noProducerEpoch, lastProducerEpoch: noProducerEpoch,
		state: Empty, partitions: map[TopicPartition]struct{}{}, startMs: -1, pending: noState}
}

func (m *txnMetadata) lock()   { m.mu.Lock() }
func (m *txnMetadata) unlock() { m.mu.Unlock() }

// sortedPartitions lists the transaction's partitions in a stable order.
func (m *txnMetadata) sortedPartitions() []TopicPartition {
	out := make([]TopicPartition, 0, len(m.partitions))
	for tp := range m.partitions {
		out = append(out, tp)
	}
	slices.SortFunc(out, comparePartitions)
	return out
}

// transit is the state a transition leads to (Kafka's TxnTransitMetadata):
// written to __transaction_state first, applied by complete once written.
type transit struct {
	producerID        int64
	prevProducerID    int64
	nextProducerID    int64
	producerEpoch     int16
	lastProducerEpoch int16
	timeoutMs         int32
	state             State
	partitions        map[TopicPartition]struct{}
	startMs           int64
	lastUpdateMs      int64
	clientTV          int16
}

// current returns the transit that changes nothing, to be edited.
func (m *txnMetadata) current(to State) transit {
	return transit{producerID: m.producerID, prevProducerID: m.prevProducerID, nextProducerID: m.nextProducerID,
		producerEpoch: m.producerEpoch, lastProducerEpoch: m.lastProducerEpoch, timeoutMs: m.timeoutMs, state: to,
		partitions: m.partitions, startMs: m.startMs, lastUpdateMs: m.lastUpdateMs, clientTV: m.clientTV}
}

// errIllegalTransition is a programming error caught instead of corrupting
// the state; callers answer it as an unknown server error.
type errIllegalTransition struct{ msg string }

func (e *errIllegalTransition) Error() string { return e.msg }

// prepare marks t as the pending transition (Kafka's prepareTransitionTo).
// The transit's previous producer id is the current one, as Kafka sets it.
func (m *txnMetadata) prepare(t transit) (transit, error) {
	if m.pending != noState {
		return t, &errIllegalTransition{fmt.Sprintf("transactional id %s: transition to %s while %s is pending", m.id, t.state, m.pending)}
	}
	if t.producerID < 0 {
		return t, &errIllegalTransition{fmt.Sprintf("transactional id %s: illegal producer id %d", m.id, t.producerID)}
	}
	if t.state != Dead && t.producerEpoch < 0 {
		return t, &errIllegalTransition{fmt.Sprintf("transactional id %s: illegal producer epoch %d", m.id, t.producerEpoch)}
	}
	if !t.state.validPrevious(m.state) {
		return t, &errIllegalTransition{fmt.Sprintf("transactional id %s: %s cannot follow %s", m.id, t.state, m.state)}
	}
	t.prevProducerID = m.producerID
	m.pending = t.state
	return t, nil
}

// complete applies a written transition (Kafka's completeTransitionTo).
func (m *txnMetadata) complete(t transit) {
	m.producerID, m.prevProducerID, m.nextProducerID = t.producerID, t.prevProducerID, t.nextProducerID
	m.producerEpoch, m.lastProducerEpoch = t.producerEpoch, t.lastProducerEpoch
	m.timeoutMs, m.state, m.partitions = t.timeoutMs, t.state, t.partitions
	m.startMs, m.lastUpdateMs, m.clientTV = t.startMs, t.lastUpdateMs, t.clientTV
	m.pending = noState
}

// prepareFenceProducerEpoch bumps the epoch to fence the current producer
// before aborting its transaction (InitProducerId during a transaction,
// timeouts). The bumped epoch is never returned to a client.
func (m *txnMetadata) prepareFenceProducerEpoch() (transit, error) {
	if m.producerEpoch == math.MaxInt16 {
		return transit{}, &errIllegalTransition{"cannot fence producer with epoch MaxInt16"}
	}
	t := m.current(PrepareEpochFence)
	if !m.failedEpochFence {
		t.producerEpoch = m.producerEpoch + 1
	}
	return m.prepare(t)
}

// prepareIncrementProducerEpoch is InitProducerId on a complete (or empty)
// transactional id; expected is the client's current epoch (v3+, -1 none).
// It returns errProducerFenced for an epoch that is neither the current
// nor the last one.
func (m *txnMetadata) prepareIncrementProducerEpoch(timeoutMs int32, expected int16, hasExpected bool, nowMs int64) (transit, error) {
	if epochExhausted(m.producerEpoch) {
		return transit{}, &errIllegalTransition{fmt.Sprintf("no epoch left for producer id %d", m.producerID)}
	}
	t := m.current(Empty)
	bumped := m.producerEpoch + 1
	switch {
	case !hasExpected:
		t.producerEpoch, t.lastProducerEpoch = bumped, noProducerEpoch
	case m.producerEpoch == noProducerEpoch || expected == m.producerEpoch:
		t.producerEpoch, t.lastProducerEpoch = bumped, m.producerEpoch
	case expected == m.lastProducerEpoch:
		// A retry of a bump whose answer was lost: answer it again.
	default:
		return transit{}, errProducerFenced
	}
	t.timeoutMs, t.partitions, t.startMs, t.lastUpdateMs = timeoutMs, map[TopicPartition]struct{}{}, -1, nowMs
	return m.prepare(t)
}

// prepareProducerIDRotation moves the transactional id to a new producer id
// at epoch 0 once the epochs of the old one are exhausted.
func (m *txnMetadata) prepareProducerIDRotation(newID int64, timeoutMs int32, nowMs int64, recordLastEpoch bool) (transit, error) {
	if m.state == Ongoing || m.state == PrepareAbort || m.state == PrepareCommit {
		return transit{}, &errIllegalTransition{"cannot rotate producer ids while a transaction is pending"}
	}
	t := m.current(Empty)
	t.producerID, t.prevProducerID, t.producerEpoch = newID, m.producerID, 0
	t.lastProducerEpoch = noProducerEpoch
	if recordLastEpoch {
		t.lastProducerEpoch = m.producerEpoch
	}
	t.timeoutMs, t.partitions, t.startMs, t.lastUpdateMs = timeoutMs, map[TopicPartition]struct{}{}, -1, nowMs
	return m.prepare(t)
}

// prepareAddPartitions starts or extends the transaction.
func (m *txnMetadata) prepareAddPartitions(add []TopicPartition, nowMs int64, tv int16) (transit, error) {
	t := m.current(Ongoing)
	if m.state == Empty || m.state == CompleteAbort || m.state == CompleteCommit {
		t.startMs = nowMs
	}
	t.partitions = make(map[TopicPartition]struct{}, len(m.partitions)+len(add))
	for tp := range m.partitions {
		t.partitions[tp] = struct{}{}
	}
	for _, tp := range add {
		t.partitions[tp] = struct{}{}
	}
	t.lastUpdateMs, t.clientTV = nowMs, tv
	return m.prepare(t)
}

// prepareAbortOrCommit is EndTxn's first step (PrepareCommit/PrepareAbort).
// With transaction version 2 the epoch is bumped; nextProducerID is the id
// to rotate to when the epoch is exhausted (else -1).
func (m *txnMetadata) prepareAbortOrCommit(to State, tv int16, nextProducerID int64, nowMs int64, noPartitionAdded bool) (transit, error) {
	t := m.current(to)
	if supportsEpochBump(tv) {
		t.producerEpoch, t.lastProducerEpoch = m.producerEpoch+1, m.producerEpoch
	}
	if noPartitionAdded {
		t.startMs = nowMs
	}
	t.nextProducerID, t.lastUpdateMs, t.clientTV = nextProducerID, nowMs, tv
	return m.prepare(t)
}

// prepareComplete is the last step, once every marker is written.
func (m *txnMetadata) prepareComplete(nowMs int64) (transit, error) {
	m.failedEpochFence = false
	to := CompleteAbort
	if m.state == PrepareCommit {
		to = CompleteCommit
	}
	t := m.current(to)
	if supportsEpochBump(m.clientTV) && m.nextProducerID != noProducerID {
		t.producerID, t.producerEpoch = m.nextProducerID, 0
	}
	t.nextProducerID = noProducerID
	t.partitions = map[TopicPartition]struct{}{}
	t.lastUpdateMs = nowMs
	return m.prepare(t)
}

// prepareDead marks an expired transactional id for removal.
func (m *txnMetadata) prepareDead() (transit, error) {
	t := m.current(Dead)
	t.partitions = map[TopicPartition]struct{}{}
	return m.prepare(t)
}
