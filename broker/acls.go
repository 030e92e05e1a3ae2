package broker

// DescribeAcls (key 29), CreateAcls (key 30) and DeleteAcls (key 31);
// versions: see the registrations below (Kafka 4 removed v0, KIP-896).
//
// As Kafka's AclApis: without authorizer.class.name every one of them is
// answered with SECURITY_DISABLED and Kafka's message, which is what the
// ACL pages of the admin UIs and MirrorMaker's ACL sync expect from a
// cluster without ACLs.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(kmsg.DescribeACLs, 1, 3, handleDescribeAcls)
	register(kmsg.CreateACLs, 1, 3, handleCreateAcls)
	register(kmsg.DeleteACLs, 1, 3, handleDeleteAcls)
}

// Kafka's messages without an authorizer; DescribeAcls has its own wording.
var (
	noAuthorizerMsg         = "No Authorizer is configured."
	noAuthorizerDescribeMsg = "No Authorizer is configured on the broker"
)

func handleDescribeAcls(c *conn, x *exchange) {
	req := x.req.Body.(*kmsg.DescribeACLsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeACLsResponse)
	resp.ErrorCode, resp.ErrorMessage = kerr.SecurityDisabled.Code, &noAuthorizerDescribeMsg
	x.respond(resp)
}

func handleCreateAcls(c *conn, x *exchange) {
	req := x.req.Body.(*kmsg.CreateACLsRequest)
	resp := req.ResponseKind().(*kmsg.CreateACLsResponse)
	for range req.Creations {
		r := kmsg.NewCreateACLsResponseResult()
		r.ErrorCode, r.ErrorMessage = kerr.SecurityDisabled.Code, &noAuthorizerMsg
		resp.Results = append(resp.Results, r)
	}
	x.respond(resp)
}

func handleDeleteAcls(c *conn, x *exchange) {
	req := x.req.Body.(*kmsg.DeleteACLsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteACLsResponse)
	for range req.Filters {
		r := kmsg.NewDeleteACLsResponseResult()
		r.ErrorCode, r.ErrorMessage = kerr.SecurityDisabled.Code, &noAuthorizerMsg
		resp.Results = append(resp.Results, r)
	}
	x.respond(resp)
}
