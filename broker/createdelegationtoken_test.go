package broker_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// On a PLAINTEXT listener every delegation token request is refused with
// DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, tokens enabled or not, as Kafka's
// allowTokenRequests: tokens are handed out only over authenticated
// connections. (The successful paths over SASL are exercised with the
// controller directly; a SASL listener's wire test belongs with the
// connection's authentication.)
func TestDelegationTokensRefusedOnPlaintext(t *testing.T) {
	for _, secret := range []string{"", "s3cret"} {
		props := []string{}
		if secret != "" {
			props = append(props, "delegation.token.secret.key", secret)
		}
		srv := startBroker(t, t.TempDir(), props...)
		cl := newClient(t, srv)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)

		create := kmsg.NewPtrCreateDelegationTokenRequest()
		create.MaxLifetimeMillis = -1
		cr, err := create.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		if cr.ErrorCode != kerr.DelegationTokenRequestNotAllowed.Code || cr.PrincipalName != "ANONYMOUS" ||
			cr.PrincipalType != "User" || cr.IssueTimestamp != -1 || cr.MaxTimestamp != -1 || cr.TokenID != "" || len(cr.HMAC) != 0 {
			t.Errorf("secret %q: create %+v", secret, cr)
		}
		renew := kmsg.NewPtrRenewDelegationTokenRequest()
		renew.HMAC = []byte("x")
		if rr, err := renew.RequestWith(ctx, cl); err != nil || rr.ErrorCode != kerr.DelegationTokenRequestNotAllowed.Code || rr.ExpiryTimestamp != -1 {
			t.Errorf("secret %q: renew %+v %v", secret, rr, err)
		}
		expire := kmsg.NewPtrExpireDelegationTokenRequest()
		expire.HMAC = []byte("x")
		if er, err := expire.RequestWith(ctx, cl); err != nil || er.ErrorCode != kerr.DelegationTokenRequestNotAllowed.Code || er.ExpiryTimestamp != -1 {
			t.Errorf("secret %q: expire %+v %v", secret, er, err)
		}
		describe := kmsg.NewPtrDescribeDelegationTokenRequest()
		if dr, err := describe.RequestWith(ctx, cl); err != nil || dr.ErrorCode != kerr.DelegationTokenRequestNotAllowed.Code || len(dr.TokenDetails) != 0 {
			t.Errorf("secret %q: describe %+v %v", secret, dr, err)
		}
		cancel()
		srv.Close()
	}
}
