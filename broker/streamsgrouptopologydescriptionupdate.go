package broker

// StreamsGroupTopologyDescriptionUpdate (key 93), version 0 as Kafka 4.4
// serves it (KIP-1331): a streams member pushing its topology description
// when a heartbeat answer asked for it, kept by the group coordinator
// (coordinator/group/streams_description.go). Authorization as KafkaApis:
// with the streams protocol enabled, READ on the group.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/security/acl"
)

func init() {
	register(kmsg.StreamsGroupTopologyDescriptionUpdate, 0, 0, handleStreamsGroupTopologyDescriptionUpdate)
}

func handleStreamsGroupTopologyDescriptionUpdate(c *conn, x *exchange) {
	req := x.req.Body.(*kmsg.StreamsGroupTopologyDescriptionUpdateRequest)
	svc := c.srv.groups()
	if svc.settings.coord.StreamsProtocol && !c.authorizeGroup(acl.OpRead, req.Group) {
		resp := req.ResponseKind().(*kmsg.StreamsGroupTopologyDescriptionUpdateResponse)
		msg := kerr.GroupAuthorizationFailed.Description
		resp.ErrorCode, resp.ErrorMessage = kerr.GroupAuthorizationFailed.Code, &msg
		x.respond(resp)
		return
	}
	x.respond(svc.coord.StreamsGroupTopologyDescriptionUpdate(req))
}
