package broker

// Transactional produce requests, as Kafka's ReplicaManager.
// handleProduceAppend with its AddPartitionsToTxnManager (KIP-890):
//
//   - a request whose batches are transactional carries one producer id
//     (else every partition is INVALID_PRODUCER_ID_MAPPING);
//   - for each partition where the producer has no transaction open yet,
//     the partition log starts a verification (storage's VerificationGuard)
//     and the transaction coordinator is asked: from Produce v12 (clients
//     running transaction version 2) to add the partitions to the
//     transaction, below that only to confirm they were added by the
//     client's AddPartitionsToTxn;
//   - the coordinator's PRODUCER_FENCED becomes INVALID_PRODUCER_EPOCH,
//     TRANSACTION_ABORTABLE becomes INVALID_TXN_STATE below Produce v11
//     (clients that do not know it), INVALID_TXN_STATE says "Partition was
//     not added to the transaction", and retriable coordinator errors
//     (CONCURRENT_TRANSACTIONS, COORDINATOR_*, NOT_COORDINATOR) become
//     NOT_ENOUGH_REPLICAS, which old clients retry without a metadata
//     refresh;
//   - the append then presents the guard; a transactional batch that opens
//     a transaction without a valid one is INVALID_TXN_STATE.
//
// The coordinator is the leader of the transactional id's
// __transaction_state partition: this broker's own, or another broker asked
// with AddPartitionsToTxn v4+; the request's read loop waits for it, which
// keeps a connection's produces in order as Kafka's muted channel does.
// transaction.partition.verification.enable=false skips all of it.

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/coordinator/txn"
	"github.com/strait/strait/recordbatch"
	"github.com/strait/strait/replication"
	"github.com/strait/strait/storage"
)

// txnProduce is the transaction verification of one produce request.
type txnProduce struct {
	verify bool // transaction.partition.verification.enable
	guards map[txn.TopicPartition]*storage.VerificationGuard
	errs   map[txn.TopicPartition]txnProduceErr
}

// verifyNothing is the verification of a produce request without a
// transactional id: nothing to check, shared and never modified.
var verifyNothing = &txnProduce{verify: true}

type txnProduceErr struct {
	code int16
	msg  string
}

// guard returns the partition's verification guard (nil: none needed).
func (t *txnProduce) guard(topic string, idx int32) *storage.VerificationGuard {
	if t == nil {
		return nil
	}
	return t.guards[txn.TopicPartition{Topic: topic, Partition: idx}]
}

// failure returns the error verification gave the partition, if any.
func (t *txnProduce) failure(topic string, idx int32) (int16, string, bool) {
	if t == nil {
		return 0, "", false
	}
	e, ok := t.errs[txn.TopicPartition{Topic: topic, Partition: idx}]
	return e.code, e.msg, ok
}

// transactionalBatch reads the producer fields of a produce partition's
// first batch, ok only for a transactional one with a producer id.
func transactionalBatch(records []byte) (producerID int64, epoch int16, baseSeq int32, ok bool) {
	if len(records) < recordbatch.HeaderSize || records[recordbatch.PosMagic] != recordbatch.MagicV2 {
		return 0, 0, 0, false
	}
	b := recordbatch.Batch(records)
	if !b.IsTransactional() || b.ProducerID() < 0 {
		return 0, 0, 0, false
	}
	return b.ProducerID(), b.ProducerEpoch(), b.BaseSequence(), true
}

// verifyTransaction runs a produce request's transaction verification
// before its appends; nil when the request has no transactional id.
func (s *Server) verifyTransaction(req *kmsg.ProduceRequest, version int16) *txnProduce {
	svc := s.txns()
	verify := svc == nil || svc.settings.verification
	if req.TransactionID == nil {
		if !verify {
			return nil
		}
		return verifyNothing
	}
	tp := &txnProduce{verify: verify, guards: map[txn.TopicPartition]*storage.VerificationGuard{}, errs: map[txn.TopicPartition]txnProduceErr{}}
	if !verify {
		return tp
	}
	producerID, epoch, seen, mixed := int64(-1), int16(-1), false, false
	type candidate struct {
		tp      txn.TopicPartition
		p       *replication.Partition
		baseSeq int32
	}
	var cands []candidate
	var all []txn.TopicPartition
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			key := txn.TopicPartition{Topic: rt.Topic, Partition: rp.Partition}
			all = append(all, key)
			pid, e, seq, ok := transactionalBatch(rp.Records)
			if !ok {
				continue
			}
			if seen && (pid != producerID || e != epoch) {
				mixed = true
			}
			producerID, epoch, seen = pid, e, true
			// Answered here, as Kafka's Partition.maybeStartTransactionVerification
			// does, and not left to produceTo: a replica that becomes the
			// leader before the append would take the batch unverified
			// (INVALID_TXN_STATE for a client that only has to retry).
			p := s.replicas.Partition(rt.Topic, rp.Partition)
			if p == nil {
				tp.errs[key] = txnProduceErr{code: s.missingPartitionCode(rt.Topic, rp.Partition)}
				continue
			}
			if !p.IsLeader() {
				tp.errs[key] = txnProduceErr{code: kerr.NotLeaderForPartition.Code}
				continue
			}
			cands = append(cands, candidate{tp: key, p: p, baseSeq: seq})
		}
	}
	if mixed {
		for _, key := range all {
			tp.errs[key] = txnProduceErr{code: kerr.InvalidProducerIDMapping.Code, msg: "Transactional records contained more than one producer ID"}
		}
		return tp
	}
	// The guards start before the coordinator is asked, as Kafka's; a
	// retry starts them again (a marker landing meanwhile ends them).
	startGuards := func() []txn.TopicPartition {
		var need []txn.TopicPartition
		for _, cd := range cands {
			delete(tp.guards, cd.tp)
			if g := cd.p.Log().StartTxnVerification(producerID, epoch, cd.baseSeq, version >= 12); g != nil {
				tp.guards[cd.tp] = g
				need = append(need, cd.tp)
			}
		}
		return need
	}
	codes := s.askTxnCoordinator(*req.TransactionID, producerID, epoch, startGuards, version)
	for key, code := range codes {
		if code == 0 {
			continue
		}
		if code == kerr.ProducerFenced.Code {
			code = kerr.InvalidProducerEpoch.Code
		}
		if code == kerr.TransactionAbortable.Code && version <= 10 {
			code = kerr.InvalidTxnState.Code
		}
		e := txnProduceErr{code: code}
		switch code {
		case kerr.InvalidTxnState.Code:
			e.msg = "Partition was not added to the transaction"
		case kerr.ConcurrentTransactions.Code, kerr.NetworkException.Code, kerr.CoordinatorLoadInProgress.Code,
			kerr.CoordinatorNotAvailable.Code, kerr.NotCoordinator.Code:
			e = txnProduceErr{code: kerr.NotEnoughReplicas.Code,
				msg: "Unable to verify the partition has been added to the transaction. Underlying error: " + kerr.ErrorForCode(code).(*kerr.Error).Message}
		}
		tp.errs[key] = e
	}
	return tp
}

// appendProduced appends a produce request's batch (appendAsLeader's
// client side): with verification on, a transactional batch opening a
// transaction must present its guard. The partition's parked fetches are
// not woken: appendAll wakes them once every partition is appended.
func (s *Server) appendProduced(p *replication.Partition, records []byte, t *txnProduce, topic string, idx int32) (storage.AppendInfo, error) {
	var info storage.AppendInfo
	var err error
	if t == nil || !t.verify {
		info, err = p.Log().AppendAsLeader(records, p.LeaderEpoch())
	} else {
		info, err = p.Log().AppendAsLeaderVerified(records, p.LeaderEpoch(), t.guard(topic, idx))
	}
	if err != nil {
		return info, err
	}
	// The parked fetches wake once the request's appends are all done
	// (appendAll).
	p.AppendedNoWake()
	return info, nil
}

// askTxnCoordinator verifies (below Produce v12) or adds (v12+, transaction
// version 2) a produce's partitions with the transactional id's coordinator,
// here or on another broker. CONCURRENT_TRANSACTIONS, which the previous
// transaction's markers still being written give, is retried here for a
// short while (they take milliseconds, more when they go to other brokers):
// the client would otherwise see NOT_ENOUGH_REPLICAS and back off for far
// longer than the markers take.
func (s *Server) askTxnCoordinator(id string, producerID int64, epoch int16, startGuards func() []txn.TopicPartition, version int16) map[txn.TopicPartition]int16 {
	deadline := time.Now().Add(concurrentTxnRetryFor)
	for backoff := time.Millisecond; ; backoff = min(2*backoff, 50*time.Millisecond) {
		codes := map[txn.TopicPartition]int16{}
		need := startGuards()
		if len(need) == 0 {
			return codes
		}
		switch coord, remote := s.txnCoordinator(), s.remoteTxnCoordinator(id); {
		case remote >= 0:
			// Another broker coordinates this transactional id: ask it with
			// AddPartitionsToTxn v4+ as Kafka's AddPartitionsToTxnManager
			// does (verify-only below Produce v12).
			codes = s.addPartitionsRemotely(remote, id, producerID, epoch, need, version < 12)
		case coord == nil:
			for _, key := range need {
				codes[key] = kerr.CoordinatorNotAvailable.Code
			}
		case version >= 12:
			code := coord.AddPartitions(id, producerID, epoch, need, txn.TV2)
			for _, key := range need {
				codes[key] = code
			}
		default:
			codes = coord.VerifyPartitions(id, producerID, epoch, need)
		}
		concurrent := false
		for _, code := range codes {
			concurrent = concurrent || code == kerr.ConcurrentTransactions.Code
		}
		if !concurrent || time.Now().Add(backoff).After(deadline) {
			return codes
		}
		select {
		case <-time.After(backoff):
		case <-s.closing:
			return codes
		}
	}
}

// concurrentTxnRetryFor bounds askTxnCoordinator's retries.
const concurrentTxnRetryFor = time.Second

// remoteTxnCoordinator is the broker coordinating transactionalID when it
// is not this one (the leader of its __transaction_state partition), -1
// when it is this broker or unknown (the local coordinator then answers,
// NOT_COORDINATOR if need be).
func (s *Server) remoteTxnCoordinator(transactionalID string) int32 {
	t, ok := s.ctrl.Topic(txn.TopicName)
	if !ok || len(t.Partitions) == 0 {
		return -1
	}
	leader := t.Partitions[txn.PartitionFor(transactionalID, int32(len(t.Partitions)))].Leader
	if leader < 0 || leader == s.cfg.NodeID {
		return -1
	}
	return leader
}

// addPartitionsRemotely sends one transaction's partitions to its
// coordinator on another broker; every partition gets the coordinator's
// answer, or COORDINATOR_NOT_AVAILABLE (retriable) when it cannot be asked.
func (s *Server) addPartitionsRemotely(node int32, transactionalID string, producerID int64, epoch int16,
	parts []txn.TopicPartition, verifyOnly bool) map[txn.TopicPartition]int16 {
	codes := make(map[txn.TopicPartition]int16, len(parts))
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	tr := kmsg.NewAddPartitionsToTxnRequestTransaction()
	tr.TransactionalID, tr.ProducerID, tr.ProducerEpoch, tr.VerifyOnly = transactionalID, producerID, epoch, verifyOnly
	byTopic := map[string]int{}
	for _, tp := range parts {
		codes[tp] = kerr.CoordinatorNotAvailable.Code
		i, ok := byTopic[tp.Topic]
		if !ok {
			i = len(tr.Topics)
			byTopic[tp.Topic] = i
			rt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
			rt.Topic = tp.Topic
			tr.Topics = append(tr.Topics, rt)
		}
		tr.Topics[i].Partitions = append(tr.Topics[i].Partitions, tp.Partition)
	}
	req.Transactions = append(req.Transactions, tr)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	raw, err := s.sendToBroker(ctx, node, req)
	if err != nil {
		s.logger.Debug("asking the transaction coordinator on another broker", "broker", node, "err", err)
		return codes
	}
	resp := raw.(*kmsg.AddPartitionsToTxnResponse)
	if resp.ErrorCode != 0 {
		for tp := range codes {
			codes[tp] = resp.ErrorCode
		}
		return codes
	}
	for _, rtx := range resp.Transactions {
		for _, rt := range rtx.Topics {
			for _, rp := range rt.Partitions {
				tp := txn.TopicPartition{Topic: rt.Topic, Partition: rp.Partition}
				if _, ok := codes[tp]; ok {
					codes[tp] = rp.ErrorCode
				}
			}
		}
	}
	return codes
}
