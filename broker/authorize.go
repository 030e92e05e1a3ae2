package broker

// Authorization: the one place a handler asks whether the connection's
// principal may do something, as KafkaApis asks its AuthHelper. Each
// resource type has its helper (authorizeCluster, authorizeTopic, ...), so a
// handler states what it authorizes in a line. Without authorizer.class.name
// every helper allows everything at the cost of a nil check; with it, the
// decision is the acl.Standard authorizer's over the controller's cached
// ACLs, never an etcd round trip.

import (
	"math"
	"net"
	"net/netip"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/controller"
	"github.com/strait/strait/coordinator/txn"
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
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
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

// authorizeOffsetFetch is KafkaApis.handleOffsetFetchRequest's checks,
// applied to the coordinator's answer (so its order and shape are kept): a
// group the principal may not DESCRIBE is GROUP_AUTHORIZATION_FAILED with
// no offsets; of a group's topics, those it may not DESCRIBE are left out
// when all were asked for, and answered TOPIC_AUTHORIZATION_FAILED (offset
// -1) when named.
func (c *conn) authorizeOffsetFetch(req *kmsg.OffsetFetchRequest) func(*kmsg.OffsetFetchResponse) {
	if c.srv.authz == nil {
		return func(*kmsg.OffsetFetchResponse) {}
	}
	denyPartition := func(p int32) kmsg.OffsetFetchResponseGroupTopicPartition {
		sp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
		sp.Partition, sp.Offset, sp.LeaderEpoch, sp.Metadata = p, -1, -1, kmsg.StringPtr("")
		sp.ErrorCode = kerr.TopicAuthorizationFailed.Code
		return sp
	}
	// topics fixes one group's topics.
	topics := func(ts []kmsg.OffsetFetchResponseGroupTopic) []kmsg.OffsetFetchResponseGroupTopic {
		out := ts[:0]
		for _, t := range ts {
			if c.authorizeTopic(acl.OpDescribe, t.Topic) {
				out = append(out, t)
				continue
			}
			// Named topics only reach here when they were asked for: the
			// all-topics answers of a group are dropped below instead.
			for i, p := range t.Partitions {
				t.Partitions[i] = denyPartition(p.Partition)
			}
			out = append(out, t)
		}
		return out
	}
	if req.Version >= 8 {
		// The coordinator answers the groups in the request's order.
		all := make([]bool, len(req.Groups))
		for i, g := range req.Groups {
			all[i] = g.Topics == nil
		}
		return func(resp *kmsg.OffsetFetchResponse) {
			for i := range resp.Groups {
				g := &resp.Groups[i]
				switch {
				case !c.authorizeGroup(acl.OpDescribe, g.Group):
					g.Topics, g.ErrorCode = nil, kerr.GroupAuthorizationFailed.Code
				case i < len(all) && all[i]:
					g.Topics = slices.DeleteFunc(g.Topics, func(t kmsg.OffsetFetchResponseGroupTopic) bool {
						return !c.authorizeTopic(acl.OpDescribe, t.Topic)
					})
				default:
					g.Topics = topics(g.Topics)
				}
			}
		}
	}
	return func(resp *kmsg.OffsetFetchResponse) {
		// Up to v7 one group, in the response's topics (v0-1 carry errors
		// per partition only).
		g := []kmsg.OffsetFetchResponseGroupTopic{}
		for _, t := range resp.Topics {
			gt := kmsg.NewOffsetFetchResponseGroupTopic()
			gt.Topic = t.Topic
			for _, p := range t.Partitions {
				gp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
				gp.Partition, gp.Offset, gp.LeaderEpoch, gp.Metadata, gp.ErrorCode = p.Partition, p.Offset, p.LeaderEpoch, p.Metadata, p.ErrorCode
				gt.Partitions = append(gt.Partitions, gp)
			}
			g = append(g, gt)
		}
		switch {
		case !c.authorizeGroup(acl.OpDescribe, req.Group):
			if req.Version >= 2 {
				resp.Topics, resp.ErrorCode = nil, kerr.GroupAuthorizationFailed.Code
				return
			}
			for i := range g {
				for j := range g[i].Partitions {
					g[i].Partitions[j] = denyPartition(g[i].Partitions[j].Partition)
					g[i].Partitions[j].ErrorCode = kerr.GroupAuthorizationFailed.Code
				}
			}
		case req.Topics == nil:
			g = slices.DeleteFunc(g, func(t kmsg.OffsetFetchResponseGroupTopic) bool {
				return !c.authorizeTopic(acl.OpDescribe, t.Topic)
			})
		default:
			g = topics(g)
		}
		resp.Topics = resp.Topics[:0]
		for _, gt := range g {
			t := kmsg.NewOffsetFetchResponseTopic()
			t.Topic = gt.Topic
			for _, gp := range gt.Partitions {
				p := kmsg.NewOffsetFetchResponseTopicPartition()
				p.Partition, p.Offset, p.LeaderEpoch, p.Metadata, p.ErrorCode = gp.Partition, gp.Offset, gp.LeaderEpoch, gp.Metadata, gp.ErrorCode
				t.Partitions = append(t.Partitions, p)
			}
			resp.Topics = append(resp.Topics, t)
		}
	}
}

// deleteTopicAccess is ControllerApis.deleteTopics' view of one topic: may
// the principal delete it, and may it know of it (DELETE on the cluster
// gives both).
func (c *conn) deleteTopicAccess(topic string) (deletable, describable bool) {
	if c.srv.authz == nil || c.authorizeCluster(acl.OpDelete) {
		return true, true
	}
	return c.authorizeTopic(acl.OpDelete, topic), c.authorizeTopic(acl.OpDescribe, topic)
}

// errClusterAuthorization is a request refused for want of a cluster
// permission, for handlers that turn an error into per-item answers.
var errClusterAuthorization error = kerr.ClusterAuthorizationFailed

// The group APIs beyond membership, as KafkaApis authorizes them. Each
// returns what the handler needs around its call to the coordinator.

// fixDescribeGroups answers GROUP_AUTHORIZATION_FAILED for the groups the
// principal may not DESCRIBE (DescribeGroupsResponse.groupError).
func (c *conn) fixDescribeGroups(resp *kmsg.DescribeGroupsResponse) {
	if c.srv.authz == nil {
		return
	}
	for i, g := range resp.Groups {
		if !c.authorizeGroup(acl.OpDescribe, g.Group) {
			e := kmsg.NewDescribeGroupsResponseGroup()
			e.Group, e.ErrorCode = g.Group, kerr.GroupAuthorizationFailed.Code
			resp.Groups[i] = e
		} else if g.AuthorizedOperations != math.MinInt32 { // asked for
			resp.Groups[i].AuthorizedOperations = c.authorizedOperations(acl.ResourceGroup, g.Group, g.AuthorizedOperations)
		}
	}
}

// fixConsumerGroupDescribe is fixDescribeGroups for KIP-848 groups.
func (c *conn) fixConsumerGroupDescribe(resp *kmsg.ConsumerGroupDescribeResponse) {
	if c.srv.authz == nil {
		return
	}
	for i, g := range resp.Groups {
		if !c.authorizeGroup(acl.OpDescribe, g.Group) {
			e := kmsg.NewConsumerGroupDescribeResponseGroup()
			e.Group, e.ErrorCode = g.Group, kerr.GroupAuthorizationFailed.Code
			resp.Groups[i] = e
		} else if g.AuthorizedOperations != math.MinInt32 { // asked for
			resp.Groups[i].AuthorizedOperations = c.authorizedOperations(acl.ResourceGroup, g.Group, g.AuthorizedOperations)
		}
	}
}

// filterListGroups leaves in the groups the principal may DESCRIBE, all of
// them with DESCRIBE on the cluster.
func (c *conn) filterListGroups(resp *kmsg.ListGroupsResponse) {
	if c.srv.authz == nil || c.authorizeCluster(acl.OpDescribe) {
		return
	}
	resp.Groups = slices.DeleteFunc(resp.Groups, func(g kmsg.ListGroupsResponseGroup) bool {
		return !c.authorizeGroup(acl.OpDescribe, g.Group)
	})
}

// deniedDeleteGroups removes from req the groups the principal may not
// DELETE and returns their answers, so that they are never deleted.
func (c *conn) deniedDeleteGroups(req *kmsg.DeleteGroupsRequest) []kmsg.DeleteGroupsResponseGroup {
	if c.srv.authz == nil {
		return nil
	}
	var denied []kmsg.DeleteGroupsResponseGroup
	req.Groups = slices.DeleteFunc(req.Groups, func(g string) bool {
		if c.authorizeGroup(acl.OpDelete, g) {
			return false
		}
		r := kmsg.NewDeleteGroupsResponseGroup()
		r.Group, r.ErrorCode = g, kerr.GroupAuthorizationFailed.Code
		denied = append(denied, r)
		return true
	})
	return denied
}

// offsetDeleteDenied is OffsetDelete's check: DELETE on the group, else the
// whole request is GROUP_AUTHORIZATION_FAILED (answered here, true); the
// topics the principal may not READ are removed from req and their answers
// (TOPIC_AUTHORIZATION_FAILED) returned.
func (c *conn) offsetDeleteDenied(x *exchange, req *kmsg.OffsetDeleteRequest) (bool, []kmsg.OffsetDeleteResponseTopic) {
	if c.srv.authz == nil {
		return false, nil
	}
	if !c.authorizeGroup(acl.OpDelete, req.Group) {
		resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		x.respond(resp)
		return true, nil
	}
	var denied []kmsg.OffsetDeleteResponseTopic
	req.Topics = slices.DeleteFunc(req.Topics, func(rt kmsg.OffsetDeleteRequestTopic) bool {
		if c.authorizeTopic(acl.OpRead, rt.Topic) {
			return false
		}
		st := kmsg.NewOffsetDeleteResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewOffsetDeleteResponseTopicPartition()
			sp.Partition, sp.ErrorCode = rp.Partition, kerr.TopicAuthorizationFailed.Code
			st.Partitions = append(st.Partitions, sp)
		}
		denied = append(denied, st)
		return true
	})
	return false, denied
}

// configsDenied is the check of one config resource (KafkaApis'
// DescribeConfigs, ControllerApis' AlterConfigs): op (DESCRIBE_CONFIGS or
// ALTER_CONFIGS) on the topic, or on the cluster for a broker or its
// loggers; the refusal carries Kafka's default message. nil when allowed
// or for another resource type (refused later as INVALID_REQUEST).
func (c *conn) configsDenied(typ kmsg.ConfigResourceType, name string, op acl.Operation) error {
	var e *kerr.Error
	switch typ {
	case kmsg.ConfigResourceTypeTopic:
		if !c.authorizeTopic(op, name) {
			e = kerr.TopicAuthorizationFailed
		}
	case kmsg.ConfigResourceTypeBroker, kmsg.ConfigResourceTypeBrokerLogger, kmsg.ConfigResourceTypeClientMetrics:
		if !c.authorizeCluster(op) {
			e = kerr.ClusterAuthorizationFailed
		}
	case kmsg.ConfigResourceTypeGroupConfig:
		if !c.authorizeGroup(op, name) {
			e = kerr.GroupAuthorizationFailed
		}
	}
	if e == nil {
		return nil
	}
	return &controller.Error{Err: e, Message: e.Description}
}

// addPartitionsDenied is KafkaApis.handleAddPartitionsToTxnRequest's check
// of one transaction, nil when it may go on: without WRITE on the
// transactional id every partition is TRANSACTIONAL_ID_AUTHORIZATION_FAILED;
// from a client (v0-3), a topic it may not WRITE (or an internal one) is
// TOPIC_AUTHORIZATION_FAILED, a missing partition UNKNOWN_TOPIC_OR_PARTITION
// and the others OPERATION_NOT_ATTEMPTED: the transaction is refused whole.
func (c *conn) addPartitionsDenied(transactionalID string, topics map[string][]int32, version int16) map[txn.TopicPartition]int16 {
	if c.srv.authz == nil {
		return nil
	}
	out := map[txn.TopicPartition]int16{}
	if !c.authorizeTransactionalID(acl.OpWrite, transactionalID) {
		for topic, ps := range topics {
			for _, p := range ps {
				out[txn.TopicPartition{Topic: topic, Partition: p}] = kerr.TransactionalIDAuthorizationFailed.Code
			}
		}
		return out
	}
	if version >= 4 {
		return nil // from a broker, which CLUSTER_ACTION vouched for
	}
	refused := false
	for topic, ps := range topics {
		denied := coordinatorTopic(topic) || !c.authorizeTopic(acl.OpWrite, topic)
		t, exists := c.srv.ctrl.Topic(topic)
		for _, p := range ps {
			code := kerr.OperationNotAttempted.Code
			switch {
			case denied:
				code, refused = kerr.TopicAuthorizationFailed.Code, true
			case !exists || p < 0 || int(p) >= len(t.Partitions):
				code, refused = kerr.UnknownTopicOrPartition.Code, true
			}
			out[txn.TopicPartition{Topic: topic, Partition: p}] = code
		}
	}
	if !refused {
		return nil
	}
	return out
}

// txnOffsetCommitDenied is TxnOffsetCommit's check (WRITE on the
// transactional id, READ on the group: an error for the whole request,
// answered here, true), then READ on each topic: those refused are removed
// from req and their answers returned.
//
// resolved runs between the two checks (with or without an authorizer):
// v6's topic ids are named there, after the whole request's check, as
// Kafka does (topicids.go).
func (c *conn) txnOffsetCommitDenied(x *exchange, req *kmsg.TxnOffsetCommitRequest, resolved func()) (bool, []kmsg.TxnOffsetCommitResponseTopic) {
	if c.srv.authz == nil {
		resolved()
		return false, nil
	}
	if code := c.transactionDenied(req.TransactionalID, req.Group); code != 0 {
		x.respond(txnOffsetCommitError(req, code))
		return true, nil
	}
	resolved()
	var denied []kmsg.TxnOffsetCommitResponseTopic
	req.Topics = slices.DeleteFunc(req.Topics, func(rt kmsg.TxnOffsetCommitRequestTopic) bool {
		if c.authorizeTopic(acl.OpRead, rt.Topic) {
			return false
		}
		st := kmsg.NewTxnOffsetCommitResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
			sp.Partition, sp.ErrorCode = rp.Partition, kerr.TopicAuthorizationFailed.Code
			st.Partitions = append(st.Partitions, sp)
		}
		denied = append(denied, st)
		return true
	})
	return false, denied
}

// operationsOf are the operations each resource type supports, whose bits
// authorized_operations may set (Kafka's AclEntry.supportedOperations).
var operationsOf = map[acl.ResourceType][]acl.Operation{
	acl.ResourceTopic: {acl.OpRead, acl.OpWrite, acl.OpCreate, acl.OpDescribe, acl.OpDelete, acl.OpAlter,
		acl.OpDescribeConfigs, acl.OpAlterConfigs},
	// Kafka 4 added group configs: AclEntry.supportedOperations(GROUP).
	acl.ResourceGroup: {acl.OpRead, acl.OpDescribe, acl.OpDelete, acl.OpDescribeConfigs, acl.OpAlterConfigs},
	acl.ResourceCluster: {acl.OpCreate, acl.OpClusterAction, acl.OpDescribeConfigs, acl.OpAlterConfigs,
		acl.OpIdempotentWrite, acl.OpAlter, acl.OpDescribe},
}

// authorizedOperations is AuthHelper.authorizedOperations: the bits (1 <<
// code) of the operations the principal may perform on the resource;
// without an authorizer, def, what Strait reports then.
func (c *conn) authorizedOperations(rt acl.ResourceType, name string, def int32) int32 {
	if c.srv.authz == nil {
		return def
	}
	rc := c.requestContext()
	var bits int32
	for _, op := range operationsOf[rt] {
		if c.srv.authz.Authorize(rc, op, rt, name) {
			bits |= 1 << op
		}
	}
	return bits
}

// metadataAuthorizedOperations fills Metadata's authorized_operations when
// asked for (v8+): per topic answered, and the cluster's (v8-10).
func (c *conn) metadataAuthorizedOperations(req *kmsg.MetadataRequest, resp *kmsg.MetadataResponse) {
	if c.srv.authz == nil {
		// Without an authorizer Kafka answers every supported operation.
		if req.IncludeTopicAuthorizedOperations {
			for i := range resp.Topics {
				if resp.Topics[i].Topic != nil {
					resp.Topics[i].AuthorizedOperations = topicAuthorizedOperations
				}
			}
		}
		if req.IncludeClusterAuthorizedOperations {
			resp.AuthorizedOperations = clusterAuthorizedOperations
		}
		return
	}
	if req.IncludeTopicAuthorizedOperations {
		for i := range resp.Topics {
			// Every topic the principal may describe, answered with an
			// error (unknown, being created) or not, as KafkaApis does.
			if t := &resp.Topics[i]; t.ErrorCode != kerr.TopicAuthorizationFailed.Code && t.Topic != nil {
				t.AuthorizedOperations = c.authorizedOperations(acl.ResourceTopic, *t.Topic, 0)
			}
		}
	}
	if req.IncludeClusterAuthorizedOperations {
		resp.AuthorizedOperations = c.authorizedOperations(acl.ResourceCluster, acl.ClusterName, 0)
	}
}
