package broker

// The group APIs' handlers, kept in this one file because each is a line
// handing the request to the group coordinator (coordinator/group), which
// documents their behaviour: JoinGroup (11), SyncGroup (14), Heartbeat
// (12), LeaveGroup (13), OffsetCommit (8), OffsetFetch (9), OffsetDelete
// (47), ListGroups (16), DescribeGroups (15), DeleteGroups (42),
// ConsumerGroupHeartbeat (68) and ConsumerGroupDescribe (69). Versions: see
// the registrations below. TxnOffsetCommit, StreamsGroupHeartbeat and
// StreamsGroupDescribe have their own files (txnoffsetcommit.go,
// streamsgroupheartbeat.go, streamsgroupdescribe.go), and the coordinator's
// wiring is group_service.go.
//
// JoinGroup and SyncGroup park until the rebalance gets there: the
// coordinator calls back, possibly from a timer goroutine, and the
// connection's read loop goes on meanwhile (the response keeps its place in
// the write order). Authorization (authorize.go) comes first: READ on the
// group for the membership APIs and OffsetCommit, and READ on each topic
// committed; DESCRIBE on the group and its topics for OffsetFetch,
// DescribeGroups, ConsumerGroupDescribe and ListGroups (which leaves out
// the groups not described unless the cluster may be); DELETE on the group
// for DeleteGroups and OffsetDelete (with READ on its topics);
// READ on the group and DESCRIBE on the subscribed topics for
// ConsumerGroupHeartbeat. With one broker, this broker coordinates every group;
// ListGroups lists the groups it coordinates, as in Kafka. OffsetCommit and
// OffsetFetch v10 name topics by id (topicids.go).

import (
	"net"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/coordinator/group"
	"github.com/strait/strait/security/acl"
)

func init() {
	register(kmsg.JoinGroup, 0, 9, handleJoinGroup)
	register(kmsg.SyncGroup, 0, 5, handleSyncGroup)
	register(kmsg.Heartbeat, 0, 4, handleHeartbeat)
	register(kmsg.LeaveGroup, 0, 5, handleLeaveGroup)
	register(kmsg.OffsetCommit, 2, 10, handleOffsetCommit)
	register(kmsg.OffsetFetch, 1, 10, handleOffsetFetch)
	register(kmsg.OffsetDelete, 0, 0, handleOffsetDelete)
	register(kmsg.ListGroups, 0, 5, handleListGroups)
	register(kmsg.DescribeGroups, 0, 6, handleDescribeGroups)
	register(kmsg.DeleteGroups, 0, 3, handleDeleteGroups)
	register(kmsg.ConsumerGroupHeartbeat, 0, 1, handleConsumerGroupHeartbeat)
	register(kmsg.ConsumerGroupDescribe, 0, 1, handleConsumerGroupDescribe)
}

// groupClient describes the request for the coordinator: version, client.id
// and the client's address as Kafka shows it ("/127.0.0.1").
func groupClient(c *conn, x *exchange) group.Client {
	host := ""
	if a, ok := c.nc.RemoteAddr().(*net.TCPAddr); ok {
		host = "/" + a.IP.String()
	}
	cl := group.Client{Version: x.req.Version, ID: clientID(x), Host: host}
	if a := c.srv.authz; a != nil {
		// A regex subscription resolves only to the topics the principal
		// whose request triggers the resolution may describe (KAFKA-18813):
		// a ConsumerGroupHeartbeat's, or a classic member's JoinGroup in a
		// mixed group.
		rc := c.requestContext()
		cl.MayDescribeTopic = func(topic string) bool {
			return a.Authorize(rc, acl.OpDescribe, acl.ResourceTopic, topic)
		}
	}
	return cl
}

// JoinGroup (key 11): answered when the rebalance completes the join.
func handleJoinGroup(c *conn, x *exchange) {
	req := x.req.Body.(*kmsg.JoinGroupRequest)
	if x.req.Version == 0 {
		// v0 has no rebalance timeout: the session timeout is both, as in
		// Kafka's KafkaApis (Kafka 4.1 serves v0-1 again, KAFKA-19444).
		req.RebalanceTimeoutMillis = req.SessionTimeoutMillis
	}
	if c.groupDenied(x, req.Group) {
		return
	}
	c.srv.groups().coord.JoinGroup(groupClient(c, x), req, func(r *kmsg.JoinGroupResponse) { x.respondAsync(r) })
}

// SyncGroup (key 14): answered when the leader's assignment arrives.
func handleSyncGroup(c *conn, x *exchange) {
	req := x.req.Body.(*kmsg.SyncGroupRequest)
	// v5+ must name the protocol type and name; KafkaApis checks that
	// before it authorizes.
	if req.Version >= 5 && (req.ProtocolType == nil || req.Protocol == nil) {
		resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
		resp.ErrorCode = kerr.InconsistentGroupProtocol.Code
		x.respond(resp)
		return
	}
	if c.groupDenied(x, req.Group) {
		return
	}
	c.srv.groups().coord.SyncGroup(groupClient(c, x), req, func(r *kmsg.SyncGroupResponse) { x.respondAsync(r) })
}

// Heartbeat (key 12).
func handleHeartbeat(c *conn, x *exchange) {
	req := x.req.Body.(*kmsg.HeartbeatRequest)
	if c.groupDenied(x, req.Group) {
		return
	}
	x.respond(c.srv.groups().coord.Heartbeat(groupClient(c, x), req))
}

// LeaveGroup (key 13).
func handleLeaveGroup(c *conn, x *exchange) {
	req := x.req.Body.(*kmsg.LeaveGroupRequest)
	if c.groupDenied(x, req.Group) {
		return
	}
	x.respond(c.srv.groups().coord.LeaveGroup(groupClient(c, x), req))
}

// OffsetCommit (key 8).
func handleOffsetCommit(c *conn, x *exchange) {
	req := x.req.Body.(*kmsg.OffsetCommitRequest)
	if c.groupDenied(x, req.Group) {
		return
	}
	var unknownIDs []kmsg.OffsetCommitResponseTopic
	fillIDs := func(*kmsg.OffsetCommitResponse) {}
	if x.req.Version >= 10 { // topic ids (topicids.go)
		unknownIDs, fillIDs = c.srv.offsetCommitTopicIDs(req)
	}
	denied := c.offsetCommitDeniedTopics(req)
	resp := c.srv.groups().coord.OffsetCommit(groupClient(c, x), req)
	resp.Topics = append(resp.Topics, denied...)
	fillIDs(resp)
	resp.Topics = append(resp.Topics, unknownIDs...)
	x.respond(resp)
}

// OffsetFetch (key 9).
func handleOffsetFetch(c *conn, x *exchange) {
	req := x.req.Body.(*kmsg.OffsetFetchRequest)
	collapseOffsetFetch(req) // one answer per group and partition (dedup.go)
	fillIDs := func(*kmsg.OffsetFetchResponse) {}
	if x.req.Version >= 10 { // topic ids (topicids.go)
		fillIDs = c.srv.offsetFetchTopicIDs(req)
	}
	fix := c.authorizeOffsetFetch(req)
	resp := c.srv.groups().coord.OffsetFetch(groupClient(c, x), req)
	fix(resp)
	fillIDs(resp)
	x.respond(resp)
}

// OffsetDelete (key 47).
func handleOffsetDelete(c *conn, x *exchange) {
	req := x.req.Body.(*kmsg.OffsetDeleteRequest)
	answered, denied := c.offsetDeleteDenied(x, req)
	if answered {
		return
	}
	resp := c.srv.groups().coord.OffsetDelete(groupClient(c, x), req)
	if resp.ErrorCode == 0 {
		resp.Topics = append(resp.Topics, denied...)
	}
	x.respond(resp)
}

// ListGroups (key 16).
func handleListGroups(c *conn, x *exchange) {
	req := x.req.Body.(*kmsg.ListGroupsRequest)
	resp := c.srv.groups().coord.ListGroups(groupClient(c, x), req)
	if resp.ErrorCode == 0 {
		addShareGroups(c.srv.shares(), req, resp) // sharegroupdescribe.go
	}
	c.filterListGroups(resp)
	x.respond(resp)
}

// DescribeGroups (key 15).
func handleDescribeGroups(c *conn, x *exchange) {
	req := x.req.Body.(*kmsg.DescribeGroupsRequest)
	resp := c.srv.groups().coord.DescribeGroups(groupClient(c, x), req)
	for i := range resp.Groups {
		if g := &resp.Groups[i]; g.ErrorCode == kerr.GroupIDNotFound.Code && c.srv.shares().IsShareGroup(g.Group) {
			msg := "Group " + g.Group + " is not a classic group."
			g.ErrorMessage = &msg
		}
	}
	c.fixDescribeGroups(resp)
	x.respond(resp)
}

// DeleteGroups (key 42).
func handleDeleteGroups(c *conn, x *exchange) {
	req := x.req.Body.(*kmsg.DeleteGroupsRequest)
	denied := c.deniedDeleteGroups(req)
	shared := deleteShareGroups(c.srv, req) // sharegroupdescribe.go
	resp := c.srv.groups().coord.DeleteGroups(groupClient(c, x), req)
	resp.Groups = append(resp.Groups, shared...)
	resp.Groups = append(resp.Groups, denied...)
	// v3 (KIP-1331) has an error message field; Kafka 4.4 leaves it null
	// for the group errors (NON_EMPTY_GROUP, GROUP_ID_NOT_FOUND), as the
	// conformance comparison with it shows.
	x.respond(resp)
}

// ConsumerGroupHeartbeat (key 68, KIP-848).
func handleConsumerGroupHeartbeat(c *conn, x *exchange) {
	req := x.req.Body.(*kmsg.ConsumerGroupHeartbeatRequest)
	if !c.authorizeGroup(acl.OpRead, req.Group) {
		resp := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
		msg := kerr.GroupAuthorizationFailed.Description
		resp.ErrorCode, resp.ErrorMessage = kerr.GroupAuthorizationFailed.Code, &msg
		x.respond(resp)
		return
	}
	for _, topic := range req.SubscribedTopicNames {
		if !c.authorizeTopic(acl.OpDescribe, topic) {
			// Kafka: a subscription naming a topic not described, no message.
			resp := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
			resp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			x.respond(resp)
			return
		}
	}
	if c.srv.shares().IsShareGroup(req.Group) {
		// Kafka's one group namespace: a share group is not a consumer group.
		resp := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
		msg := "Group " + req.Group + " is not a consumer group."
		resp.ErrorCode, resp.ErrorMessage = kerr.GroupIDNotFound.Code, &msg
		x.respond(resp)
		return
	}
	x.respond(c.srv.groups().coord.ConsumerGroupHeartbeat(groupClient(c, x), req))
}

// ConsumerGroupDescribe (key 69, KIP-848).
func handleConsumerGroupDescribe(c *conn, x *exchange) {
	req := x.req.Body.(*kmsg.ConsumerGroupDescribeRequest)
	resp := c.srv.groups().coord.ConsumerGroupDescribe(groupClient(c, x), req)
	c.fixConsumerGroupDescribe(resp)
	x.respond(resp)
}
