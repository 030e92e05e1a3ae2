package broker

// WriteTxnMarkers (key 27); versions: see the registration below. Appends
// commit or abort markers to partitions this broker leads: the transaction
// coordinator's request, and the one `kafka-transactions.sh abort` sends to
// close a hanging transaction. A partition not hosted here is
// UNKNOWN_TOPIC_OR_PARTITION. v2 (KIP-1228) names each marker's transaction
// version: from 2, the marker's producer epoch must be above the
// producer's (or equal once its transaction is closed: a retry), else
// INVALID_PRODUCER_EPOCH (storage.Log.AppendMarkerVersion).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/security/acl"
	"github.com/strait/strait/storage"
)

func init() { register(kmsg.WriteTxnMarkers, 1, 2, handleWriteTxnMarkers) }

func handleWriteTxnMarkers(c *conn, x *exchange) {
	req := x.req.Body.(*kmsg.WriteTxnMarkersRequest)
	resp := req.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
	s := c.srv
	// Only brokers may (CLUSTER_ACTION): every partition refused otherwise.
	allowed := c.authorizeCluster(acl.OpClusterAction) // authorize.go
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
				if !allowed {
					sp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
				} else if s.replicas.Partition(rt.Topic, idx) == nil {
					sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				} else if err := s.writeTxnMarker(rt.Topic, idx, marker, m.TransactionVersion); err != nil {
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
