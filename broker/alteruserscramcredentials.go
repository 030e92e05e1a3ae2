package broker

// AlterUserScramCredentials (key 51); versions: see the registration below.
//
// As Kafka 4's controller (ScramControlManager.alterCredentials): the
// client sends each user's salt and salted password (never the password);
// the controller derives the stored and server keys and writes every
// accepted change in one etcd transaction. One result per user named:
// UNACCEPTABLE_CREDENTIAL (empty name, iterations outside 4096..16384),
// UNSUPPORTED_SASL_MECHANISM, DUPLICATE_RESOURCE (a user altered twice in
// the request), RESOURCE_NOT_FOUND (deleting a credential that does not
// exist). ALTER on the CLUSTER is required (CLUSTER_AUTHORIZATION_FAILED
// for every user named).

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/controller"
	"github.com/strait/strait/security/acl"
)

func init() { register(kmsg.AlterUserSCRAMCredentials, 0, 0, handleAlterUserScramCredentials) }

func handleAlterUserScramCredentials(c *conn, x *exchange) {
	req := x.req.Body.(*kmsg.AlterUserSCRAMCredentialsRequest)
	s := c.srv
	resp := req.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
	dels := make([]controller.ScramDeletion, 0, len(req.Deletions))
	for _, d := range req.Deletions {
		dels = append(dels, controller.ScramDeletion{User: d.Name, Mechanism: d.Mechanism})
	}
	ups := make([]controller.ScramUpsertion, 0, len(req.Upsertions))
	for _, u := range req.Upsertions {
		ups = append(ups, controller.ScramUpsertion{User: u.Name, Mechanism: u.Mechanism, Iterations: u.Iterations,
			Salt: u.Salt, SaltedPassword: u.SaltedPassword})
	}
	ctx, cancel := requestContext(0)
	defer cancel()
	var results []controller.ScramAlterResult
	err := errClusterAuthorization
	if c.authorizeCluster(acl.OpAlter) { // authorize.go
		results, err = s.ctrl.AlterScramCredentials(ctx, dels, ups)
	}
	if err != nil {
		// AlterUserScramCredentialsRequest.getErrorResponse: the error for
		// every user named.
		code, msg := s.apiErrorFields(err, "AlterUserScramCredentials", "")
		seen := map[string]bool{}
		add := func(user string) {
			if !seen[user] {
				seen[user] = true
				r := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
				r.User, r.ErrorCode, r.ErrorMessage = user, code, msg
				resp.Results = append(resp.Results, r)
			}
		}
		for _, d := range dels {
			add(d.User)
		}
		for _, u := range ups {
			add(u.User)
		}
		x.respond(resp)
		return
	}
	for _, res := range results {
		r := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		r.User = res.User
		r.ErrorCode, r.ErrorMessage = s.apiErrorFields(res.Err, "AlterUserScramCredentials", "")
		resp.Results = append(resp.Results, r)
	}
	x.respond(resp)
}
