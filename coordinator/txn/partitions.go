package txn

import (
	"github.com/twmb/franz-go/pkg/kerr"
)

// AddPartitions adds partitions to the producer's transaction, starting it
// if none is open (Kafka's handleAddPartitionsToTransaction): AddPartitionsToTxn
// from clients (tv 0) and, with transaction version 2, the implicit add of
// a produce request or TxnOffsetCommit (tv 2). It returns one error code
// for all partitions: INVALID_PRODUCER_ID_MAPPING for an unknown id or
// another producer id, PRODUCER_FENCED for another epoch,
// CONCURRENT_TRANSACTIONS while a transition is in flight or the
// transaction is being committed or aborted.
func (c *Coordinator) AddPartitions(id string, producerID int64, epoch int16, partitions []TopicPartition, tv int16) int16 {
	if id == "" {
		return kerr.InvalidRequest.Code
	}
	sh, code := c.shardOf(id)
	if code != 0 {
		return code
	}
	m := sh.get(id)
	if m == nil {
		return kerr.InvalidProducerIDMapping.Code
	}
	m.lock()
	var t transit
	switch {
	case m.producerID != producerID:
		code = kerr.InvalidProducerIDMapping.Code
	case m.producerEpoch != epoch:
		c.logFenced("AddPartitionsToTxn", m, producerID, epoch)
		code = kerr.ProducerFenced.Code
	case m.pending != noState, m.state == PrepareCommit, m.state == PrepareAbort:
		code = kerr.ConcurrentTransactions.Code
	case m.state == Ongoing && m.containsAll(partitions):
		m.unlock()
		return 0
	default:
		var err error
		if t, err = m.prepareAddPartitions(partitions, c.now().UnixMilli(), tv); err != nil {
			code = c.illegal(err)
		}
	}
	m.unlock()
	if code != 0 {
		return code
	}
	return c.write(sh, m, t, false)
}

func (m *txnMetadata) containsAll(partitions []TopicPartition) bool {
	for _, tp := range partitions {
		if _, ok := m.partitions[tp]; !ok {
			return false
		}
	}
	return true
}

// VerifyPartitions answers the verify-only AddPartitionsToTxn (v4+) a
// partition leader sends before the first transactional append (Kafka's
// handleVerifyPartitionsInTransaction): per partition, no error if it is
// in the transaction, TRANSACTION_ABORTABLE if not; for all, the errors of
// AddPartitions (but pending transitions are not checked: the append
// itself is guarded).
func (c *Coordinator) VerifyPartitions(id string, producerID int64, epoch int16, partitions []TopicPartition) map[TopicPartition]int16 {
	out := make(map[TopicPartition]int16, len(partitions))
	all := func(code int16) map[TopicPartition]int16 {
		for _, tp := range partitions {
			out[tp] = code
		}
		return out
	}
	if id == "" {
		return all(kerr.InvalidRequest.Code)
	}
	sh, code := c.shardOf(id)
	if code != 0 {
		return all(code)
	}
	m := sh.get(id)
	if m == nil {
		return all(kerr.InvalidProducerIDMapping.Code)
	}
	m.lock()
	defer m.unlock()
	switch {
	case m.producerID != producerID:
		return all(kerr.InvalidProducerIDMapping.Code)
	case m.producerEpoch != epoch:
		c.logFenced("AddPartitionsToTxn (verify only)", m, producerID, epoch)
		return all(kerr.ProducerFenced.Code)
	case m.state == PrepareCommit || m.state == PrepareAbort:
		return all(kerr.ConcurrentTransactions.Code)
	}
	for _, tp := range partitions {
		out[tp] = 0
		if _, ok := m.partitions[tp]; !ok {
			out[tp] = kerr.TransactionAbortable.Code
		}
	}
	return out
}

// AddOffsets adds the __consumer_offsets partition of a group to the
// transaction (AddOffsetsToTxn), for the TxnOffsetCommit that follows.
func (c *Coordinator) AddOffsets(id string, producerID int64, epoch int16, group string) int16 {
	tp, err := c.broker.OffsetsPartition(group)
	if err != nil {
		return appendErrorCode(err)
	}
	return c.AddPartitions(id, producerID, epoch, []TopicPartition{tp}, TV0)
}
