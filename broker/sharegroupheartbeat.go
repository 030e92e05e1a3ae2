package broker

// ShareGroupHeartbeat (key 76, KIP-932): a share group member joins, stays
// and leaves; the share coordinator (coordinator/share) assigns with
// Kafka's simple assignor. Authorization as KafkaApis: READ on the group
// (GROUP_AUTHORIZATION_FAILED), DESCRIBE on each subscribed topic
// (TOPIC_AUTHORIZATION_FAILED).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

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
	x.respond(c.srv.shares().Heartbeat(share.Client{ID: gc.ID, Host: gc.Host}, req, false))
}
