package broker

// DescribeDelegationToken (key 41); versions: see the registration below.
//
// As Kafka 4 (KafkaApis.handleDescribeTokensRequest): refused with
// DELEGATION_TOKEN_REQUEST_NOT_ALLOWED on a connection that may not handle
// tokens (see allowTokenRequests), DELEGATION_TOKEN_AUTH_DISABLED without
// delegation.token.secret.key. An empty owner list describes nothing; a
// null one every token; otherwise the tokens owned or renewable by one of
// the owners. Of those, a principal sees the tokens it owns or renews, and
// with an authorizer those it holds DESCRIBE on (the DELEGATION_TOKEN) or
// DESCRIBE_TOKENS on (the owner, a USER) for; without one only its own and
// those it renews (mayDescribeTokensOf). Each token comes with its HMAC, as Kafka's.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/controller"
	"github.com/strait/strait/security"
)

func init() { register(kmsg.DescribeDelegationToken, 1, 3, handleDescribeDelegationToken) }

func handleDescribeDelegationToken(c *conn, x *exchange) {
	req := x.req.Body.(*kmsg.DescribeDelegationTokenRequest)
	s := c.srv
	resp := req.ResponseKind().(*kmsg.DescribeDelegationTokenResponse)
	resp.TokenDetails = []kmsg.DescribeDelegationTokenResponseTokenDetail{}
	switch {
	case !allowTokenRequests(c):
		resp.ErrorCode = kerr.DelegationTokenRequestNotAllowed.Code
	case !s.ctrl.TokensEnabled():
		resp.ErrorCode = kerr.DelegationTokenAuthDisabled.Code
	case req.Owners != nil && len(req.Owners) == 0:
	default:
		requester := c.principal()
		for _, t := range s.ctrl.DelegationTokens() {
			if req.Owners != nil && !ownedByAny(t, req.Owners) {
				continue
			}
			if !controller.OwnerOrRenewer(t, requester) && !s.mayDescribeTokensOf(c, t) {
				continue
			}
			d := kmsg.NewDescribeDelegationTokenResponseTokenDetail()
			d.PrincipalType, d.PrincipalName = t.Owner.Type, t.Owner.Name
			d.TokenRequesterPrincipalType, d.TokenRequesterPrincipalName = t.Requester.Type, t.Requester.Name
			d.IssueTimestamp, d.ExpiryTimestamp, d.MaxTimestamp = t.IssueTime.UnixMilli(), t.ExpiryTime.UnixMilli(), t.MaxTime.UnixMilli()
			d.TokenID, d.HMAC = t.TokenID, t.HMAC
			for _, r := range t.Renewers {
				rn := kmsg.NewDescribeDelegationTokenResponseTokenDetailRenewer()
				rn.PrincipalType, rn.PrincipalName = r.Type, r.Name
				d.Renewers = append(d.Renewers, rn)
			}
			resp.TokenDetails = append(resp.TokenDetails, d)
		}
	}
	x.respond(resp)
}

// ownedByAny reports whether one of owners owns or may renew t (Kafka's
// filter on the requested owners).
func ownedByAny(t security.DelegationToken, owners []kmsg.DescribeDelegationTokenRequestOwner) bool {
	for _, o := range owners {
		if controller.OwnerOrRenewer(t, security.Principal{Type: o.PrincipalType, Name: o.PrincipalName}) {
			return true
		}
	}
	return false
}
