package broker

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/strait/strait/security/acl"
)

// Delegation tokens with an authorizer: a token for another owner needs
// CREATE_TOKENS on that USER, and another's token is described with
// DESCRIBE_TOKENS on its owner (Kafka's KafkaApis and
// DelegationTokenManager.filterToken).
func TestDelegationTokensAuthorized(t *testing.T) {
	srv := startTestBroker(t, map[string]string{
		"listeners":                   "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
		"sasl.enabled.mechanisms":     "PLAIN",
		"delegation.token.secret.key": "token-secret",
		"authorizer.class.name":       "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"listener.name.sasl_plaintext.plain.sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="a" user_bob="b";`,
	})
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	addr := listenerAddr(t, srv, "SASL_PLAINTEXT")
	client := func(user, pass string) *kgo.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.SASL(plain.Auth{User: user, Pass: pass}.AsMechanism()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	alice, bob := client("alice", "a"), client("bob", "b")
	// Send to this broker: franz-go would first look the cluster up.
	do := func(cl *kgo.Client, req kmsg.Request) kmsg.Response {
		t.Helper()
		resp, err := cl.Broker(1).Request(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	createFor := func(owner string) int16 {
		t.Helper()
		req := kmsg.NewPtrCreateDelegationTokenRequest()
		req.OwnerPrincipalType, req.OwnerPrincipalName = kmsg.StringPtr("User"), kmsg.StringPtr(owner)
		req.MaxLifetimeMillis = -1
		return do(alice, req).(*kmsg.CreateDelegationTokenResponse).ErrorCode
	}
	if c := createFor("bob"); c != kerr.DelegationTokenAuthorizationFailed.Code {
		t.Errorf("alice creating bob's token without CREATE_TOKENS: %v", kerr.ErrorForCode(c))
	}
	grant := func(b acl.Binding) {
		t.Helper()
		if errs, err := srv.ctrl.CreateACLs(ctx, []acl.Binding{b}); err != nil || errs[0] != nil {
			t.Fatal(err, errs)
		}
	}
	grant(acl.Binding{ResourceType: acl.ResourceUser, Name: "User:bob", Pattern: acl.PatternLiteral,
		Principal: "User:alice", Host: "*", Operation: acl.OpCreateTokens, Permission: acl.PermissionAllow})
	if c := createFor("bob"); c != 0 {
		t.Fatalf("alice creating bob's token with CREATE_TOKENS: %v", kerr.ErrorForCode(c))
	}
	// bob sees his token (he owns it); a third party would not. Here
	// alice, the requester but not owner or renewer, needs DESCRIBE_TOKENS.
	describe := func(cl *kgo.Client) int {
		t.Helper()
		req := kmsg.NewPtrDescribeDelegationTokenRequest()
		req.Owners = nil // every token
		resp := do(cl, req).(*kmsg.DescribeDelegationTokenResponse)
		if resp.ErrorCode != 0 {
			t.Fatalf("describe: %v", kerr.ErrorForCode(resp.ErrorCode))
		}
		return len(resp.TokenDetails)
	}
	if n := describe(bob); n != 1 {
		t.Errorf("bob sees %d tokens, want his 1", n)
	}
	if n := describe(alice); n != 0 {
		t.Errorf("alice sees %d tokens without DESCRIBE_TOKENS on bob", n)
	}
	grant(acl.Binding{ResourceType: acl.ResourceUser, Name: "User:bob", Pattern: acl.PatternLiteral,
		Principal: "User:alice", Host: "*", Operation: acl.OpDescribeTokens, Permission: acl.PermissionAllow})
	if n := describe(alice); n != 1 {
		t.Errorf("alice sees %d tokens with DESCRIBE_TOKENS on bob, want 1", n)
	}
}
