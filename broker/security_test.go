package broker

// TLS and SASL listeners end to end, with the real key stores
// (internal/testcerts: openssl and keytool), the real mechanisms
// (security/sasl) and franz-go clients: PLAIN, SCRAM, OAUTHBEARER, mTLS,
// re-authentication, and a three-broker cluster replicating over a
// SASL_SSL inter-broker listener.

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/strait/strait/internal/testcerts"
)

const plainJAAS = `org.apache.kafka.common.security.plain.PlainLoginModule required ` +
	`username="broker" password="broker-secret" user_broker="broker-secret" user_alice="alice-secret";`

// tlsProps are an SSL listener's key store (JKS) and trust store (PKCS12)
// from certs.
func tlsProps(certs *testcerts.Set) map[string]string {
	return map[string]string{
		"ssl.keystore.type":       "JKS",
		"ssl.keystore.location":   certs.Server.JKS,
		"ssl.keystore.password":   testcerts.Password,
		"ssl.key.password":        testcerts.Password,
		"ssl.truststore.type":     "PKCS12",
		"ssl.truststore.location": certs.TrustP12,
		"ssl.truststore.password": testcerts.Password,
	}
}

// clientTLSConfig trusts certs' CA and presents id's certificate (nil: none).
func clientTLSConfig(t *testing.T, certs *testcerts.Set, id *testcerts.Identity) *tls.Config {
	t.Helper()
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM([]byte(certs.CAPEM)) {
		t.Fatal("CA does not parse")
	}
	c := &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}
	if id != nil {
		kp, err := tls.LoadX509KeyPair(id.CertFile, id.KeyFile)
		if err != nil {
			t.Fatal(err)
		}
		c.Certificates = []tls.Certificate{kp}
	}
	return c
}

func pingWith(t *testing.T, addr string, opts ...kgo.Opt) error {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	return cl.Ping(ctx)
}

// TestSecurityPlain: PLAIN users from the listener's JAAS config; a wrong
// password is SASL_AUTHENTICATION_FAILED and the connection closes.
func TestSecurityPlain(t *testing.T) {
	srv := startTestBroker(t, map[string]string{
		"listeners":               "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
		"sasl.enabled.mechanisms": "PLAIN",
		"listener.name.sasl_plaintext.plain.sasl.jaas.config": plainJAAS,
	})
	defer srv.Close()
	addr := listenerAddr(t, srv, "SASL_PLAINTEXT")
	if err := pingWith(t, addr, kgo.SASL(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism())); err != nil {
		t.Fatalf("alice: %v", err)
	}
	if err := pingWith(t, addr, kgo.SASL(plain.Auth{User: "alice", Pass: "nope"}.AsMechanism())); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("wrong password: %v", err)
	}
	r := dialRawAddr(t, addr)
	r.roundTrip(handshake(1, "PLAIN"))
	resp := r.roundTrip(authenticate(1, plainToken("mallory", "x"))).(*kmsg.SASLAuthenticateResponse)
	if resp.ErrorCode != kerr.SaslAuthenticationFailed.Code || resp.ErrorMessage == nil || *resp.ErrorMessage == "" {
		t.Fatalf("unknown user: error %d %v", resp.ErrorCode, resp.ErrorMessage)
	}
	r.expectClosed("after a failed PLAIN authentication")
}

// unsecuredToken is an unsigned JWT as Kafka's unsecured login makes.
func unsecuredToken(sub string, life time.Duration) string {
	enc := base64.RawURLEncoding
	now := time.Now()
	body, _ := json.Marshal(map[string]any{"sub": sub, "iat": now.Unix(), "exp": now.Add(life).Unix()})
	return enc.EncodeToString([]byte(`{"alg":"none"}`)) + "." + enc.EncodeToString(body) + "."
}

// TestSecurityOAuthBearerAndReauth: OAUTHBEARER with unsecured tokens;
// the session lasts as long as the token, or connections.max.reauth.ms
// when shorter; franz-go re-authenticates on the same connection and goes
// on being served.
func TestSecurityOAuthBearerAndReauth(t *testing.T) {
	srv := startTestBroker(t, map[string]string{
		"listeners":                 "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
		"sasl.enabled.mechanisms":   "OAUTHBEARER",
		"connections.max.reauth.ms": "1500",
		"listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config": `org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;`,
	})
	defer srv.Close()
	addr := listenerAddr(t, srv, "SASL_PLAINTEXT")

	// The lifetime is the shorter of the token's and connections.max.reauth.ms.
	for _, tc := range []struct {
		life     time.Duration
		min, max int64
	}{{time.Hour, 1500, 1500}, {2 * time.Second, 1, 1500}} {
		r := dialRawAddr(t, addr)
		r.roundTrip(handshake(1, "OAUTHBEARER"))
		resp := r.roundTrip(authenticate(1, "n,,\x01auth=Bearer "+unsecuredToken("carol", tc.life)+"\x01\x01")).(*kmsg.SASLAuthenticateResponse)
		if resp.ErrorCode != 0 || resp.SessionLifetimeMillis < tc.min || resp.SessionLifetimeMillis > tc.max {
			t.Fatalf("token for %v: error %d %v, lifetime %d, want %d..%d", tc.life, resp.ErrorCode, resp.ErrorMessage,
				resp.SessionLifetimeMillis, tc.min, tc.max)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var tokens int
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.SASL(oauth.Oauth(func(context.Context) (oauth.Auth, error) {
		tokens++
		return oauth.Auth{Token: unsecuredToken("carol", time.Hour)}, nil
	})), kgo.DefaultProduceTopic("oauth"), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	deadline := time.Now().Add(4 * time.Second)
	for i := 0; time.Now().Before(deadline) && i < 1000; i++ {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if tokens < 3 {
		t.Fatalf("%d authentications in 4 s of 1.5 s sessions", tokens)
	}
	if ps := principals(srv, "SASL_PLAINTEXT"); slices.ContainsFunc(ps, func(p string) bool { return p != "User:carol" }) {
		t.Errorf("principals %v", ps)
	}
}

// TestSecurityMutualTLS: ssl.client.auth=required refuses an untrusted,
// an expired and a missing client certificate; a trusted one connects as
// its subject's name.
func TestSecurityMutualTLS(t *testing.T) {
	certs := testcerts.New(t)
	props := tlsProps(certs)
	props["listeners"] = "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0"
	props["ssl.client.auth"] = "required"
	srv := startTestBroker(t, props)
	defer srv.Close()
	addr := listenerAddr(t, srv, "SSL")
	for name, id := range map[string]*testcerts.Identity{"untrusted": &certs.Untrusted, "expired": &certs.Expired, "no": nil} {
		if err := pingWith(t, addr, kgo.DialTLSConfig(clientTLSConfig(t, certs, id))); err == nil {
			t.Errorf("%s client certificate: served", name)
		}
	}
	if err := pingWith(t, addr, kgo.DialTLSConfig(clientTLSConfig(t, certs, &certs.Client))); err != nil {
		t.Fatalf("trusted client certificate: %v", err)
	}
	if err := pingWith(t, listenerAddr(t, srv, "PLAINTEXT")); err != nil {
		t.Fatalf("the PLAINTEXT listener: %v", err)
	}
	// The principal of a connection that stays open.
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DialTLSConfig(clientTLSConfig(t, certs, &certs.Client)))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := cl.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	want := "User:" + testcerts.ClientSubjectDN
	if ps := principals(srv, "SSL"); !slices.Contains(ps, want) {
		t.Errorf("principals %v, want %s", ps, want)
	}
}

// TestSecurityClusterOverTLS: three brokers whose only listener is
// secured (SASL_SSL with PLAIN; SSL requiring client certificates, which
// the brokers present from their key store) replicate an RF 3 topic with
// acks=all over it, and a client of that listener consumes it.
func TestSecurityClusterOverTLS(t *testing.T) {
	certs := testcerts.New(t)
	for _, tc := range []struct {
		name  string
		props map[string]string
		opts  []kgo.Opt
	}{
		{"SASL_SSL", map[string]string{
			"listeners":                                     "SASL_SSL://127.0.0.1:0",
			"security.inter.broker.protocol":                "SASL_SSL",
			"sasl.mechanism.inter.broker.protocol":          "PLAIN",
			"sasl.enabled.mechanisms":                       "PLAIN",
			"listener.name.sasl_ssl.plain.sasl.jaas.config": plainJAAS,
		}, []kgo.Opt{kgo.DialTLSConfig(clientTLSConfig(t, certs, nil)),
			kgo.SASL(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism())}},
		{"SSL with client certificates", map[string]string{
			"listeners":                      "SSL://127.0.0.1:0",
			"security.inter.broker.protocol": "SSL",
			"ssl.client.auth":                "required",
		}, []kgo.Opt{kgo.DialTLSConfig(clientTLSConfig(t, certs, &certs.Client))}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			props := tlsProps(certs)
			maps.Copy(props, tc.props)
			clusterOverTLS(t, props, tc.opts, []kgo.Opt{kgo.DialTLSConfig(clientTLSConfig(t, certs, nil))})
		})
	}
}

// clusterOverTLS starts the cluster, replicates with clients of opts,
// and checks that a client of refusedOpts is not served.
func clusterOverTLS(t *testing.T, props map[string]string, opts, refusedOpts []kgo.Opt) {
	t.Helper()
	c := startReplicatedCluster(t, 3, props)
	adm := kadm.NewClient(c.client(opts...))
	if resp, err := adm.CreateTopic(context.Background(), 1, 3, nil, "secure"); err != nil || resp.Err != nil {
		t.Fatalf("create topic: %v %v", err, resp.Err)
	}
	waitFor(t, 10*time.Second, "the replicas of the topic", func() bool {
		for i := range c.srvs {
			if c.partitionOn(i, "secure", 0) == nil {
				return false
			}
		}
		return true
	})
	cl := c.client(slices.Concat(opts, []kgo.Opt{kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic("secure")})...)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const n = 200
	for i := range n {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "v%03d", i)}).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
	}
	waitFor(t, 20*time.Second, "every replica to hold the records", func() bool {
		for i := range c.srvs {
			if c.partitionOn(i, "secure", 0).Log().LogEndOffset() != n {
				return false
			}
		}
		return true
	})
	for i := range c.srvs {
		if p := c.partitionOn(i, "secure", 0); p.IsLeader() {
			if isr := p.State().ISR; len(isr) != 3 {
				t.Errorf("ISR %v, want 3 replicas", isr)
			}
		}
	}
	got := consumeAll(t, c.client(slices.Concat(opts, []kgo.Opt{kgo.ConsumeTopics("secure"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())})...), n)
	if vals := got[0]; len(vals) != n || vals[0] != "v000" || vals[n-1] != fmt.Sprintf("v%03d", n-1) {
		t.Fatalf("consumed %d records", len(vals))
	}
	// A client without SASL (or a client certificate) is not served.
	if err := pingWith(t, c.addrs[0], slices.Concat(refusedOpts, []kgo.Opt{kgo.RequestRetries(0)})...); err == nil {
		t.Error("a client without credentials was served")
	}
}
