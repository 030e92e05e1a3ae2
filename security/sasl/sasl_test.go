package sasl

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	kgosasl "github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/strait/strait/config"
	"github.com/strait/strait/security"
)

// memCreds is a Credentials from maps.
type memCreds struct {
	scram  map[string]security.ScramCredential // mechanism + "/" + user
	tokens map[string]security.DelegationToken
}

func (m *memCreds) ScramCredential(mechanism, user string) (security.ScramCredential, bool) {
	c, ok := m.scram[mechanism+"/"+user]
	return c, ok
}

func (m *memCreds) DelegationToken(id string) (security.DelegationToken, bool) {
	t, ok := m.tokens[id]
	return t, ok
}

func (m *memCreds) addUser(t *testing.T, mechanism, user, password string) {
	t.Helper()
	salt := make([]byte, 16)
	rand.Read(salt)
	salted, err := security.SaltedPassword(mechanism, []byte(password), salt, 4096)
	if err != nil {
		t.Fatal(err)
	}
	c, err := security.NewScramCredential(mechanism, salt, salted, 4096)
	if err != nil {
		t.Fatal(err)
	}
	m.scram[mechanism+"/"+user] = c
}

func newCreds() *memCreds {
	return &memCreds{scram: map[string]security.ScramCredential{}, tokens: map[string]security.DelegationToken{}}
}

func jaas(module string, opts map[string]string) config.JAAS {
	o := map[string]config.Password{}
	for k, v := range opts {
		o[k] = config.Password(v)
	}
	return config.JAAS{LoginModule: module, Flag: "required", Options: o}
}

func newServer(t *testing.T, cfg *config.SASL, creds security.Credentials) *Server {
	t.Helper()
	s, err := NewServer(cfg, creds)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// drive runs a franz-go client mechanism against a fresh exchange on s, as
// the broker's connection would, for at most 5 round trips.
func drive(t *testing.T, s *Server, mech kgosasl.Mechanism) (Authenticator, error) {
	t.Helper()
	a, err := s.Start(mech.Name())
	if err != nil {
		t.Fatal(err)
	}
	sess, tok, err := mech.Authenticate(context.Background(), "127.0.0.1:9092")
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		reply, done, err := a.Step(tok)
		if err != nil {
			return a, err
		}
		clientDone, next, cerr := sess.Challenge(reply)
		if done {
			if cerr != nil || !clientDone {
				t.Fatalf("server done, client: done=%v err=%v", clientDone, cerr)
			}
			return a, nil
		}
		if cerr != nil {
			return a, fmt.Errorf("client: %w", cerr)
		}
		tok = next
	}
	t.Fatal("exchange did not finish in 5 steps")
	return nil, nil
}

func wantAuthError(t *testing.T, err error, msg string) {
	t.Helper()
	var ae *AuthError
	if !errors.As(err, &ae) {
		t.Fatalf("error %v (%T), want *AuthError", err, err)
	}
	if ae.Message != msg {
		t.Fatalf("message %q, want %q", ae.Message, msg)
	}
}

func TestMechanismsAndStart(t *testing.T) {
	s := newServer(t, &config.SASL{
		EnabledMechanisms: []string{"SCRAM-SHA-512", "PLAIN"},
		JAAS: map[string]config.JAAS{
			"SCRAM-SHA-512": jaas("org.apache.kafka.common.security.scram.ScramLoginModule", nil),
			"PLAIN":         jaas("org.apache.kafka.common.security.plain.PlainLoginModule", nil),
		},
	}, newCreds())
	if got := strings.Join(s.Mechanisms(), ","); got != "SCRAM-SHA-512,PLAIN" {
		t.Fatalf("Mechanisms = %s", got)
	}
	if _, err := s.Start("SCRAM-SHA-256"); err != ErrUnsupportedMechanism {
		t.Fatalf("Start(SCRAM-SHA-256) = %v", err)
	}
	if _, err := s.Start("GSSAPI"); err != ErrUnsupportedMechanism {
		t.Fatalf("Start(GSSAPI) = %v", err)
	}
}

func plainServer(t *testing.T) *Server {
	return newServer(t, &config.SASL{
		EnabledMechanisms: []string{"PLAIN"},
		JAAS: map[string]config.JAAS{"PLAIN": jaas("org.apache.kafka.common.security.plain.PlainLoginModule",
			map[string]string{"username": "admin", "password": "admin-secret", "user_admin": "admin-secret", "user_alice": "alice-secret"})},
	}, nil)
}

func TestPlain(t *testing.T) {
	s := plainServer(t)
	a, err := drive(t, s, plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism())
	if err != nil {
		t.Fatal(err)
	}
	if a.Principal() != security.User("alice") || !a.Expiry().IsZero() {
		t.Fatalf("principal %v expiry %v", a.Principal(), a.Expiry())
	}
	if _, _, err := a.Step([]byte("\x00alice\x00alice-secret")); err != ErrIllegalState {
		t.Fatalf("step after completion: %v", err)
	}

	cases := []struct {
		token, msg string
	}{
		{"\x00alice\x00wrong", "Authentication failed: Invalid username or password"},
		{"\x00mallory\x00alice-secret", "Authentication failed: Invalid username or password"},
		{"admin\x00alice\x00alice-secret", "Authentication failed: Client requested an authorization id that is different from username"},
		{"alice\x00alice-secret", "Invalid SASL/PLAIN response: expected 3 tokens, got 2"},
		{"a\x00b\x00c\x00d\x00e", "Invalid SASL/PLAIN response: expected 3 tokens, got 4"},
		{"\x00\x00pw", "Authentication failed: username not specified"},
		{"\x00alice\x00", "Authentication failed: password not specified"},
	}
	for _, tc := range cases {
		a, _ := s.Start("PLAIN")
		_, done, err := a.Step([]byte(tc.token))
		if done {
			t.Fatalf("%q: done", tc.token)
		}
		wantAuthError(t, err, tc.msg)
		if strings.Contains(err.Error(), "secret") {
			t.Fatalf("error reveals a password: %v", err)
		}
		if _, _, err := a.Step([]byte("\x00alice\x00alice-secret")); err != ErrIllegalState {
			t.Fatalf("step after failure: %v", err)
		}
	}
	// The authzid may equal the user.
	a, _ = s.Start("PLAIN")
	if _, done, err := a.Step([]byte("alice\x00alice\x00alice-secret")); !done || err != nil {
		t.Fatalf("authzid = user: %v %v", done, err)
	}
}

func scramServer(t *testing.T, creds *memCreds) *Server {
	return newServer(t, &config.SASL{
		EnabledMechanisms: []string{"SCRAM-SHA-256", "SCRAM-SHA-512"},
		JAAS: map[string]config.JAAS{
			"SCRAM-SHA-256": jaas("org.apache.kafka.common.security.scram.ScramLoginModule", nil),
			"SCRAM-SHA-512": jaas("org.apache.kafka.common.security.scram.ScramLoginModule", nil),
		},
	}, creds)
}

// TestScramRFC7677Vector: RFC 7677 section 3's SCRAM-SHA-256 exchange, byte for byte.
func TestScramRFC7677Vector(t *testing.T) {
	creds := newCreds()
	salt, _ := base64.StdEncoding.DecodeString("W22ZaJ0SNY7soEsUEjb6gQ==")
	salted, _ := security.SaltedPassword("SCRAM-SHA-256", []byte("pencil"), salt, 4096)
	c, _ := security.NewScramCredential("SCRAM-SHA-256", salt, salted, 4096)
	creds.scram["SCRAM-SHA-256/user"] = c
	s := scramServer(t, creds)
	s.testNonce = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
	a, _ := s.Start("SCRAM-SHA-256")
	reply, done, err := a.Step([]byte("n,,n=user,r=rOprNGfwEbeRWgbNEkqO"))
	if err != nil || done {
		t.Fatal(done, err)
	}
	if want := "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"; string(reply) != want {
		t.Fatalf("server-first %q, want %q", reply, want)
	}
	reply, done, err = a.Step([]byte("c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="))
	if err != nil || !done {
		t.Fatal(done, err)
	}
	if want := "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="; string(reply) != want {
		t.Fatalf("server-final %q, want %q", reply, want)
	}
	if a.Principal() != security.User("user") {
		t.Fatalf("principal %v", a.Principal())
	}
}

func TestScramWithFranzGo(t *testing.T) {
	creds := newCreds()
	for _, m := range []string{"SCRAM-SHA-256", "SCRAM-SHA-512"} {
		creds.addUser(t, m, "alice", "alice-secret")
		creds.addUser(t, m, "we,i=rd", "weird-secret")
	}
	s := scramServer(t, creds)
	for _, mech := range []string{"SCRAM-SHA-256", "SCRAM-SHA-512"} {
		as := func(a scram.Auth) kgosasl.Mechanism {
			if mech == "SCRAM-SHA-256" {
				return a.AsSha256Mechanism()
			}
			return a.AsSha512Mechanism()
		}
		for _, user := range []string{"alice", "we,i=rd"} {
			pass := map[string]string{"alice": "alice-secret", "we,i=rd": "weird-secret"}[user]
			a, err := drive(t, s, as(scram.Auth{User: user, Pass: pass}))
			if err != nil {
				t.Fatalf("%s %s: %v", mech, user, err)
			}
			if a.Principal() != security.User(user) || a.Principal().TokenAuthenticated || !a.Expiry().IsZero() {
				t.Fatalf("%s: principal %+v expiry %v", mech, a.Principal(), a.Expiry())
			}
			if _, _, err := a.Step([]byte("x")); err != ErrIllegalState {
				t.Fatalf("step after completion: %v", err)
			}
		}
		generic := "Authentication failed during authentication due to invalid credentials with SASL mechanism " + mech
		_, err := drive(t, s, as(scram.Auth{User: "alice", Pass: "wrong"}))
		wantAuthError(t, err, generic)
		// An unknown user fails the same way, after the same number of steps.
		_, err = drive(t, s, as(scram.Auth{User: "mallory", Pass: "wrong"}))
		wantAuthError(t, err, generic)
		_, err = drive(t, s, as(scram.Auth{User: "alice", Pass: "alice-secret", Zid: "admin"}))
		wantAuthError(t, err, "Authentication failed: Client requested an authorization id that is different from username")
		// A delegation token id that is not a token.
		_, err = drive(t, s, as(scram.Auth{User: "alice", Pass: "alice-secret", IsToken: true}))
		wantAuthError(t, err, generic)
	}
}

func TestScramRejectsBadMessages(t *testing.T) {
	creds := newCreds()
	creds.addUser(t, "SCRAM-SHA-256", "alice", "alice-secret")
	s := scramServer(t, creds)
	generic := "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256"
	for _, first := range []string{
		"p=tls-server-end-point,,n=alice,r=abc", // channel binding
		"y,,n=alice,r=abc",
		"n,,n=al=ice,r=abc", // bad saslname escape
		"n,,n=alice",
		"",
		strings.Repeat("x", 1000),
	} {
		a, _ := s.Start("SCRAM-SHA-256")
		_, _, err := a.Step([]byte(first))
		wantAuthError(t, err, generic)
		if _, _, err := a.Step([]byte(first)); err != ErrIllegalState {
			t.Fatalf("step after failure: %v", err)
		}
	}
	// A client-final with a foreign nonce fails even with the right proof
	// shape; so does a channel binding that is not the gs2 header.
	for _, mutate := range []func(nonce string) string{
		func(n string) string {
			return "c=biws,r=someoneelse,p=" + base64.StdEncoding.EncodeToString(make([]byte, 32))
		},
		func(n string) string {
			return "c=biws,r=" + n + "x,p=" + base64.StdEncoding.EncodeToString(make([]byte, 32))
		},
		func(n string) string {
			return "c=eSws,r=" + n + ",p=" + base64.StdEncoding.EncodeToString(make([]byte, 32))
		},
		func(n string) string { return "c=biws,r=" + n + ",p=AAAA" },
		func(n string) string { return "c=biws,r=" + n },
	} {
		a, _ := s.Start("SCRAM-SHA-256")
		reply, _, err := a.Step([]byte("n,,n=alice,r=clientnonce"))
		if err != nil {
			t.Fatal(err)
		}
		nonce := strings.TrimPrefix(strings.Split(string(reply), ",")[0], "r=")
		if !strings.HasPrefix(nonce, "clientnonce") || len(nonce) < len("clientnonce")+16 {
			t.Fatalf("server nonce %q", nonce)
		}
		_, done, err := a.Step([]byte(mutate(nonce)))
		if done {
			t.Fatal("done")
		}
		wantAuthError(t, err, generic)
	}
}

func TestScramDelegationToken(t *testing.T) {
	creds := newCreds()
	hmac := make([]byte, 64)
	rand.Read(hmac)
	now := time.Now()
	creds.tokens["tok1"] = security.DelegationToken{TokenID: "tok1", HMAC: hmac, Owner: security.User("alice"),
		ExpiryTime: now.Add(time.Hour), MaxTime: now.Add(24 * time.Hour)}
	creds.tokens["old"] = security.DelegationToken{TokenID: "old", HMAC: hmac, Owner: security.User("alice"),
		ExpiryTime: now.Add(-time.Second)}
	s := scramServer(t, creds)
	pass := base64.StdEncoding.EncodeToString(hmac)
	for _, m := range []kgosasl.Mechanism{
		scram.Auth{User: "tok1", Pass: pass, IsToken: true}.AsSha256Mechanism(),
		scram.Auth{User: "tok1", Pass: pass, IsToken: true}.AsSha512Mechanism(),
	} {
		a, err := drive(t, s, m)
		if err != nil {
			t.Fatalf("%s: %v", m.Name(), err)
		}
		want := security.Principal{Type: "User", Name: "alice", TokenAuthenticated: true}
		if a.Principal() != want || !a.Expiry().Equal(now.Add(time.Hour)) {
			t.Fatalf("principal %+v expiry %v", a.Principal(), a.Expiry())
		}
		// Without tokenauth the token id is a user name, which does not exist.
		_, err = drive(t, s, scram.Auth{User: "tok1", Pass: pass}.AsSha256Mechanism())
		wantAuthError(t, err, "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256")
	}
	_, err := drive(t, s, scram.Auth{User: "tok1", Pass: "bad", IsToken: true}.AsSha256Mechanism())
	wantAuthError(t, err, "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256")
	_, err = drive(t, s, scram.Auth{User: "old", Pass: pass, IsToken: true}.AsSha256Mechanism())
	wantAuthError(t, err, "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256")
}

// unsecuredToken is an alg-none JWS with claims.
func unsecuredToken(claims map[string]any) string {
	h, _ := json.Marshal(map[string]any{"alg": "none"})
	c, _ := json.Marshal(claims)
	return base64.RawURLEncoding.EncodeToString(h) + "." + base64.RawURLEncoding.EncodeToString(c) + "."
}

func oauthServer(t *testing.T, o config.OAuthBearer, opts map[string]string) *Server {
	return newServer(t, &config.SASL{
		EnabledMechanisms: []string{"OAUTHBEARER"},
		JAAS:              map[string]config.JAAS{"OAUTHBEARER": jaas("org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule", opts)},
		OAuth:             o,
	}, nil)
}

func TestOAuthUnsecured(t *testing.T) {
	s := oauthServer(t, config.OAuthBearer{Unsecured: true}, map[string]string{"unsecuredLoginStringClaim_sub": "admin"})
	now := time.Now()
	exp := now.Add(time.Hour).Unix()
	a, err := drive(t, s, oauth.Auth{Token: unsecuredToken(map[string]any{"sub": "alice", "exp": exp, "iat": now.Unix()})}.AsMechanism())
	if err != nil {
		t.Fatal(err)
	}
	if a.Principal() != security.User("alice") || a.Expiry().Unix() != exp {
		t.Fatalf("principal %v expiry %v", a.Principal(), a.Expiry())
	}
	// Extensions are accepted.
	if _, err := drive(t, s, oauth.Auth{Token: unsecuredToken(map[string]any{"sub": "alice", "exp": exp}), Extensions: map[string]string{"traceId": "123"}}.AsMechanism()); err != nil {
		t.Fatal(err)
	}

	bad := []map[string]any{
		{"sub": "alice", "exp": now.Add(-time.Minute).Unix()}, // expired
		{"sub": "alice"}, // no exp
		{"exp": exp},     // no sub
		{"sub": "alice", "exp": exp, "iat": now.Add(time.Hour).Unix()},     // issued in the future
		{"sub": "alice", "exp": exp, "iat": now.Add(2 * time.Hour).Unix()}, // exp before iat
	}
	for _, claims := range bad {
		a, _ := s.Start("OAUTHBEARER")
		reply, done, err := a.Step([]byte("n,,\x01auth=Bearer " + unsecuredToken(claims) + "\x01\x01"))
		if err != nil || done || string(reply) != `{"status":"invalid_token"}` {
			t.Fatalf("%v: reply %q done %v err %v", claims, reply, done, err)
		}
		_, _, err = a.Step([]byte{1})
		wantAuthError(t, err, `{"status":"invalid_token"}`)
		if _, _, err := a.Step([]byte{1}); err != ErrIllegalState {
			t.Fatalf("step after failure: %v", err)
		}
	}
	// A signed token is not an unsecured one.
	a, _ = s.Start("OAUTHBEARER")
	tok := strings.TrimSuffix(unsecuredToken(map[string]any{"sub": "alice", "exp": exp}), ".") + ".c2ln"
	if reply, _, _ := a.Step([]byte("n,,\x01auth=Bearer " + tok + "\x01\x01")); string(reply) != `{"status":"invalid_token"}` {
		t.Fatalf("reply %q", reply)
	}
	// Malformed initial responses.
	for _, msg := range []string{"n,,\x01auth=Basic abc\x01\x01", "n,,\x01\x01", "y,,\x01auth=Bearer abc\x01\x01", "garbage"} {
		a, _ := s.Start("OAUTHBEARER")
		_, _, err := a.Step([]byte(msg))
		wantAuthError(t, err, "Authentication failed during authentication due to invalid credentials with SASL mechanism OAUTHBEARER")
	}
	// An authzid other than the principal.
	_, err = drive(t, s, oauth.Auth{Zid: "bob", Token: unsecuredToken(map[string]any{"sub": "alice", "exp": exp})}.AsMechanism())
	wantAuthError(t, err, "Authentication failed: Client requested an authorization id (bob) that is different from the token's principal name (alice)")
}

func TestOAuthUnsecuredOptions(t *testing.T) {
	s := oauthServer(t, config.OAuthBearer{Unsecured: true}, map[string]string{
		"unsecuredValidatorPrincipalClaimName":   "user",
		"unsecuredValidatorRequiredScope":        "read write",
		"unsecuredValidatorAllowableClockSkewMs": "120000",
	})
	now := time.Now()
	exp := now.Add(-time.Minute).Unix() // expired, but within the skew
	a, err := drive(t, s, oauth.Auth{Token: unsecuredToken(map[string]any{"user": "carol", "exp": exp, "scope": []string{"read", "write"}})}.AsMechanism())
	if err != nil {
		t.Fatal(err)
	}
	if a.Principal() != security.User("carol") {
		t.Fatalf("principal %v", a.Principal())
	}
	a, _ = s.Start("OAUTHBEARER")
	reply, _, _ := a.Step([]byte("n,,\x01auth=Bearer " + unsecuredToken(map[string]any{"user": "carol", "exp": exp, "scope": "read"}) + "\x01\x01"))
	if want := `{"status":"insufficient_scope", "scope":"[read, write]"}`; string(reply) != want {
		t.Fatalf("reply %q, want %q", reply, want)
	}
}

// jwtKeys are the test's signing keys and the JWKS file that publishes them.
type jwtKeys struct {
	ec  *ecdsa.PrivateKey
	rsa *rsa.PrivateKey
}

func newJWTKeys(t *testing.T) jwtKeys {
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	r, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return jwtKeys{ec: ec, rsa: r}
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

func ecJWK(kid string, k *ecdsa.PublicKey) map[string]any {
	x, y := make([]byte, 32), make([]byte, 32)
	k.X.FillBytes(x)
	k.Y.FillBytes(y)
	return map[string]any{"kty": "EC", "kid": kid, "crv": "P-256", "x": b64(x), "y": b64(y), "use": "sig"}
}

func rsaJWK(kid string, k *rsa.PublicKey) map[string]any {
	return map[string]any{"kty": "RSA", "kid": kid, "n": b64(k.N.Bytes()), "e": b64(big.NewInt(int64(k.E)).Bytes()), "alg": "RS256"}
}

func writeJWKS(t *testing.T, path string, keys ...map[string]any) {
	data, _ := json.Marshal(map[string]any{"keys": keys})
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

func sign(t *testing.T, method jwt.SigningMethod, kid string, key any, claims jwt.MapClaims) string {
	tok := jwt.NewWithClaims(method, claims)
	tok.Header["kid"] = kid
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func bearer(tok string) []byte { return []byte("n,,\x01auth=Bearer " + tok + "\x01\x01") }

func TestOAuthJWT(t *testing.T) {
	keys := newJWTKeys(t)
	path := filepath.Join(t.TempDir(), "jwks.json")
	writeJWKS(t, path, ecJWK("ec1", &keys.ec.PublicKey), rsaJWK("rsa1", &keys.rsa.PublicKey))
	s := oauthServer(t, config.OAuthBearer{JWKSURL: "file://" + path, ExpectedAudience: []string{"kafka", "other"},
		ExpectedIssuer: "https://issuer.test", SubClaimName: "sub", ScopeClaimName: "scope", ClockSkew: 30 * time.Second}, nil)
	now := time.Now()
	claims := func(mod func(jwt.MapClaims)) jwt.MapClaims {
		c := jwt.MapClaims{"sub": "alice", "iss": "https://issuer.test", "aud": "kafka", "exp": now.Add(time.Hour).Unix(), "iat": now.Unix()}
		if mod != nil {
			mod(c)
		}
		return c
	}
	for _, tok := range []string{
		sign(t, jwt.SigningMethodES256, "ec1", keys.ec, claims(nil)),
		sign(t, jwt.SigningMethodRS256, "rsa1", keys.rsa, claims(nil)),
		sign(t, jwt.SigningMethodES256, "ec1", keys.ec, claims(func(c jwt.MapClaims) { c["exp"] = now.Add(-10 * time.Second).Unix() })), // within skew
		sign(t, jwt.SigningMethodES256, "ec1", keys.ec, claims(func(c jwt.MapClaims) { c["aud"] = []string{"x", "other"} })),
	} {
		a, err := drive(t, s, oauth.Auth{Token: tok}.AsMechanism())
		if err != nil {
			t.Fatal(err)
		}
		if a.Principal() != security.User("alice") || a.Expiry().IsZero() {
			t.Fatalf("principal %v expiry %v", a.Principal(), a.Expiry())
		}
	}
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	hmacTok := sign(t, jwt.SigningMethodHS256, "ec1", []byte("secret"), claims(nil))
	for name, tok := range map[string]string{
		"wrong key":   sign(t, jwt.SigningMethodES256, "ec1", other, claims(nil)),
		"rsa as ec":   sign(t, jwt.SigningMethodRS256, "ec1", keys.rsa, claims(nil)),
		"expired":     sign(t, jwt.SigningMethodES256, "ec1", keys.ec, claims(func(c jwt.MapClaims) { c["exp"] = now.Add(-time.Minute).Unix() })),
		"no exp":      sign(t, jwt.SigningMethodES256, "ec1", keys.ec, claims(func(c jwt.MapClaims) { delete(c, "exp") })),
		"not yet":     sign(t, jwt.SigningMethodES256, "ec1", keys.ec, claims(func(c jwt.MapClaims) { c["nbf"] = now.Add(time.Minute).Unix() })),
		"issuer":      sign(t, jwt.SigningMethodES256, "ec1", keys.ec, claims(func(c jwt.MapClaims) { c["iss"] = "https://evil.test" })),
		"audience":    sign(t, jwt.SigningMethodES256, "ec1", keys.ec, claims(func(c jwt.MapClaims) { c["aud"] = "nobody" })),
		"no sub":      sign(t, jwt.SigningMethodES256, "ec1", keys.ec, claims(func(c jwt.MapClaims) { delete(c, "sub") })),
		"unknown kid": sign(t, jwt.SigningMethodES256, "nope", keys.ec, claims(nil)),
		"hmac":        hmacTok,
		"alg none":    unsecuredToken(claims(nil)),
		"not a token": "abc.def.ghi",
	} {
		a, _ := s.Start("OAUTHBEARER")
		reply, done, err := a.Step(bearer(tok))
		if err != nil || done || string(reply) != `{"status":"invalid_token"}` {
			t.Fatalf("%s: reply %q done %v err %v", name, reply, done, err)
		}
		_, _, err = a.Step([]byte{1})
		wantAuthError(t, err, `{"status":"invalid_token"}`)
	}
}

// TestOAuthJWKSRefresh: a token signed by a key the JWKS did not have when
// it was loaded is accepted once the JWKS has it (reloaded on the unknown
// kid), from a file and over HTTP.
func TestOAuthJWKSRefresh(t *testing.T) {
	keys := newJWTKeys(t)
	path := filepath.Join(t.TempDir(), "jwks.json")
	writeJWKS(t, path, rsaJWK("rsa1", &keys.rsa.PublicKey))

	var fetches atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetches.Add(1)
		data, _ := os.ReadFile(path)
		w.Write(data)
	}))
	defer srv.Close()

	for _, u := range []string{"file://" + path, srv.URL + "/jwks"} {
		writeJWKS(t, path, rsaJWK("rsa1", &keys.rsa.PublicKey))
		s := oauthServer(t, config.OAuthBearer{JWKSURL: u, SubClaimName: "sub", ScopeClaimName: "scope"}, nil)
		clock := time.Now()
		s.now = func() time.Time { return clock }
		c := jwt.MapClaims{"sub": "alice", "exp": clock.Add(time.Hour).Unix(), "iat": clock.Unix()}
		if _, err := drive(t, s, oauth.Auth{Token: sign(t, jwt.SigningMethodRS256, "rsa1", keys.rsa, c)}.AsMechanism()); err != nil {
			t.Fatalf("%s: %v", u, err)
		}
		writeJWKS(t, path, rsaJWK("rsa1", &keys.rsa.PublicKey), ecJWK("ec2", &keys.ec.PublicKey))
		tok := sign(t, jwt.SigningMethodES256, "ec2", keys.ec, c)
		// Too soon after the last load: no reload, the kid is unknown.
		a, _ := s.Start("OAUTHBEARER")
		if reply, _, _ := a.Step(bearer(tok)); string(reply) != `{"status":"invalid_token"}` {
			t.Fatalf("%s: reply %q", u, reply)
		}
		clock = clock.Add(jwksMinRefresh)
		if _, err := drive(t, s, oauth.Auth{Token: tok}.AsMechanism()); err != nil {
			t.Fatalf("%s after reload: %v", u, err)
		}
	}
	if n := fetches.Load(); n != 2 {
		t.Fatalf("%d HTTP fetches, want 2", n)
	}
}

// TestOAuthJWKSTooLarge: a JWKS over the size bound is refused: from a
// file when the listener starts, over HTTP when a token needs it.
func TestOAuthJWKSTooLarge(t *testing.T) {
	keys := newJWTKeys(t)
	path := filepath.Join(t.TempDir(), "jwks.json")
	big := map[string]any{"kty": "oct", "k": strings.Repeat("A", maxJWKSSize)}
	writeJWKS(t, path, big, ecJWK("ec1", &keys.ec.PublicKey))
	_, err := NewServer(&config.SASL{
		EnabledMechanisms: []string{"OAUTHBEARER"},
		JAAS:              map[string]config.JAAS{"OAUTHBEARER": jaas("org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule", nil)},
		OAuth:             config.OAuthBearer{JWKSURL: "file://" + path, SubClaimName: "sub"},
	}, nil)
	var ce *config.ConfigError
	if !errors.As(err, &ce) || ce.Key != "sasl.oauthbearer.jwks.endpoint.url" {
		t.Fatalf("NewServer with a too large JWKS file: %v", err)
	}

	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, _ := os.ReadFile(path)
		w.Write(data)
	}))
	defer srv.Close()
	s := oauthServer(t, config.OAuthBearer{JWKSURL: srv.URL, SubClaimName: "sub"}, nil)
	a, _ := s.Start("OAUTHBEARER")
	tok := sign(t, jwt.SigningMethodES256, "ec1", keys.ec, jwt.MapClaims{"sub": "alice", "exp": time.Now().Add(time.Hour).Unix(), "iat": time.Now().Unix()})
	if reply, _, _ := a.Step(bearer(tok)); string(reply) != `{"status":"invalid_token"}` {
		t.Fatalf("reply %q", reply)
	}
}

func TestReauthenticationWording(t *testing.T) {
	e := invalidCredentials("PLAIN").Reauthentication()
	if e.Message != "Authentication failed during re-authentication due to invalid credentials with SASL mechanism PLAIN" {
		t.Fatal(e.Message)
	}
	own := &AuthError{Message: "Authentication failed: Invalid username or password"}
	if own.Reauthentication() != own {
		t.Fatal("a specific message changed")
	}
}
