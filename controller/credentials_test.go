package controller

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/strait/strait/security"
)

func codeOf(err error) int16 {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	if err != nil {
		return -1
	}
	return 0
}

func upsert(user string, mech int8, iterations int32, password string) ScramUpsertion {
	salt := []byte("salt-of-" + user)
	salted, _ := security.SaltedPassword(ScramMechanismName(mech), []byte(password), salt, max(iterations, 1))
	return ScramUpsertion{User: user, Mechanism: mech, Iterations: iterations, Salt: salt, SaltedPassword: salted}
}

// SCRAM credentials are stored without the password, reach the cache of
// another controller on the same etcd, and are refused or deleted with
// Kafka's codes.
func TestScramCredentialsAlterDescribe(t *testing.T) {
	a := startController(t, withClientURL(testConfig(t, 1)))
	cfgB := testConfig(t, 2)
	cfgB.DataDir, cfgB.EtcdEndpoints = "", []string{a.EmbeddedClientURL()}
	b := startController(t, cfgB)

	res, err := a.AlterScramCredentials(ctxT(t), nil, []ScramUpsertion{
		upsert("alice", ScramMechanismSHA512, 8192, "alice-secret"),
		upsert("bob", ScramMechanismSHA256, 4096, "bob-secret"),
		upsert("", ScramMechanismSHA256, 4096, "x"),
		upsert("carol", 7, 4096, "x"),
		upsert("dave", ScramMechanismSHA256, 4095, "x"),
		upsert("erin", ScramMechanismSHA256, 16385, "x"),
		upsert("frank", ScramMechanismSHA256, 4096, "x"),
		upsert("frank", ScramMechanismSHA512, 4096, "x"),
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct {
		code int16
		msg  string
	}{
		"alice": {0, ""}, "bob": {0, ""},
		"":      {kerr.UnacceptableCredential.Code, "Username must not be empty"},
		"carol": {kerr.UnsupportedSaslMechanism.Code, "Unknown SCRAM mechanism"},
		"dave":  {kerr.UnacceptableCredential.Code, "Too few iterations"},
		"erin":  {kerr.UnacceptableCredential.Code, "Too many iterations"},
		"frank": {kerr.DuplicateResource.Code, "A user credential cannot be altered twice in the same request"},
	}
	if len(res) != len(want) {
		t.Fatalf("results %+v", res)
	}
	for _, r := range res {
		w, ok := want[r.User]
		if !ok || codeOf(r.Err) != w.code || ErrorMessage(r.Err) != w.msg {
			t.Errorf("%q: %v (%q), want %d %q", r.User, r.Err, ErrorMessage(r.Err), w.code, w.msg)
		}
	}

	// The stored value is the RFC 5802 credential, never the password.
	resp, err := a.client.Get(ctxT(t), a.ks.scramUsers(), clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 2 {
		t.Fatalf("%d credentials stored", len(resp.Kvs))
	}
	for _, kv := range resp.Kvs {
		if bytes.Contains(kv.Value, []byte("secret")) || !strings.Contains(string(kv.Value), `"storedKey"`) {
			t.Errorf("%s = %s", kv.Key, kv.Value)
		}
	}
	wantCred := upsert("alice", ScramMechanismSHA512, 8192, "alice-secret")
	exp, _ := security.NewScramCredential(security.ScramSHA512, wantCred.Salt, wantCred.SaltedPassword, 8192)
	eventually(t, "b's cache to have alice", func() bool {
		got, ok := b.ScramCredential(security.ScramSHA512, "alice")
		return ok && bytes.Equal(got.StoredKey, exp.StoredKey) && bytes.Equal(got.ServerKey, exp.ServerKey) && got.Iterations == 8192
	})
	if _, ok := a.ScramCredential(security.ScramSHA256, "alice"); ok {
		t.Error("alice has a SHA-256 credential")
	}

	d := a.DescribeScramCredentials(nil)
	if len(d) != 2 || d[0].User != "alice" || d[1].User != "bob" || d[0].Err != nil ||
		len(d[0].Credentials) != 1 || d[0].Credentials[0] != (ScramCredentialInfo{ScramMechanismSHA512, 8192}) {
		t.Errorf("describe all: %+v", d)
	}
	d = a.DescribeScramCredentials([]string{"bob", "nobody", "bob", "alice"})
	if len(d) != 3 || d[0].User != "bob" || codeOf(d[0].Err) != kerr.DuplicateResource.Code ||
		ErrorMessage(d[0].Err) != "Cannot describe SCRAM credentials for the same user twice in a single request: bob" ||
		d[1].User != "nobody" || codeOf(d[1].Err) != kerr.ResourceNotFound.Code ||
		ErrorMessage(d[1].Err) != "Attempt to describe a user credential that does not exist: nobody" ||
		d[2].User != "alice" || d[2].Err != nil {
		t.Errorf("describe named: %+v", d)
	}

	// Deletions: a missing one, a present one, and the user of the
	// present one upserted in the same request (a duplicate).
	res, err = b.AlterScramCredentials(ctxT(t), []ScramDeletion{
		{User: "alice", Mechanism: ScramMechanismSHA256},
		{User: "bob", Mechanism: ScramMechanismSHA256},
		{User: "alice", Mechanism: ScramMechanismSHA512}, // alice already failed: ignored
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 2 || res[0].User != "bob" || res[0].Err != nil || res[1].User != "alice" ||
		codeOf(res[1].Err) != kerr.ResourceNotFound.Code || ErrorMessage(res[1].Err) != "Attempt to delete a user credential that does not exist" {
		t.Errorf("deletions: %+v", res)
	}
	if _, ok := b.ScramCredential(security.ScramSHA256, "bob"); ok {
		t.Error("bob still cached on b after the deletion returned")
	}
	res, err = a.AlterScramCredentials(ctxT(t), []ScramDeletion{{User: "alice", Mechanism: ScramMechanismSHA512}},
		[]ScramUpsertion{upsert("alice", ScramMechanismSHA256, 4096, "x")})
	if err != nil || len(res) != 1 || codeOf(res[0].Err) != kerr.DuplicateResource.Code {
		t.Errorf("delete and upsert one user: %+v %v", res, err)
	}
	if _, ok := a.ScramCredential(security.ScramSHA512, "alice"); !ok {
		t.Error("a refused request changed alice")
	}
}

// Delegation tokens: created with Kafka's HMAC and times, looked up by
// HMAC, renewed and expired only by their owner or renewers, and removed by
// the active controller once expired.
func TestDelegationTokens(t *testing.T) {
	cfg := testConfig(t, 1)
	cfg.DelegationTokens = TokenConfig{SecretKey: "s3cret", MaxLifetime: time.Hour, ExpiryTime: 10 * time.Minute,
		ExpiryCheckInterval: 50 * time.Millisecond}
	c := startController(t, cfg)
	alice, bob, eve := security.User("alice"), security.User("bob"), security.User("eve")

	tok, err := c.CreateDelegationToken(ctxT(t), alice, alice, []security.Principal{bob}, -1)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(tok.HMAC, tokenHMAC([]byte("s3cret"), tok.TokenID)) || len(tok.HMAC) != 64 {
		t.Fatalf("hmac %x", tok.HMAC)
	}
	if d := tok.MaxTime.Sub(tok.IssueTime); d != time.Hour {
		t.Errorf("max lifetime %v", d)
	}
	if d := tok.ExpiryTime.Sub(tok.IssueTime); d != 10*time.Minute {
		t.Errorf("expiry %v", d)
	}
	got, ok := c.DelegationToken(tok.TokenID)
	if !ok || !bytes.Equal(got.HMAC, tok.HMAC) || got.Owner != alice || len(got.Renewers) != 1 || got.Renewers[0] != bob {
		t.Fatalf("cached %+v %v", got, ok)
	}
	// The HMAC is never stored.
	resp, err := c.client.Get(ctxT(t), c.ks.token(tok.TokenID))
	if err != nil || len(resp.Kvs) != 1 || strings.Contains(strings.ToLower(string(resp.Kvs[0].Value)), "hmac") {
		t.Fatalf("stored: %v %v", resp, err)
	}

	if _, err := c.CreateDelegationToken(ctxT(t), alice, alice, []security.Principal{{Type: "Group", Name: "g"}}, -1); !errors.Is(err, kerr.InvalidPrincipalType) {
		t.Errorf("group renewer: %v", err)
	}
	if _, err := c.RenewDelegationToken(ctxT(t), eve, tok.HMAC, -1); !errors.Is(err, kerr.DelegationTokenOwnerMismatch) {
		t.Errorf("renew by eve: %v", err)
	}
	if _, err := c.RenewDelegationToken(ctxT(t), bob, []byte("nope"), -1); !errors.Is(err, kerr.DelegationTokenNotFound) {
		t.Errorf("renew unknown: %v", err)
	}
	exp, err := c.RenewDelegationToken(ctxT(t), bob, tok.HMAC, 60_000)
	if err != nil || exp < time.Now().UnixMilli()+50_000 || exp > time.Now().UnixMilli()+60_000 {
		t.Errorf("renew by bob: %d %v", exp, err)
	}
	if got, _ := c.DelegationToken(tok.TokenID); got.ExpiryTime.UnixMilli() != exp {
		t.Errorf("cached expiry %v, want %d", got.ExpiryTime, exp)
	}
	if _, err := c.ExpireDelegationToken(ctxT(t), eve, tok.HMAC, -1); !errors.Is(err, kerr.DelegationTokenOwnerMismatch) {
		t.Errorf("expire by eve: %v", err)
	}
	if _, err := c.ExpireDelegationToken(ctxT(t), security.Principal{Type: "User", Name: "alice", TokenAuthenticated: true}, tok.HMAC, -1); err != nil {
		t.Errorf("expire by alice: %v", err)
	}
	if _, ok := c.DelegationToken(tok.TokenID); ok {
		t.Error("expired token still cached")
	}

	// A token of 1 ms: expired at once, so renewing fails and the active
	// controller's sweep removes it.
	short, err := c.CreateDelegationToken(ctxT(t), bob, alice, nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	if short.Owner != bob || short.Requester != alice || !short.MaxTime.Equal(short.IssueTime.Add(time.Millisecond)) {
		t.Errorf("short token %+v", short)
	}
	for deadline := time.Now().Add(time.Second); time.Now().UnixMilli() <= short.MaxTime.UnixMilli() && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	if _, err := c.RenewDelegationToken(ctxT(t), bob, short.HMAC, -1); !errors.Is(err, kerr.DelegationTokenExpired) &&
		!errors.Is(err, kerr.DelegationTokenNotFound) {
		t.Errorf("renew expired: %v", err)
	}
	eventually(t, "the expired token to be removed", func() bool { _, ok := c.DelegationToken(short.TokenID); return !ok })
	if n := len(c.DelegationTokens()); n != 0 {
		t.Errorf("%d tokens left", n)
	}
}

// Without delegation.token.secret.key, tokens are disabled.
func TestDelegationTokensDisabled(t *testing.T) {
	c := startController(t, testConfig(t, 1))
	if _, err := c.CreateDelegationToken(ctxT(t), security.User("a"), security.User("a"), nil, -1); !errors.Is(err, kerr.DelegationTokenAuthDisabled) {
		t.Errorf("create: %v", err)
	}
	if _, err := c.RenewDelegationToken(ctxT(t), security.User("a"), []byte("x"), -1); !errors.Is(err, kerr.DelegationTokenAuthDisabled) {
		t.Errorf("renew: %v", err)
	}
}
