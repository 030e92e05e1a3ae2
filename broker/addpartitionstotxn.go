package broker

// AddPartitionsToTxn (key 24); versions: see the registration below. The
// transaction coordinator (coordinator/txn) documents the behaviour. v0-3
// come from clients, one transaction; v4+ from brokers, a batch of
// transactions, each adding its partitions or, with verify_only, only
// checking them (KIP-890).
//
// As in Kafka's KafkaApis, a partition of an unknown topic fails its
// transaction's whole request: UNKNOWN_TOPIC_OR_PARTITION for it,
// OPERATION_NOT_ATTEMPTED for the others; PRODUCER_FENCED is
// INVALID_PRODUCER_EPOCH below v2, which old clients do not know.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/coordinator/txn"
	"github.com/strait/strait/security/acl"
)

func init() { register(kmsg.AddPartitionsToTxn, 0, 5, handleAddPartitionsToTxn) }

// addPartitionsToTxn answers one transaction of an AddPartitionsToTxn:
// per partition, the error code.
func (s *Server) addPartitionsToTxn(id string, producerID int64, epoch int16, verifyOnly bool,
	topics map[string][]int32, order []string, version int16) map[txn.TopicPartition]int16 {
	out := map[txn.TopicPartition]int16{}
	var parts []txn.TopicPartition
	failed := false
	for _, topic := range order {
		t, exists := s.ctrl.Topic(topic)
		for _, p := range topics[topic] {
			tp := txn.TopicPartition{Topic: topic, Partition: p}
			if !exists || p < 0 || int(p) >= len(t.Partitions) {
				out[tp] = kerr.UnknownTopicOrPartition.Code
				failed = true
				continue
			}
			parts = append(parts, tp)
		}
	}
	if failed {
		for _, tp := range parts {
			out[tp] = kerr.OperationNotAttempted.Code
		}
		return out
	}
	coord := s.txnCoordinator()
	if coord == nil {
		for _, tp := range parts {
			out[tp] = kerr.CoordinatorNotAvailable.Code
		}
		return out
	}
	if verifyOnly {
		return coord.VerifyPartitions(id, producerID, epoch, parts)
	}
	// Clients (v0-3) use transaction version 1; brokers adding partitions
	// for a produce request (v4+, not verify-only) act for version 2 ones.
	tv := txn.TV0
	if version >= 4 {
		tv = txn.TV2
	}
	code := fencedCode(coord.AddPartitions(id, producerID, epoch, parts, tv), version, 2)
	for _, tp := range parts {
		out[tp] = code
	}
	return out
}

func handleAddPartitionsToTxn(c *conn, x *exchange) {
	req := x.req.Body.(*kmsg.AddPartitionsToTxnRequest)
	resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	v := x.req.Version
	if v < 4 {
		topics, order := map[string][]int32{}, []string(nil)
		for _, t := range req.Topics {
			if _, ok := topics[t.Topic]; !ok {
				order = append(order, t.Topic)
			}
			topics[t.Topic] = append(topics[t.Topic], t.Partitions...)
		}
		res := c.addPartitionsDenied(req.TransactionalID, topics, v) // authorize.go
		if res == nil {
			res = c.srv.addPartitionsToTxn(req.TransactionalID, req.ProducerID, req.ProducerEpoch, false, topics, order, v)
		}
		for _, topic := range order {
			rt := kmsg.NewAddPartitionsToTxnResponseTopic()
			rt.Topic = topic
			for _, p := range topics[topic] {
				rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p, res[txn.TopicPartition{Topic: topic, Partition: p}]
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		x.respond(resp)
		return
	}
	if !c.authorizeCluster(acl.OpClusterAction) { // authorize.go: v4+ comes from brokers
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		x.respond(resp)
		return
	}
	for _, tr := range req.Transactions {
		topics, order := map[string][]int32{}, []string(nil)
		for _, t := range tr.Topics {
			if _, ok := topics[t.Topic]; !ok {
				order = append(order, t.Topic)
			}
			topics[t.Topic] = append(topics[t.Topic], t.Partitions...)
		}
		res := c.addPartitionsDenied(tr.TransactionalID, topics, v)
		if res == nil {
			res = c.srv.addPartitionsToTxn(tr.TransactionalID, tr.ProducerID, tr.ProducerEpoch, tr.VerifyOnly, topics, order, v)
		}
		rtx := kmsg.NewAddPartitionsToTxnResponseTransaction()
		rtx.TransactionalID = tr.TransactionalID
		for _, topic := range order {
			rt := kmsg.NewAddPartitionsToTxnResponseTransactionTopic()
			rt.Topic = topic
			for _, p := range topics[topic] {
				rp := kmsg.NewAddPartitionsToTxnResponseTransactionTopicPartition()
				rp.Partition, rp.ErrorCode = p, res[txn.TopicPartition{Topic: topic, Partition: p}]
				rt.Partitions = append(rt.Partitions, rp)
			}
			rtx.Topics = append(rtx.Topics, rt)
		}
		resp.Transactions = append(resp.Transactions, rtx)
	}
	x.respond(resp)
}
