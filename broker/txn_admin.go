package broker

// The transaction admin APIs, as Kafka's KafkaApis answers them:
//
//	DescribeTransactions (65) v0: the coordinator describes each
//	  transactional id it owns (NOT_COORDINATOR for others).
//	ListTransactions (66) v0-1: the transactional ids this coordinator owns,
//	  filtered by state, producer id and (v1) minimum running time.
//	DescribeProducers (61) v0: the producers a partition this broker leads
//	  tracks, with their epoch, last sequence and open transaction's start.
//	WriteTxnMarkers (27) v1: appends commit or abort markers to partitions
//	  this broker leads; the transaction coordinator's request, and the one
//	  `kafka-transactions.sh abort` sends to close a hanging transaction.
//	  A partition not hosted here is UNKNOWN_TOPIC_OR_PARTITION.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/controller"
	"github.com/strait/strait/storage"
)

func handleDescribeTransactions(c *conn, x *exchange) {
	req := x.req.Body.(*kmsg.DescribeTransactionsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeTransactionsResponse)
	coord := c.srv.txnCoordinator()
	for _, id := range req.TransactionalIDs {
		if coord == nil {
			st := kmsg.NewDescribeTransactionsResponseTransactionState()
			st.TransactionalID, st.ErrorCode = id, kerr.CoordinatorNotAvailable.Code
			resp.TransactionStates = append(resp.TransactionStates, st)
			continue
		}
		resp.TransactionStates = append(resp.TransactionStates, coord.DescribeTransactions(id))
	}
	x.respond(resp)
}

func handleListTransactions(c *conn, x *exchange) {
	req := x.req.Body.(*kmsg.ListTransactionsRequest)
	coord := c.srv.txnCoordinator()
	if coord == nil {
		resp := req.ResponseKind().(*kmsg.ListTransactionsResponse)
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		x.respond(resp)
		return
	}
	x.respond(coord.ListTransactions(req))
}

func handleDescribeProducers(c *conn, x *exchange) {
	req := x.req.Body.(*kmsg.DescribeProducersRequest)
	resp := req.ResponseKind().(*kmsg.DescribeProducersResponse)
	s := c.srv
	for _, rt := range req.Topics {
		st := kmsg.NewDescribeProducersResponseTopic()
		st.Topic = rt.Topic
		var topicErr error
		if err := controller.ValidateTopicName(rt.Topic); err != nil {
			topicErr = err
		} else if _, ok := s.ctrl.Topic(rt.Topic); !ok {
			topicErr = kerr.UnknownTopicOrPartition
		}
		for _, idx := range rt.Partitions {
			sp := kmsg.NewDescribeProducersResponseTopicPartition()
			sp.Partition = idx
			if topicErr != nil {
				// Kafka's ApiError: the exception's message, or the
				// error's default description.
				sp.ErrorCode, _ = errorCode(topicErr)
				msg := controller.ErrorMessage(topicErr)
				sp.ErrorMessage = &msg
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			p := s.replicas.Partition(rt.Topic, idx)
			switch {
			case p == nil:
				sp.ErrorCode = s.missingPartitionCode(rt.Topic, idx)
			case !p.IsLeader():
				sp.ErrorCode = kerr.NotLeaderForPartition.Code
			default:
				for _, ps := range p.Log().ActiveProducers() {
					ap := kmsg.NewDescribeProducersResponseTopicPartitionActiveProducer()
					ap.ProducerID, ap.ProducerEpoch = ps.ProducerID, int32(ps.ProducerEpoch)
					ap.LastSequence, ap.LastTimestamp = ps.LastSequence, ps.LastTimestamp
					ap.CoordinatorEpoch, ap.CurrentTxnStartOffset = ps.CoordinatorEpoch, ps.CurrentTxnStartOffset
					sp.ActiveProducers = append(sp.ActiveProducers, ap)
				}
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	x.respond(resp)
}

func handleWriteTxnMarkers(c *conn, x *exchange) {
	req := x.req.Body.(*kmsg.WriteTxnMarkersRequest)
	resp := req.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
	s := c.srv
	for _, m := range req.Markers {
		rm := kmsg.NewWriteTxnMarkersResponseMarker()
		rm.ProducerID = m.ProducerID
		marker := storage.TxnMarker{ProducerID: m.ProducerID, ProducerEpoch: m.ProducerEpoch,
			Commit: m.Committed, CoordinatorEpoch: m.CoordinatorEpoch}
		for _, rt := range m.Topics {
			st := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
			st.Topic = rt.Topic
			for _, idx := range rt.Partitions {
				sp := kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
				sp.Partition = idx
				if s.replicas.Partition(rt.Topic, idx) == nil {
					sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				} else if err := s.writeTxnMarker(rt.Topic, idx, marker); err != nil {
					sp.ErrorCode, _ = errorCode(err)
					if sp.ErrorCode == kerr.KafkaStorageError.Code || sp.ErrorCode == kerr.UnknownServerError.Code {
						s.logger.Error("writing a transaction marker failed", "topic", rt.Topic, "partition", idx, "err", err)
					}
				}
				st.Partitions = append(st.Partitions, sp)
			}
			rm.Topics = append(rm.Topics, st)
		}
		resp.Markers = append(resp.Markers, rm)
	}
	x.respond(resp)
}
