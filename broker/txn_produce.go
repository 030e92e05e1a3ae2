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
// The coordinator is this broker's (one broker coordinates everything);
// the request's read loop waits for it, which keeps a connection's
// produces in order as Kafka's muted channel does.
// transaction.partition.verification.enable=false skips all of it.

import (
	"encoding/binary"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/coordinator/txn"
	"github.com/strait/strait/storage"
)

// txnProduce is the transaction verification of one produce request.
type txnProduce struct {
	verify bool // transaction.partition.verification.enable
	guards map[txn.TopicPartition]*storage.VerificationGuard
	errs   map[txn.TopicPartition]txnProduceErr
}

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
	if len(records) < 61 || records[16] != 2 {
		return 0, 0, 0, false
	}
	be := binary.BigEndian
	attrs := be.Uint16(records[21:])
	producerID = int64(be.Uint64(records[43:]))
	if attrs&0x10 == 0 || producerID < 0 {
		return 0, 0, 0, false
	}
	return producerID, int16(be.Uint16(records[51:])), int32(be.Uint32(records[53:])), true
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
		return &txnProduce{verify: true}
	}
	tp := &txnProduce{verify: verify, guards: map[txn.TopicPartition]*storage.VerificationGuard{}, errs: map[txn.TopicPartition]txnProduceErr{}}
	if !verify {
		return tp
	}
	producerID, epoch, seen, mixed := int64(-1), int16(-1), false, false
	type candidate struct {
		tp      txn.TopicPartition
		p       *partition
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
			p := s.parts.get(rt.Topic, rp.Partition)
			if p == nil || !p.isLeader(s.cfg.NodeID) {
				continue // produceTo answers it
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
	var need []txn.TopicPartition
	for _, cd := range cands {
		if g := cd.p.log.StartTxnVerification(producerID, epoch, cd.baseSeq); g != nil {
			tp.guards[cd.tp] = g
			need = append(need, cd.tp)
		}
	}
	if len(need) == 0 {
		return tp
	}
	codes := map[txn.TopicPartition]int16{}
	switch coord := s.txnCoordinator(); {
	case coord == nil:
		for _, key := range need {
			codes[key] = kerr.CoordinatorNotAvailable.Code
		}
	case version >= 12:
		code := coord.AddPartitions(*req.TransactionID, producerID, epoch, need, txn.TV2)
		for _, key := range need {
			codes[key] = code
		}
	default:
		codes = coord.VerifyPartitions(*req.TransactionID, producerID, epoch, need)
	}
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
// transaction must present its guard.
func (s *Server) appendProduced(p *partition, records []byte, t *txnProduce, topic string, idx int32) (storage.AppendInfo, error) {
	if t == nil || !t.verify {
		return s.appendAsLeader(p, records)
	}
	info, err := p.log.AppendAsLeaderVerified(records, p.leaderEpoch(), t.guard(topic, idx))
	if err != nil {
		return info, err
	}
	s.appended(p)
	return info, nil
}
