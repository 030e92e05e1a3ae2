package txn

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
)

// InitProducerID is InitProducerId for a transactional id (Kafka's
// TransactionCoordinator.handleInitProducerId). producerID and epoch are
// the client's current ones (v3+, KIP-360), -1 when it has none. It returns
// the producer id and epoch to use, or an error code:
//
//   - a new transactional id gets a new producer id at epoch 0;
//   - a complete (or empty) one gets its epoch bumped, which fences the
//     previous producer; a retry with the previous epoch gets the same
//     answer again; another epoch is PRODUCER_FENCED; an exhausted epoch
//     moves to a new producer id;
//   - an open transaction is aborted first (its epoch fenced) and
//     CONCURRENT_TRANSACTIONS answered, as for a transaction being
//     committed or aborted: the client retries until it is complete.
func (c *Coordinator) InitProducerID(ctx context.Context, id string, timeoutMs int32, producerID int64, epoch int16) (int64, int16, int16) {
	fail := func(code int16) (int64, int16, int16) { return noProducerID, noProducerEpoch, code }
	if id == "" {
		return fail(kerr.InvalidRequest.Code)
	}
	if !c.ValidTimeout(timeoutMs) {
		return fail(kerr.InvalidTransactionTimeout.Code)
	}
	sh, code := c.shardOf(id)
	if code != 0 {
		return fail(code)
	}
	m := sh.get(id)
	if m == nil {
		pid, err := c.broker.NewProducerID(ctx)
		if err != nil {
			return fail(producerIDErrorCode(err))
		}
		created := newTxnMetadata(id)
		created.producerID, created.timeoutMs, created.lastUpdateMs = pid, timeoutMs, c.now().UnixMilli()
		m = sh.putIfAbsent(created)
	}
	hasExpected := producerID >= 0

	m.lock()
	t, fence, code := c.prepareInit(ctx, m, timeoutMs, producerID, epoch, hasExpected)
	m.unlock()
	if code != 0 {
		return fail(code)
	}
	if fence {
		// Abort the open transaction at the fenced epoch; the client
		// retries and gets its epoch once the abort is complete.
		code, _, _ := c.endTransaction(id, t.producerID, t.producerEpoch, false, false, c.cfg.TransactionVersion)
		if code == 0 {
			code = kerr.ConcurrentTransactions.Code
		}
		return fail(code)
	}
	if code := c.write(sh, m, t, false); code != 0 {
		return fail(code)
	}
	c.logger.Info("initialized transactional id", "transactional_id", id, "producer_id", t.producerID,
		"producer_epoch", t.producerEpoch, "partition", sh.partition)
	return t.producerID, t.producerEpoch, 0
}

// prepareInit is Kafka's prepareInitProducerIdTransit, under m's lock.
func (c *Coordinator) prepareInit(ctx context.Context, m *txnMetadata, timeoutMs int32, producerID int64, epoch int16, hasExpected bool) (transit, bool, int16) {
	validProducerID := !hasExpected || m.producerEpoch == noProducerEpoch || producerID == m.producerID ||
		(producerID == m.prevProducerID && epochExhausted(epoch))
	switch {
	case m.pending != noState:
		return transit{}, false, kerr.ConcurrentTransactions.Code
	case !validProducerID:
		return transit{}, false, kerr.ProducerFenced.Code
	}
	switch m.state {
	case PrepareAbort, PrepareCommit:
		return transit{}, false, kerr.ConcurrentTransactions.Code
	case CompleteAbort, CompleteCommit, Empty:
		var t transit
		var err error
		if epochExhausted(m.producerEpoch) && (!hasExpected || epoch == m.producerEpoch) {
			pid, perr := c.broker.NewProducerID(ctx)
			if perr != nil {
				return transit{}, false, producerIDErrorCode(perr)
			}
			t, err = m.prepareProducerIDRotation(pid, timeoutMs, c.now().UnixMilli(), hasExpected)
		} else {
			t, err = m.prepareIncrementProducerEpoch(timeoutMs, epoch, hasExpected, c.now().UnixMilli())
		}
		if err != nil {
			return transit{}, false, c.illegal(err)
		}
		return t, false, 0
	case Ongoing:
		t, err := m.prepareFenceProducerEpoch()
		if err != nil {
			return transit{}, false, c.illegal(err)
		}
		return t, true, 0
	}
	return transit{}, false, c.illegal(&errIllegalTransition{"InitProducerId on transactional id " + m.id + " in state " + m.state.String()})
}

// producerIDErrorCode maps a failed producer id allocation: Kafka answers
// what its id manager threw, COORDINATOR_LOAD_IN_PROGRESS while a block is
// on its way.
func producerIDErrorCode(err error) int16 {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	return kerr.CoordinatorLoadInProgress.Code
}
