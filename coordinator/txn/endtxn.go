package txn

import (
	"context"
	"math"

	"github.com/twmb/franz-go/pkg/kerr"
)

// EndTxn commits or aborts the producer's transaction (Kafka's
// handleEndTransaction). tv is the client's transaction version: EndTxn v5+
// is version 2, older ones version 0. It returns an error code and, with
// version 2, the producer id and epoch the client continues with (the epoch
// is bumped by every EndTxn); -1, -1 otherwise.
//
// The transaction moves to PrepareCommit or PrepareAbort in
// __transaction_state, the client is answered, and the markers are written
// to every partition of the transaction in the background, after which it
// moves to CompleteCommit or CompleteAbort. Until then the transactional id
// answers CONCURRENT_TRANSACTIONS to InitProducerId, AddPartitionsToTxn and
// a repeated EndTxn.
func (c *Coordinator) EndTxn(id string, producerID int64, epoch int16, commit bool, tv int16) (int16, int64, int16) {
	return c.endTransaction(id, producerID, epoch, commit, true, tv)
}

// endTransaction is EndTxn also for the aborts the coordinator starts
// (fromClient false: timeouts and InitProducerId fencing an open
// transaction, at the epoch just fenced).
func (c *Coordinator) endTransaction(id string, producerID int64, epoch int16, commit, fromClient bool, tv int16) (int16, int64, int16) {
	fail := func(code int16) (int16, int64, int16) { return code, noProducerID, noProducerEpoch }
	if id == "" {
		return fail(kerr.InvalidRequest.Code)
	}
	sh, code := c.shardOf(id)
	if code != 0 {
		return fail(code)
	}
	m := sh.get(id)
	if m == nil {
		return fail(kerr.InvalidProducerIDMapping.Code)
	}

	m.lock()
	t, isEpochFence, done, code := c.prepareEnd(m, producerID, epoch, commit, fromClient, tv)
	if code == kerr.ProducerFenced.Code && fromClient {
		c.logFenced("EndTxn", m, producerID, epoch)
	}
	if code != 0 && !fromClient && m.pending == PrepareEpochFence {
		// A fence that cannot proceed must not block the id forever.
		m.pending = noState
	}
	curID, curEpoch := m.producerID, m.producerEpoch
	m.unlock()
	if done {
		if supportsEpochBump(tv) {
			return 0, curID, curEpoch
		}
		return fail(0)
	}
	if code != 0 {
		return fail(code)
	}

	if code := c.write(sh, m, t, false); code != 0 {
		c.logger.Info("ending a transaction failed to write its prepare state", "transactional_id", id, "commit", commit, "code", code)
		if isEpochFence && c.owns(sh) {
			// The epoch was taken but never written: the next fence reuses it.
			m.lock()
			m.failedEpochFence = true
			m.unlock()
		}
		return fail(code)
	}

	m.lock()
	var complete transit
	switch {
	case !c.owns(sh):
		code = kerr.NotCoordinator.Code
	case m.producerID != producerID:
		code = kerr.InvalidProducerIDMapping.Code
	case m.producerEpoch != epoch && !(supportsEpochBump(tv) && m.producerEpoch == epoch+1):
		code = kerr.ProducerFenced.Code
	case m.pending != noState:
		code = kerr.ConcurrentTransactions.Code
	case commit && m.state != PrepareCommit, !commit && m.state != PrepareAbort:
		code = c.invalidTxnState(id, m.state, commit)
	default:
		var err error
		if complete, err = m.prepareComplete(c.now().UnixMilli()); err != nil {
			code = c.illegal(err)
		}
	}
	respID, respEpoch := m.producerID, m.producerEpoch
	if m.nextProducerID != noProducerID {
		// The epochs of this producer id are exhausted: the client goes on
		// with the next id, which the transaction's completion rotates to.
		respID, respEpoch = m.nextProducerID, 0
	}
	m.unlock()
	if code != 0 {
		return fail(code)
	}
	c.startMarkers(sh, m, commit, complete)
	if supportsEpochBump(tv) {
		return 0, respID, respEpoch
	}
	return fail(0)
}

// prepareEnd checks an EndTxn against the state under m's lock and prepares
// its transition. done reports an EndTxn already complete (a retry),
// answered without error.
func (c *Coordinator) prepareEnd(m *txnMetadata, producerID int64, epoch int16, commit, fromClient bool, tv int16) (t transit, isEpochFence, done bool, code int16) {
	next := PrepareAbort
	if commit {
		next = PrepareCommit
	}
	if !supportsEpochBump(tv) {
		return c.prepareEndV1(m, producerID, epoch, commit, fromClient, next)
	}

	// Transaction version 2: the epoch of a retry is one below the current
	// one (the first attempt bumped it), or the last epoch of the previous
	// producer id when the bump rotated ids.
	isEpochFence = m.pending == PrepareEpochFence
	retryOnOverflow := !isEpochFence && m.prevProducerID == producerID && epoch == math.MaxInt16-1 && m.producerEpoch == 0
	retryOnEpochBump := !isEpochFence && m.producerEpoch == epoch+1
	var validEpoch bool
	if isEpochFence {
		validEpoch = (!fromClient || epoch == m.producerEpoch) && epoch >= m.producerEpoch
	} else {
		switch m.state {
		case PrepareCommit, PrepareAbort:
			validEpoch = retryOnEpochBump
		case CompleteCommit, CompleteAbort:
			validEpoch = retryOnEpochBump || retryOnOverflow || epoch == m.producerEpoch
		default:
			validEpoch = epoch == m.producerEpoch
		}
	}
	isRetry := retryOnEpochBump || retryOnOverflow

	gen := func(to State, noPartitionAdded bool) (transit, bool, bool, int16) {
		nextID := noProducerID
		if !isEpochFence && epochExhausted(m.producerEpoch) {
			id, err := c.broker.NewProducerID(context.Background())
			if err != nil {
				return transit{}, isEpochFence, false, producerIDErrorCode(err)
			}
			nextID = id
		}
		if to == PrepareAbort && isEpochFence {
			m.pending = noState
			m.producerEpoch, m.lastProducerEpoch = epoch, noProducerEpoch
		}
		t, err := m.prepareAbortOrCommit(to, TV2, nextID, c.now().UnixMilli(), noPartitionAdded)
		if err != nil {
			return transit{}, isEpochFence, false, c.illegal(err)
		}
		return t, isEpochFence, false, 0
	}
	its := func() (transit, bool, bool, int16) {
		return transit{}, isEpochFence, false, c.invalidTxnState(m.id, m.state, commit)
	}

	// A transition in flight comes before the epoch check (KAFKA-18464):
	// an EndTxn at the epoch the previous EndTxn returned, while that
	// one's markers are still being written, is CONCURRENT_TRANSACTIONS,
	// not a fenced producer.
	switch {
	case m.producerID != producerID && !retryOnOverflow:
		return transit{}, isEpochFence, false, kerr.InvalidProducerIDMapping.Code
	case m.pending != noState && m.pending != PrepareEpochFence:
		return transit{}, isEpochFence, false, kerr.ConcurrentTransactions.Code
	case !validEpoch:
		return transit{}, isEpochFence, false, kerr.ProducerFenced.Code
	}
	switch m.state {
	case Ongoing:
		return gen(next, false)
	case CompleteCommit:
		switch {
		case commit && isRetry:
			return transit{}, isEpochFence, true, 0
		case commit, isRetry:
			return its()
		}
		return gen(PrepareAbort, true)
	case CompleteAbort:
		switch {
		case commit && isRetry:
			// The coordinator aborted the transaction itself (a timeout)
			// while the client's commit was on its way: the producer is
			// fenced, which clients recover from (KAFKA-20785).
			return transit{}, isEpochFence, false, kerr.ProducerFenced.Code
		case commit:
			return its()
		case isRetry:
			return transit{}, isEpochFence, true, 0
		}
		return gen(PrepareAbort, true)
	case PrepareCommit:
		if commit {
			return transit{}, isEpochFence, false, kerr.ConcurrentTransactions.Code
		}
		return its()
	case PrepareAbort:
		if !commit {
			return transit{}, isEpochFence, false, kerr.ConcurrentTransactions.Code
		}
		return its()
	case Empty:
		if !commit {
			return gen(PrepareAbort, true)
		}
		return its()
	}
	return transit{}, isEpochFence, false, c.illegal(&errIllegalTransition{"EndTxn on " + m.id + " in state " + m.state.String()})
}

// prepareEndV1 is Kafka's endTransactionWithTV1: the epoch stays, and a
// repeated EndTxn after completion succeeds if it asks the same outcome.
func (c *Coordinator) prepareEndV1(m *txnMetadata, producerID int64, epoch int16, commit, fromClient bool, next State) (transit, bool, bool, int16) {
	switch {
	case m.producerID != producerID:
		return transit{}, false, false, kerr.InvalidProducerIDMapping.Code
	case (fromClient && epoch != m.producerEpoch) || epoch < m.producerEpoch:
		return transit{}, false, false, kerr.ProducerFenced.Code
	case m.pending != noState && m.pending != PrepareEpochFence:
		return transit{}, false, false, kerr.ConcurrentTransactions.Code
	}
	its := func() (transit, bool, bool, int16) {
		return transit{}, false, false, c.invalidTxnState(m.id, m.state, commit)
	}
	switch m.state {
	case Ongoing:
		isEpochFence := false
		if next == PrepareAbort && m.pending == PrepareEpochFence {
			isEpochFence = true
			m.pending = noState
			m.producerEpoch, m.lastProducerEpoch = epoch, noProducerEpoch
		}
		t, err := m.prepareAbortOrCommit(next, TV0, noProducerID, c.now().UnixMilli(), false)
		if err != nil {
			return transit{}, isEpochFence, false, c.illegal(err)
		}
		return t, isEpochFence, false, 0
	case CompleteCommit:
		if commit {
			return transit{}, false, true, 0
		}
		return its()
	case CompleteAbort:
		if !commit {
			return transit{}, false, true, 0
		}
		return its()
	case PrepareCommit:
		if commit {
			return transit{}, false, false, kerr.ConcurrentTransactions.Code
		}
		return its()
	case PrepareAbort:
		if !commit {
			return transit{}, false, false, kerr.ConcurrentTransactions.Code
		}
		return its()
	case Empty:
		return its()
	}
	return transit{}, false, false, c.illegal(&errIllegalTransition{"EndTxn on " + m.id + " in state " + m.state.String()})
}

func (c *Coordinator) invalidTxnState(id string, st State, commit bool) int16 {
	c.logger.Warn("transaction end does not fit the transaction's state", "transactional_id", id, "state", st, "commit", commit)
	return kerr.InvalidTxnState.Code
}
