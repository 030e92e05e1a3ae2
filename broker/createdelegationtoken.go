package broker

// CreateDelegationToken (key 38); versions: see the registration below.
//
// As Kafka 4 (KafkaApis.handleCreateTokenRequest, then the controller's
// DelegationTokenControlManager): DELEGATION_TOKEN_REQUEST_NOT_ALLOWED on a
// PLAINTEXT connection, a TLS one without a client certificate, or one
// authenticated with a delegation token; INVALID_PRINCIPAL_TYPE for a
// renewer that is not a User; DELEGATION_TOKEN_AUTH_DISABLED without
// delegation.token.secret.key. The token's owner is the requester unless
// v3's owner fields name another principal: that needs CREATE_TOKENS on
// the user (DELEGATION_TOKEN_AUTHORIZATION_FAILED), and without an
// authorizer it is refused (a Kafka without an authorizer would allow it:
// a token for another user is that user's identity). The token lives min(max_lifetime_ms,
// delegation.token.max.lifetime.ms) and expires after
// delegation.token.expiry.time.ms unless renewed.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/security"
	"github.com/strait/strait/security/acl"
)

func init() { register(kmsg.CreateDelegationToken, 1, 3, handleCreateDelegationToken) }

func handleCreateDelegationToken(c *conn, x *exchange) {
	req := x.req.Body.(*kmsg.CreateDelegationTokenRequest)
	s := c.srv
	resp := req.ResponseKind().(*kmsg.CreateDelegationTokenResponse)
	requester := c.principal()
	owner := security.Principal{Type: requester.Type, Name: requester.Name}
	if req.OwnerPrincipalName != nil && *req.OwnerPrincipalName != "" {
		owner = security.Principal{Type: "User", Name: *req.OwnerPrincipalName}
		if req.OwnerPrincipalType != nil {
			owner.Type = *req.OwnerPrincipalType
		}
	}
	resp.PrincipalType, resp.PrincipalName = owner.Type, owner.Name
	resp.TokenRequesterPrincipalType, resp.TokenRequesterPrincipalName = requester.Type, requester.Name
	resp.HMAC = []byte{}
	// The broker's own refusals carry -1 timestamps
	// (CreateDelegationTokenResponse.prepareResponse); the controller's, 0.
	refuse := func(code *kerr.Error) {
		resp.ErrorCode = code.Code
		resp.IssueTimestamp, resp.ExpiryTimestamp, resp.MaxTimestamp = -1, -1, -1
		x.respond(resp)
	}
	renewers := make([]security.Principal, 0, len(req.Renewers))
	for _, r := range req.Renewers {
		renewers = append(renewers, security.Principal{Type: r.PrincipalType, Name: r.PrincipalName})
	}
	switch {
	case !allowTokenRequests(c):
		refuse(kerr.DelegationTokenRequestNotAllowed)
		return
	case (owner.Type != requester.Type || owner.Name != requester.Name) && !s.mayCreateTokensFor(c, owner):
		refuse(kerr.DelegationTokenAuthorizationFailed)
		return
	}
	for _, r := range renewers {
		if r.Type != "User" {
			refuse(kerr.InvalidPrincipalType)
			return
		}
	}
	ctx, cancel := requestContext(0)
	defer cancel()
	requester.TokenAuthenticated = false
	tok, err := s.ctrl.CreateDelegationToken(ctx, owner, requester, renewers, req.MaxLifetimeMillis)
	if err != nil {
		resp.ErrorCode, _ = s.apiErrorFields(err, "CreateDelegationToken", "")
		x.respond(resp)
		return
	}
	resp.IssueTimestamp = tok.IssueTime.UnixMilli()
	resp.ExpiryTimestamp = tok.ExpiryTime.UnixMilli()
	resp.MaxTimestamp = tok.MaxTime.UnixMilli()
	resp.TokenID, resp.HMAC = tok.TokenID, tok.HMAC
	x.respond(resp)
}

// mayCreateTokensFor is Kafka's CREATE_TOKENS on the USER owner ("User:bob").
// Without an authorizer nobody may create a token for another principal
// (Kafka would let anyone).
func (s *Server) mayCreateTokensFor(c *conn, owner security.Principal) bool {
	return s.authz != nil && c.authorize(acl.OpCreateTokens, acl.ResourceUser, owner.String())
}

// mayDescribeTokensOf is Kafka's DESCRIBE on the DELEGATION_TOKEN, or
// DESCRIBE_TOKENS on its USER owner, for a token the principal neither owns
// nor renews. Without an authorizer a principal sees only its own tokens
// and those it renews (Kafka would show every token).
func (s *Server) mayDescribeTokensOf(c *conn, t security.DelegationToken) bool {
	return s.authz != nil && (c.authorize(acl.OpDescribe, acl.ResourceDelegationToken, t.TokenID) ||
		c.authorize(acl.OpDescribeTokens, acl.ResourceUser, t.Owner.String()))
}
