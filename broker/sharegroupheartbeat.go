package broker

// ShareGroupHeartbeat (key 76, KIP-932): a share group member joins, stays
// and leaves; the share coordinator (coordinator/share) assigns with
// Kafka's simple assignor. Authorization as KafkaApis: READ on the group
// (GROUP_AUTHORIZATION_FAILED), DESCRIBE on each subscribed topic
// (TOPIC_AUTHORIZATION_FAILED).

import (
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/coordinator/group"
	"github.com/strait/strait/coordinator/share"
	"github.com/strait/strait/security/acl"
)

func init() { register(kmsg.ShareGroupHeartbeat, 1, 1, handleShareGroupHeartbeat) }

func handleShareGroupHeartbeat(c *conn, x *exchange) {
	req := x.req.Body.(*kmsg.ShareGroupHeartbeatRequest)
	resp := req.ResponseKind().(*kmsg.ShareGroupHeartbeatResponse)
	if !c.authorizeGroup(acl.OpRead, req.GroupID) {
		msg := kerr.GroupAuthorizationFailed.Description
		resp.ErrorCode, resp.ErrorMessage = kerr.GroupAuthorizationFailed.Code, &msg
		x.respond(resp)
		return
	}
	for _, topic := range req.SubscribedTopicNames {
		if !c.authorizeTopic(acl.OpDescribe, topic) {
			resp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			x.respond(resp)
			return
		}
	}
	gc := groupClient(c, x)
	sc := c.srv.shares()
	// A join naming a classic or consumer group's id is refused, as Kafka's
	// one group namespace does ("Group g is not a share group.").
	other := req.MemberEpoch == 0 && !sc.IsShareGroup(req.GroupID) && c.srv.otherGroupExists(req.GroupID)
	x.respond(sc.Heartbeat(share.Client{ID: gc.ID, Host: gc.Host}, req, other))
}

// otherGroupExists reports whether the group coordinator has a classic or
// consumer group of that id.
func (s *Server) otherGroupExists(id string) bool {
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Version, req.Groups = 6, []string{id}
	resp := s.groups().coord.DescribeGroups(group.Client{Version: 6}, req)
	if len(resp.Groups) != 1 {
		return false
	}
	g := resp.Groups[0]
	return g.ErrorCode == 0 || g.ErrorCode == kerr.GroupIDNotFound.Code && g.ErrorMessage != nil && strings.HasSuffix(*g.ErrorMessage, "is not a classic group.")
}
