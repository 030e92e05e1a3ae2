package broker

// FindCoordinator (key 10); versions: see the registration below.
//
// Up to v3 the request names one key and the answer carries one node (with
// error_message "NONE" on success, as Kafka's Errors.message() gives, and
// node -1, host "", port -1 on error); from v4 it names a batch of keys
// answered one by one. Key type 0 is a group: it hashes onto a partition of
// __consumer_offsets (abs(javaHash(key)) % partitions), which is created on
// first use, and the partition's leader is the coordinator. Key type 1 is a
// transactional id, hashed the same way onto __transaction_state, which the
// transaction coordinator creates on first use (without a running
// transaction coordinator: COORDINATOR_NOT_AVAILABLE until the topic
// exists). Other key types (2, share groups) are
// INVALID_REQUEST. A partition without a live leader is
// COORDINATOR_NOT_AVAILABLE.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/controller"
	"github.com/strait/strait/coordinator/group"
	"github.com/strait/strait/recordbatch"
)

func init() { register(kmsg.FindCoordinator, 0, 6, handleFindCoordinator) }

const (
	coordinatorTypeGroup       = 0
	coordinatorTypeTransaction = 1
)

// coordinatorNode is where a key's coordinator lives, or why it is unknown.
type coordinatorNode struct {
	code int16
	node int32
	host string
	port int32
}

func noCoordinator(code int16) coordinatorNode {
	return coordinatorNode{code: code, node: -1, port: -1}
}

func handleFindCoordinator(c *conn, x *exchange) {
	req := x.req.Body.(*kmsg.FindCoordinatorRequest)
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	v := x.req.Version
	if v < 4 {
		n := c.findCoordinator(req.CoordinatorType, req.CoordinatorKey)
		resp.ErrorCode, resp.NodeID, resp.Host, resp.Port = n.code, n.node, n.host, n.port
		msg := "NONE"
		if ke, ok := kerr.ErrorForCode(n.code).(*kerr.Error); ok {
			msg = ke.Description
		}
		resp.ErrorMessage = &msg
		x.respond(resp)
		return
	}
	for _, key := range req.CoordinatorKeys {
		n := c.findCoordinator(req.CoordinatorType, key)
		rc := kmsg.NewFindCoordinatorResponseCoordinator()
		rc.Key, rc.ErrorCode, rc.NodeID, rc.Host, rc.Port = key, n.code, n.node, n.host, n.port
		if ke, ok := kerr.ErrorForCode(n.code).(*kerr.Error); ok {
			rc.ErrorMessage = kmsg.StringPtr(ke.Description) // as Kafka, with every error
		}
		resp.Coordinators = append(resp.Coordinators, rc)
	}
	x.respond(resp)
}

// findCoordinator resolves one key to the coordinator's endpoint on the
// listener the client used.
func (c *conn) findCoordinator(keyType int8, key string) coordinatorNode {
	if code := c.coordinatorKeyDenied(keyType, key); code != 0 { // authorize.go
		return noCoordinator(code)
	}
	s := c.srv
	var topic controller.TopicInfo
	var partition int32
	switch keyType {
	case coordinatorTypeGroup:
		svc := s.groups()
		t, err := svc.ensureOffsetsTopic()
		if err != nil {
			s.logger.Warn("cannot create the offsets topic", "err", err)
			return noCoordinator(kerr.CoordinatorNotAvailable.Code)
		}
		topic, partition = t, svc.coord.PartitionFor(key)
	case coordinatorTypeTransaction:
		if svc := s.txns(); svc != nil {
			// The transaction coordinator creates its topic on first use.
			t, err := svc.ensureTopic()
			if err != nil {
				s.logger.Warn("cannot create the transaction state topic", "err", err)
				return noCoordinator(kerr.CoordinatorNotAvailable.Code)
			}
			topic, partition = t, svc.coord.PartitionFor(key)
			break
		}
		t, ok := s.ctrl.Topic(recordbatch.TransactionStateTopic)
		if !ok || len(t.Partitions) == 0 {
			return noCoordinator(kerr.CoordinatorNotAvailable.Code)
		}
		topic, partition = t, group.PartitionFor(key, int32(len(t.Partitions)))
	default:
		return noCoordinator(kerr.InvalidRequest.Code)
	}
	if int(partition) >= len(topic.Partitions) {
		return noCoordinator(kerr.CoordinatorNotAvailable.Code)
	}
	leader := topic.Partitions[partition].Leader
	if leader < 0 {
		return noCoordinator(kerr.CoordinatorNotAvailable.Code)
	}
	if leader == s.cfg.NodeID && s.replicas.Partition(topic.Name, partition) == nil {
		// The topic is in the metadata but this broker has not opened the
		// partition yet: a client sent here now would get NOT_COORDINATOR.
		return noCoordinator(kerr.CoordinatorNotAvailable.Code)
	}
	for _, b := range s.ctrl.Brokers() {
		if b.NodeID != leader {
			continue
		}
		ep, ok := endpointFor(b, c.listener)
		if !ok {
			break
		}
		return coordinatorNode{node: leader, host: ep.Host, port: ep.Port}
	}
	return noCoordinator(kerr.CoordinatorNotAvailable.Code)
}
