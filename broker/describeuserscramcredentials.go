package broker

// DescribeUserScramCredentials (key 50); versions: see the registration
// below.
//
// As Kafka 4's metadata image answers it (ScramImage.describe), from the
// controller's watch cache: no users (null or empty) lists every user with
// a credential; named users are answered once each, RESOURCE_NOT_FOUND for
// one without credentials, DUPLICATE_RESOURCE for one named twice. Each
// credential shows its mechanism and iterations, never its keys. DESCRIBE
// on the CLUSTER is required (CLUSTER_AUTHORIZATION_FAILED).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/security/acl"
)

func init() { register(kmsg.DescribeUserSCRAMCredentials, 0, 0, handleDescribeUserScramCredentials) }

func handleDescribeUserScramCredentials(c *conn, x *exchange) {
	req := x.req.Body.(*kmsg.DescribeUserSCRAMCredentialsRequest)
	s := c.srv
	resp := req.ResponseKind().(*kmsg.DescribeUserSCRAMCredentialsResponse)
	if !c.authorizeCluster(acl.OpDescribe) { // authorize.go
		// As the request's getErrorResponse: the error on the response
		// and on each user named (once each).
		msg := kmsg.StringPtr("Cluster authorization failed.")
		resp.ErrorCode, resp.ErrorMessage = kerr.ClusterAuthorizationFailed.Code, msg
		seen := map[string]bool{}
		for _, u := range req.Users {
			if seen[u.Name] {
				continue
			}
			seen[u.Name] = true
			r := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
			r.User, r.ErrorCode, r.ErrorMessage = u.Name, resp.ErrorCode, msg
			resp.Results = append(resp.Results, r)
		}
		x.respond(resp)
		return
	}
	users := make([]string, 0, len(req.Users))
	for _, u := range req.Users {
		users = append(users, u.Name)
	}
	for _, res := range s.ctrl.DescribeScramCredentials(users) {
		r := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
		r.User = res.User
		r.ErrorCode, r.ErrorMessage = s.apiErrorFields(res.Err, "DescribeUserScramCredentials", "")
		for _, ci := range res.Credentials {
			info := kmsg.NewDescribeUserSCRAMCredentialsResponseResultCredentialInfo()
			info.Mechanism, info.Iterations = ci.Mechanism, ci.Iterations
			r.CredentialInfos = append(r.CredentialInfos, info)
		}
		resp.Results = append(resp.Results, r)
	}
	x.respond(resp)
}
