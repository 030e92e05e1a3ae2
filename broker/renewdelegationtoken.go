package broker

// RenewDelegationToken (key 39); versions: see the registration below.
//
// As Kafka 4: refused with DELEGATION_TOKEN_REQUEST_NOT_ALLOWED (expiry -1)
// on a connection that may not handle tokens (see allowTokenRequests);
// otherwise the token is found by its HMAC and renewed by its owner or a
// renewer to now + renew_period_ms (capped by delegation.token.expiry.time.ms,
// a period <= 0 taking it, never past the token's max time), or fails with
// DELEGATION_TOKEN_AUTH_DISABLED, DELEGATION_TOKEN_NOT_FOUND,
// DELEGATION_TOKEN_EXPIRED or DELEGATION_TOKEN_OWNER_MISMATCH.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { register(kmsg.RenewDelegationToken, 1, 2, handleRenewDelegationToken) }

func handleRenewDelegationToken(c *conn, x *exchange) {
	req := x.req.Body.(*kmsg.RenewDelegationTokenRequest)
	s := c.srv
	resp := req.ResponseKind().(*kmsg.RenewDelegationTokenResponse)
	if !allowTokenRequests(c) {
		resp.ErrorCode, resp.ExpiryTimestamp = kerr.DelegationTokenRequestNotAllowed.Code, -1
		x.respond(resp)
		return
	}
	ctx, cancel := requestContext(0)
	defer cancel()
	expiry, err := s.ctrl.RenewDelegationToken(ctx, c.principal(), req.HMAC, req.RenewTimeMillis)
	resp.ErrorCode, _ = s.apiErrorFields(err, "RenewDelegationToken", "")
	resp.ExpiryTimestamp = expiry
	x.respond(resp)
}
