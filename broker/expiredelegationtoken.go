package broker

// ExpireDelegationToken (key 40); versions: see the registration below.
//
// As Kafka 4: refused with DELEGATION_TOKEN_REQUEST_NOT_ALLOWED (expiry -1)
// on a connection that may not handle tokens (see allowTokenRequests);
// otherwise the token found by its HMAC gets, from its owner or a renewer,
// the expiry now + expiry_time_period_ms (not past its max time), and a
// negative period removes it at once. Errors: DELEGATION_TOKEN_AUTH_DISABLED,
// DELEGATION_TOKEN_NOT_FOUND, DELEGATION_TOKEN_OWNER_MISMATCH,
// DELEGATION_TOKEN_EXPIRED (a positive period on an expired token).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.ExpireDelegationToken, 1, 2, handleExpireDelegationToken) }

func handleExpireDelegationToken(c *conn, x *exchange) {
	req := x.req.Body.(*kmsg.ExpireDelegationTokenRequest)
	s := c.srv
	resp := req.ResponseKind().(*kmsg.ExpireDelegationTokenResponse)
	if !allowTokenRequests(c) {
		resp.ErrorCode, resp.ExpiryTimestamp = kerr.DelegationTokenRequestNotAllowed.Code, -1
		x.respond(resp)
		return
	}
	ctx, cancel := requestContext(0)
	defer cancel()
	expiry, err := s.ctrl.ExpireDelegationToken(ctx, c.principal(), req.HMAC, req.ExpiryPeriodMillis)
	resp.ErrorCode, _ = s.apiErrorFields(err, "ExpireDelegationToken", "")
	resp.ExpiryTimestamp = expiry
	x.respond(resp)
}
