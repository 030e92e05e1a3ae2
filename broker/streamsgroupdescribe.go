package broker

// StreamsGroupDescribe (key 89), versions 0-1 as Kafka 4.4 serves them
// (KIP-1071, v1 from KIP-1331), answered by the group coordinator
// (coordinator/group/streams_describe.go). A group the principal may not
// DESCRIBE is GROUP_AUTHORIZATION_FAILED; authorized operations are filled
// in when asked for.

import (
	"math"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/security/acl"
)

func init() { register(kmsg.StreamsGroupDescribe, 0, 1, handleStreamsGroupDescribe) }

func handleStreamsGroupDescribe(c *conn, x *exchange) {
	req := x.req.Body.(*kmsg.StreamsGroupDescribeRequest)
	resp := c.srv.groups().coord.StreamsGroupDescribe(groupClient(c, x), req)
	if c.srv.authz != nil {
		for i, g := range resp.Groups {
			if !c.authorizeGroup(acl.OpDescribe, g.Group) {
				e := kmsg.NewStreamsGroupDescribeResponseGroup()
				msg := kerr.GroupAuthorizationFailed.Description
				e.Group, e.ErrorCode, e.ErrorMessage = g.Group, kerr.GroupAuthorizationFailed.Code, &msg
				resp.Groups[i] = e
			} else if g.AuthorizedOperations != math.MinInt32 {
				resp.Groups[i].AuthorizedOperations = c.authorizedOperations(acl.ResourceGroup, g.Group, g.AuthorizedOperations)
			}
		}
	}
	x.respond(resp)
}
