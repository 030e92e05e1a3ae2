package broker

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
)

// TestSecurityOAuthBearerJWT: a listener validating OAUTHBEARER tokens as
// JWTs against a JWKS file (Kafka's OAuthBearerValidatorCallbackHandler)
// admits a token signed by a key of the set, for the expected issuer and
// audience, as its sub; a token from another key, issuer or audience, or
// an expired one, is refused.
func TestSecurityOAuthBearerJWT(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	other, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	enc := base64.RawURLEncoding
	x, y := make([]byte, 32), make([]byte, 32)
	key.X.FillBytes(x)
	key.Y.FillBytes(y)
	jwks, _ := json.Marshal(map[string]any{"keys": []any{map[string]any{
		"kty": "EC", "kid": "k1", "crv": "P-256", "x": enc.EncodeToString(x), "y": enc.EncodeToString(y), "use": "sig"}}})
	path := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(path, jwks, 0o600); err != nil {
		t.Fatal(err)
	}
	const prefix = "listener.name.sasl_plaintext.oauthbearer."
	srv := startTestBroker(t, map[string]string{
		"listeners":                                   "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
		"sasl.enabled.mechanisms":                     "OAUTHBEARER",
		prefix + "sasl.jaas.config":                   `org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;`,
		prefix + "sasl.server.callback.handler.class": "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler",
		"sasl.oauthbearer.jwks.endpoint.url":          "file://" + path,
		"sasl.oauthbearer.expected.issuer":            "https://issuer.test",
		"sasl.oauthbearer.expected.audience":          "kafka",
	})
	defer srv.Close()
	addr := listenerAddr(t, srv, "SASL_PLAINTEXT")

	now := time.Now()
	token := func(signer *ecdsa.PrivateKey, mod func(jwt.MapClaims)) string {
		c := jwt.MapClaims{"sub": "dave", "iss": "https://issuer.test", "aud": "kafka", "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}
		if mod != nil {
			mod(c)
		}
		tok := jwt.NewWithClaims(jwt.SigningMethodES256, c)
		tok.Header["kid"] = "k1"
		s, err := tok.SignedString(signer)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	with := func(tok string) kgo.Opt {
		return kgo.SASL(oauth.Oauth(func(context.Context) (oauth.Auth, error) { return oauth.Auth{Token: tok}, nil }))
	}
	if err := pingWith(t, addr, with(token(key, nil))); err != nil {
		t.Fatalf("a valid JWT: %v", err)
	}
	for name, tok := range map[string]string{
		"another key":      token(other, nil),
		"another issuer":   token(key, func(c jwt.MapClaims) { c["iss"] = "https://evil.test" }),
		"another audience": token(key, func(c jwt.MapClaims) { c["aud"] = "billing" }),
		"expired": token(key, func(c jwt.MapClaims) {
			c["iat"] = now.Add(-2 * time.Hour).Unix()
			c["exp"] = now.Add(-time.Hour).Unix()
		}),
	} {
		if err := pingWith(t, addr, with(tok)); err == nil {
			t.Errorf("%s: authenticated", name)
		}
	}

	// The principal is the token's sub.
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), with(token(key, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := cl.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	if ps := principals(srv, "SASL_PLAINTEXT"); !slices.Contains(ps, "User:dave") {
		t.Errorf("principals %v, want User:dave", ps)
	}
}
