package broker

// Authorization: the one place a handler asks whether the connection's
// principal may do something, as KafkaApis asks its AuthHelper. Each
// resource type has its helper (authorizeCluster, authorizeTopic, ...), so a
// handler states what it authorizes in a line. Without authorizer.class.name
// every helper allows everything at the cost of a nil check; with it, the
// decision is the acl.Standard authorizer's over the controller's cached
// ACLs, never an etcd round trip.

import (
	"net"
	"net/netip"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/security/acl"
)

// newAuthorizer builds the authorizer the configuration asks for, nil for
// none. It reads the ACLs from the controller's cache, which Start creates.
func newAuthorizer(s *Server) *acl.Standard {
	a := s.cfg.Security.Authorizer
	if !a.Enabled {
		return nil
	}
	super := map[string]bool{}
	for _, u := range a.SuperUsers {
		super[u] = true
	}
	return &acl.Standard{
		ACLs: func() *acl.Set {
			if s.ctrl == nil {
				return acl.EmptySet
			}
			return s.ctrl.ACLs()
		},
		SuperUsers:   super,
		AllowIfNoACL: a.AllowEveryoneIfNoACL,
	}
}

// requestContext is who the connection is, as the authorizer sees it.
func (c *conn) requestContext() acl.RequestContext {
	var addr netip.Addr
	if ta, ok := c.nc.RemoteAddr().(*net.TCPAddr); ok {
		addr, _ = netip.AddrFromSlice(ta.IP)
	}
	return acl.NewRequestContext(c.principal().String(), addr)
}

// authorize is the decision for one operation on one resource.
func (c *conn) authorize(op acl.Operation, rt acl.ResourceType, name string) bool {
	a := c.srv.authz
	if a == nil {
		return true
	}
	return a.Authorize(c.requestContext(), op, rt, name)
}

// authorizeCluster is AuthHelper.authorize on the CLUSTER resource.
func (c *conn) authorizeCluster(op acl.Operation) bool {
	return c.authorize(op, acl.ResourceCluster, acl.ClusterName)
}

// authorizeTopic is the decision on a TOPIC.
func (c *conn) authorizeTopic(op acl.Operation, topic string) bool {
	return c.authorize(op, acl.ResourceTopic, topic)
}

// authorizeGroup is the decision on a GROUP.
func (c *conn) authorizeGroup(op acl.Operation, group string) bool {
	return c.authorize(op, acl.ResourceGroup, group)
}

// authorizeTransactionalID is the decision on a TRANSACTIONAL_ID.
func (c *conn) authorizeTransactionalID(op acl.Operation, id string) bool {
	return c.authorize(op, acl.ResourceTransactionalID, id)
}

// mayCreateTopic is Kafka's check for a topic's creation (CreateTopics,
// Metadata's auto-creation): CREATE on the cluster, or on the topic.
func (c *conn) mayCreateTopic(topic string) bool {
	return c.srv.authz == nil || c.authorizeCluster(acl.OpCreate) || c.authorizeTopic(acl.OpCreate, topic)
}

// produceTransactionDenied is KafkaApis.handleProduceRequest's first check:
// a request carrying transactional batches needs WRITE on its transactional
// id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED for every partition otherwise).
func (c *conn) produceTransactionDenied(req *kmsg.ProduceRequest) bool {
	if c.srv.authz == nil {
		return false
	}
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			if _, _, _, ok := transactionalBatch(rp.Records); ok {
				return req.TransactionID == nil || !c.authorizeTransactionalID(acl.OpWrite, *req.TransactionID)
			}
		}
	}
	return false
}

// fetchDenied is KafkaApis.handleFetchRequest's check of one topic: a
// follower (replica >= 0) needs CLUSTER_ACTION on the cluster, a consumer
// READ on the topic; refused partitions are TOPIC_AUTHORIZATION_FAILED.
func (c *conn) fetchDenied(replica int32, topic string) bool {
	if c.srv.authz == nil {
		return false
	}
	if replica >= 0 {
		return !c.authorizeCluster(acl.OpClusterAction)
	}
	return !c.authorizeTopic(acl.OpRead, topic)
}

// groupDenied answers a group request whose principal may not READ the
// group with GROUP_AUTHORIZATION_FAILED (the request's getErrorResponse in
// Kafka), and reports whether it did. resp is the request's empty response.
func (c *conn) groupDenied(x *exchange, group string) bool {
	if c.authorizeGroup(acl.OpRead, group) {
		return false
	}
	code := kerr.GroupAuthorizationFailed.Code
	switch resp := x.req.Body.ResponseKind().(type) {
	case *kmsg.JoinGroupResponse:
		resp.ErrorCode, resp.Generation = code, -1
		x.respond(resp)
	case *kmsg.SyncGroupResponse:
		resp.ErrorCode = code
		x.respond(resp)
	case *kmsg.HeartbeatResponse:
		resp.ErrorCode = code
		x.respond(resp)
	case *kmsg.LeaveGroupResponse:
		resp.ErrorCode = code
		x.respond(resp)
	case *kmsg.OffsetCommitResponse:
		req := x.req.Body.(*kmsg.OffsetCommitRequest)
		resp.Topics = offsetCommitErrors(req.Topics, code)
		x.respond(resp)
	default:
		return false // not a group request this knows: the handler goes on
	}
	return true
}

// offsetCommitErrors answers every partition of topics with code.
func offsetCommitErrors(topics []kmsg.OffsetCommitRequestTopic, code int16) []kmsg.OffsetCommitResponseTopic {
	out := make([]kmsg.OffsetCommitResponseTopic, 0, len(topics))
	for _, rt := range topics {
		st := kmsg.NewOffsetCommitResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewOffsetCommitResponseTopicPartition()
			sp.Partition, sp.ErrorCode = rp.Partition, code
			st.Partitions = append(st.Partitions, sp)
		}
		out = append(out, st)
	}
	return out
}

// offsetCommitDeniedTopics removes from req the topics the principal may
// not READ and returns their answers (TOPIC_AUTHORIZATION_FAILED), to add
// to the coordinator's response (KafkaApis.handleOffsetCommitRequest).
func (c *conn) offsetCommitDeniedTopics(req *kmsg.OffsetCommitRequest) []kmsg.OffsetCommitResponseTopic {
	if c.srv.authz == nil {
		return nil
	}
	var denied []kmsg.OffsetCommitRequestTopic
	kept := req.Topics[:0]
	for _, rt := range req.Topics {
		if c.authorizeTopic(acl.OpRead, rt.Topic) {
			kept = append(kept, rt)
		} else {
			denied = append(denied, rt)
		}
	}
	req.Topics = kept
	if len(denied) == 0 {
		return nil
	}
	return offsetCommitErrors(denied, kerr.TopicAuthorizationFailed.Code)
}

// initProducerIDDenied is KafkaApis.handleInitProducerIdRequest's check,
// the error code or 0: WRITE on the transactional id
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED); for an idempotent producer,
// IDEMPOTENT_WRITE on the cluster or WRITE on some topic
// (CLUSTER_AUTHORIZATION_FAILED).
func (c *conn) initProducerIDDenied(transactionalID *string) int16 {
	a := c.srv.authz
	switch {
	case a == nil:
		return 0
	case transactionalID != nil:
		if !c.authorizeTransactionalID(acl.OpWrite, *transactionalID) {
			return kerr.TransactionalIDAuthorizationFailed.Code
		}
	case !c.authorizeCluster(acl.OpIdempotentWrite) && !a.AuthorizeByResourceType(c.requestContext(), acl.OpWrite, acl.ResourceTopic):
		return kerr.ClusterAuthorizationFailed.Code
	}
	return 0
}

// transactionDenied is the check of EndTxn and AddOffsetsToTxn (and
// AddOffsetsToTxn's group): WRITE on the transactional id, then READ on the
// group when one is named; the error code or 0.
func (c *conn) transactionDenied(transactionalID, group string) int16 {
	if !c.authorizeTransactionalID(acl.OpWrite, transactionalID) {
		return kerr.TransactionalIDAuthorizationFailed.Code
	}
	if group != "" && !c.authorizeGroup(acl.OpRead, group) {
		return kerr.GroupAuthorizationFailed.Code
	}
	return 0
}

// coordinatorKeyDenied is FindCoordinator's check of one key: DESCRIBE on
// the group or the transactional id; the error code or 0.
func (c *conn) coordinatorKeyDenied(keyType int8, key string) int16 {
	switch {
	case keyType == coordinatorTypeGroup && !c.authorizeGroup(acl.OpDescribe, key):
		return kerr.GroupAuthorizationFailed.Code
	case keyType == coordinatorTypeTransaction && !c.authorizeTransactionalID(acl.OpDescribe, key):
		return kerr.TransactionalIDAuthorizationFailed.Code
	}
	return 0
}
