package broker

// TxnOffsetCommit (key 28): offsets committed inside a transaction;
// versions: see the registration below. The group coordinator (coordinator/group) validates the
// group and member and keeps the offsets pending until the transaction's
// marker; this side does what Kafka's CoordinatorRuntime and
// ReplicaManager do around it:
//
//   - the group's __consumer_offsets partition log starts a verification
//     for the producer, unless its transaction is already open there, and
//     the transaction coordinator is asked: from v5 (transaction version 2)
//     to add the partition to the transaction itself, below that to confirm
//     AddOffsetsToTxn added it;
//   - the errors are mapped as Kafka does: PRODUCER_FENCED is
//     INVALID_PRODUCER_EPOCH, TRANSACTION_ABORTABLE is INVALID_TXN_STATE
//     below v4, and the coordinator-runtime mapping applies (NOT_ENOUGH_REPLICAS
//     and UNKNOWN_TOPIC_OR_PARTITION are COORDINATOR_NOT_AVAILABLE,
//     NOT_LEADER_OR_FOLLOWER is NOT_COORDINATOR); every partition of the
//     request gets the error;
//   - the batch is appended as the coordinator's (no sequence) with the
//     guard; below v2, COORDINATOR_LOAD_IN_PROGRESS is
//     COORDINATOR_NOT_AVAILABLE for clients that crashed on it (KAFKA-7296).
//
// When the marker lands on the partition (writeTxnMarker),
// txnOffsetsCompleted settles the producer's pending offsets. v6 (KIP-1319)
// names topics by id (topicids.go): an unknown id is UNKNOWN_TOPIC_ID on
// each of its partitions, before anything else is checked.

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/coordinator/group"
	"github.com/strait/strait/coordinator/txn"
	"github.com/strait/strait/replication"
	"github.com/strait/strait/storage"
)

func init() { register(kmsg.TxnOffsetCommit, 0, 6, handleTxnOffsetCommit) }

func handleTxnOffsetCommit(c *conn, x *exchange) {
	req := x.req.Body.(*kmsg.TxnOffsetCommitRequest)
	respond := x.respond
	resolve := func() {
		if x.req.Version < 6 {
			return
		}
		unknown, fill := c.srv.txnOffsetCommitTopicIDs(req)
		respond = func(r kmsg.Response) {
			resp := r.(*kmsg.TxnOffsetCommitResponse)
			fill(resp)
			resp.Topics = append(resp.Topics, unknown...)
			x.respond(resp)
		}
	}
	answered, denied := c.txnOffsetCommitDenied(x, req, resolve) // authorize.go
	if answered {
		return
	}
	s := c.srv
	svc := s.groups()
	v := x.req.Version
	idx := svc.coord.PartitionFor(req.Group)
	part := s.replicas.Partition(group.TopicName, idx)
	verify := s.txnVerificationEnabled()

	var guard *storage.VerificationGuard
	if verify && req.Group != "" && part != nil && part.IsLeader() {
		var code int16
		guard, code = s.verifyTxnOffsetCommit(req, v, part, idx)
		if code != 0 {
			// The topics refused READ keep their own answer, as in
			// KafkaApis, which merges them with the coordinator's.
			resp := txnOffsetCommitError(req, code)
			resp.Topics = append(resp.Topics, denied...)
			respond(resp)
			return
		}
	}
	write := func(p int32, batch []byte) error {
		target := s.replicas.Partition(group.TopicName, p)
		if target == nil || !target.IsLeader() {
			return fmt.Errorf("%s-%d is not led here: %w", group.TopicName, p, kerr.NotLeaderForPartition)
		}
		g := guard
		if target != part {
			g = nil
		}
		return s.appendCoordinatorBatch(target, batch, verify, g)
	}
	resp := svc.coord.TxnOffsetCommit(groupClient(c, x), req, write)
	resp.Topics = append(resp.Topics, denied...)
	if v < 2 {
		for ti := range resp.Topics {
			for pi := range resp.Topics[ti].Partitions {
				if p := &resp.Topics[ti].Partitions[pi]; p.ErrorCode == kerr.CoordinatorLoadInProgress.Code {
					p.ErrorCode = kerr.CoordinatorNotAvailable.Code
				}
			}
		}
	}
	respond(resp)
}

// verifyTxnOffsetCommit checks (v0-4) or adds (v5+) the group's offsets
// partition in the producer's transaction; it returns the guard the append
// presents, or an error code for the whole request.
func (s *Server) verifyTxnOffsetCommit(req *kmsg.TxnOffsetCommitRequest, version int16, part *replication.Partition, idx int32) (*storage.VerificationGuard, int16) {
	guard := part.Log().StartTxnVerification(req.ProducerID, req.ProducerEpoch, -1, version >= 5)
	if guard == nil {
		return nil, 0
	}
	coord := s.txnCoordinator()
	if coord == nil {
		return nil, kerr.CoordinatorNotAvailable.Code
	}
	tp := txn.TopicPartition{Topic: group.TopicName, Partition: idx}
	var code int16
	if remote := s.remoteTxnCoordinator(req.TransactionalID); remote >= 0 {
		code = s.addPartitionsRemotely(remote, req.TransactionalID, req.ProducerID, req.ProducerEpoch,
			[]txn.TopicPartition{tp}, version < 5)[tp]
	} else if version >= 5 {
		code = coord.AddPartitions(req.TransactionalID, req.ProducerID, req.ProducerEpoch, []txn.TopicPartition{tp}, txn.TV2)
	} else {
		code = coord.VerifyPartitions(req.TransactionalID, req.ProducerID, req.ProducerEpoch, []txn.TopicPartition{tp})[tp]
	}
	switch code {
	case 0:
		return guard, 0
	case kerr.ProducerFenced.Code:
		return nil, kerr.InvalidProducerEpoch.Code
	case kerr.TransactionAbortable.Code:
		if version < 4 {
			return nil, kerr.InvalidTxnState.Code
		}
	case kerr.NetworkException.Code:
		return nil, kerr.CoordinatorLoadInProgress.Code
	case kerr.UnknownTopicOrPartition.Code, kerr.NotEnoughReplicas.Code, kerr.RequestTimedOut.Code:
		return nil, kerr.CoordinatorNotAvailable.Code
	case kerr.NotLeaderForPartition.Code, kerr.KafkaStorageError.Code:
		return nil, kerr.NotCoordinator.Code
	}
	return nil, code
}

// txnOffsetCommitError answers every partition of the request with code
// (Kafka's TxnOffsetCommitRequest.getErrorResponse).
func txnOffsetCommitError(req *kmsg.TxnOffsetCommitRequest, code int16) *kmsg.TxnOffsetCommitResponse {
	resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	for _, rt := range req.Topics {
		st := kmsg.NewTxnOffsetCommitResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		for _, rp := range rt.Partitions {
			sp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
			sp.Partition, sp.ErrorCode = rp.Partition, code
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

// appendCoordinatorBatch appends a batch the group coordinator built: a
// transactional one (a TxnOffsetCommit) as Kafka's AppendOrigin.COORDINATOR
// with its verification guard, any other as appendAsLeader does.
func (s *Server) appendCoordinatorBatch(p *replication.Partition, batch []byte, verify bool, guard *storage.VerificationGuard) error {
	if _, _, _, ok := transactionalBatch(batch); !ok {
		info, err := s.appendAsLeader(p, batch)
		if err != nil {
			return err
		}
		return p.WaitReplicated(info.LastOffset+1, internalAppendTimeout, s.closing)
	}
	info, err := p.Log().AppendAsCoordinator(batch, p.LeaderEpoch(), verify, guard)
	if err != nil {
		return err
	}
	p.Appended()
	return p.WaitReplicated(info.LastOffset+1, internalAppendTimeout, s.closing)
}

// txnVerificationEnabled is transaction.partition.verification.enable.
func (s *Server) txnVerificationEnabled() bool {
	svc := s.txns()
	return svc == nil || svc.settings.verification
}

// txnOffsetsCompleted tells the group coordinator that a producer's
// transaction on a __consumer_offsets partition ended with a marker, so
// that its pending transactional offset commits become committed offsets
// or are dropped (Kafka's GroupCoordinator.onTransactionCompleted).
func (s *Server) txnOffsetsCompleted(partition int32, producerID int64, commit bool) {
	s.groups().coord.CompleteTransaction(partition, producerID, commit)
}
