package broker

// CreateDelegationToken (key 38); versions: see the registration below.
//
// As Kafka 4 (KafkaApis.handleCreateTokenRequest, then the controller's
// DelegationTokenControlManager): DELEGATION_TOKEN_REQUEST_NOT_ALLOWED on a
// PLAINTEXT connection, a TLS one without a client certificate, or one
// authenticated with a delegation token; INVALID_PRINCIPAL_TYPE for a
// renewer that is not a User; DELEGATION_TOKEN_AUTH_DISABLED without
// delegation.token.secret.key. The token's owner is the requester unless
// v3's owner fields name another principal: Kafka then requires
// CREATE_TOKENS on that user, and until Strait has ACLs creating a token
// for someone else is refused with DELEGATION_TOKEN_AUTHORIZATION_FAILED
// (a Kafka without an authorizer would allow it: a token for another user
// is that user's identity). The token lives min(max_lifetime_ms,
// delegation.token.max.lifetime.ms) and expires after
// delegation.token.expiry.time.ms unless renewed.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/security"
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

// mayCreateTokensFor is Kafka's CREATE_TOKENS on USER owner. Until Strait
// has ACLs nobody may create a token for another principal.
func (s *Server) mayCreateTokensFor(c *conn, owner security.Principal) bool { return false }

// mayDescribeTokensOf is Kafka's DESCRIBE on the token, or DESCRIBE_TOKENS on
// its owner, for a token the principal neither owns nor renews. Until Strait
// has ACLs a principal sees only its own tokens and those it renews.
func (s *Server) mayDescribeTokensOf(c *conn, t security.DelegationToken) bool { return false }
