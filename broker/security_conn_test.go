package broker

// The connection's side of TLS and SASL (conn_auth.go) against stand-ins
// for the listener's TLS and SASL servers (the real ones are tested in
// security_test.go): the TLS handshake and its failures with certificates
// made by openssl, and the SASL state machine driven by franz-go clients
// and by raw frames.

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/strait/strait/config"
	"github.com/strait/strait/security"
	"github.com/strait/strait/security/sasl"
)

// --- certificates -----------------------------------------------------

// testPKI is a CA, a server certificate for 127.0.0.1 and localhost, and
// client certificates: trusted (CN=client), from another CA (untrusted),
// and expired; PEM files in dir.
type testPKI struct {
	dir                        string
	pool                       *x509.CertPool
	server                     tls.Certificate
	client, untrusted, expired tls.Certificate
}

func runOpenSSL(t *testing.T, dir string, args ...string) {
	t.Helper()
	path, err := exec.LookPath("openssl")
	if err != nil {
		t.Fatalf("the openssl command is needed to make the test certificates: %v", err)
	}
	cmd := exec.Command(path, args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("openssl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func newTestPKI(t *testing.T) *testPKI {
	t.Helper()
	dir := t.TempDir()
	ec := []string{"-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"}
	ca := func(name string) {
		runOpenSSL(t, dir, append(append([]string{"req", "-x509"}, ec...), "-keyout", name+".key", "-out", name+".pem",
			"-days", "2", "-subj", "/CN="+name)...)
	}
	leaf := func(name, ca, subj string, days string, ext string) {
		runOpenSSL(t, dir, append(append([]string{"req"}, ec...), "-keyout", name+".key", "-out", name+".csr", "-subj", subj)...)
		args := []string{"x509", "-req", "-in", name + ".csr", "-CA", ca + ".pem", "-CAkey", ca + ".key",
			"-CAcreateserial", "-days", days, "-out", name + ".pem"}
		if ext != "" {
			if err := os.WriteFile(filepath.Join(dir, name+".ext"), []byte(ext), 0o600); err != nil {
				t.Fatal(err)
			}
			args = append(args, "-extfile", name+".ext")
		}
		runOpenSSL(t, dir, args...)
	}
	ca("ca")
	ca("otherca")
	leaf("server", "ca", "/CN=localhost", "2", "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n")
	leaf("client", "ca", "/O=strait/CN=client", "2", "extendedKeyUsage=clientAuth\n")
	leaf("untrusted", "otherca", "/CN=client", "2", "extendedKeyUsage=clientAuth\n")
	leaf("expired", "ca", "/CN=client", "-1", "extendedKeyUsage=clientAuth\n")

	p := &testPKI{dir: dir, pool: x509.NewCertPool()}
	caPEM, err := os.ReadFile(filepath.Join(dir, "ca.pem"))
	if err != nil {
		t.Fatal(err)
	}
	p.pool.AppendCertsFromPEM(caPEM)
	load := func(name string) tls.Certificate {
		c, err := tls.LoadX509KeyPair(filepath.Join(dir, name+".pem"), filepath.Join(dir, name+".key"))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	p.server, p.client, p.untrusted, p.expired = load("server"), load("client"), load("untrusted"), load("expired")
	return p
}

// clientTLS is a client's configuration trusting the CA, with cert (if
// any) as its certificate.
func (p *testPKI) clientTLS(cert *tls.Certificate) *tls.Config {
	c := &tls.Config{RootCAs: p.pool, ServerName: "127.0.0.1"}
	if cert != nil {
		c.Certificates = []tls.Certificate{*cert}
	}
	return c
}

// --- stand-ins for the listener's servers -------------------------------

type fakeTLS struct{ cfg *tls.Config }

func (f fakeTLS) Config() *tls.Config { return f.cfg }
func (f fakeTLS) Principal(st tls.ConnectionState) (security.Principal, error) {
	if len(st.PeerCertificates) == 0 {
		return security.Anonymous, nil
	}
	return security.User(st.PeerCertificates[0].Subject.String()), nil
}

// fakeSASL serves PLAIN for users; a session ends after lifetime (0: the
// credential does not expire).
type fakeSASL struct {
	users    map[string]string
	lifetime time.Duration
	done     atomic.Int32 // successful exchanges
}

func (f *fakeSASL) Mechanisms() []string { return []string{"PLAIN"} }
func (f *fakeSASL) Start(m string) (sasl.Authenticator, error) {
	if m != "PLAIN" {
		return nil, sasl.ErrUnsupportedMechanism
	}
	return &fakePlain{f: f}, nil
}

type fakePlain struct {
	f    *fakeSASL
	user string
}

func (a *fakePlain) Step(tok []byte) ([]byte, bool, error) {
	parts := bytes.Split(tok, []byte{0})
	if len(parts) != 3 {
		return nil, false, errors.New("malformed PLAIN token")
	}
	if pw, ok := a.f.users[string(parts[1])]; !ok || pw != string(parts[2]) {
		return nil, false, &sasl.AuthError{Message: "Authentication failed: Invalid username or password"}
	}
	a.user = string(parts[1])
	a.f.done.Add(1)
	return []byte{}, true, nil
}
func (a *fakePlain) Principal() security.Principal { return security.User(a.user) }
func (a *fakePlain) Expiry() time.Time {
	if a.f.lifetime == 0 {
		return time.Time{}
	}
	return time.Now().Add(a.f.lifetime)
}

// useFakeSecurity makes the brokers the test starts use srvTLS and
// srvSASL as every TLS and SASL listener's servers.
func useFakeSecurity(t *testing.T, srvTLS *tls.Config, srvSASL *fakeSASL) {
	setForTest(t, &newServerTLS, func(*config.TLS) (tlsServer, error) { return fakeTLS{srvTLS}, nil })
	setForTest(t, &newSASLServer, func(*config.SASL, security.Credentials) (saslServer, error) { return srvSASL, nil })
}

// listenerAddr is srv's bound address of the listener named name.
func listenerAddr(t *testing.T, srv *Server, name string) string {
	t.Helper()
	for _, l := range srv.listeners {
		if l.cfg.Name == name {
			return l.ln.Addr().String()
		}
	}
	t.Fatalf("no listener %s", name)
	return ""
}

// principals are the principals of srv's connections on listener.
func principals(srv *Server, listener string) []string {
	srv.connsMu.Lock()
	defer srv.connsMu.Unlock()
	var out []string
	for c := range srv.conns {
		if c.listener == listener {
			out = append(out, c.principal().String())
		}
	}
	return out
}

// --- raw frames ---------------------------------------------------------

type rawClient struct {
	t    *testing.T
	nc   net.Conn
	corr int32
}

func dialRawAddr(t *testing.T, addr string) *rawClient {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &rawClient{t: t, nc: nc}
}

func (r *rawClient) send(req kmsg.Request) {
	r.t.Helper()
	r.corr++
	b := kmsg.NewRequestFormatter(kmsg.FormatterClientID("raw")).AppendRequest(nil, req, r.corr)
	r.write(b)
}

func (r *rawClient) write(b []byte) {
	r.t.Helper()
	r.nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := r.nc.Write(b); err != nil {
		r.t.Fatalf("write: %v", err)
	}
}

// readFrame reads one size-prefixed frame.
func (r *rawClient) readFrame() ([]byte, error) {
	r.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	var size [4]byte
	if _, err := io.ReadFull(r.nc, size[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(size[:])
	if n > 1<<20 {
		return nil, errors.New("response too large")
	}
	b := make([]byte, n)
	_, err := io.ReadFull(r.nc, b)
	return b, err
}

// roundTrip sends req (a non-flexible version) and decodes its response.
func (r *rawClient) roundTrip(req kmsg.Request) kmsg.Response {
	r.t.Helper()
	r.send(req)
	b, err := r.readFrame()
	if err != nil {
		r.t.Fatalf("reading the %s response: %v", kmsg.NameForKey(req.Key()), err)
	}
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	if err := resp.ReadFrom(b[4:]); err != nil {
		r.t.Fatalf("decoding the %s response: %v", kmsg.NameForKey(req.Key()), err)
	}
	return resp
}

// expectClosed asserts that the broker closes the connection (within 5 s)
// without writing anything more.
func (r *rawClient) expectClosed(what string) {
	r.t.Helper()
	r.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	var b [1]byte
	n, err := r.nc.Read(b[:])
	if n != 0 || err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		r.t.Fatalf("%s: read %d bytes, %v; want the connection closed", what, n, err)
	}
}

func handshake(version int16, mech string) *kmsg.SASLHandshakeRequest {
	req := kmsg.NewPtrSASLHandshakeRequest()
	req.SetVersion(version)
	req.Mechanism = mech
	return req
}

func authenticate(version int16, tok string) *kmsg.SASLAuthenticateRequest {
	req := kmsg.NewPtrSASLAuthenticateRequest()
	req.SetVersion(version)
	req.SASLAuthBytes = []byte(tok)
	return req
}

func plainToken(user, pass string) string { return "\x00" + user + "\x00" + pass }

// --- SASL ---------------------------------------------------------------

// saslBroker starts a broker with a PLAINTEXT listener and a
// SASL_PLAINTEXT one served by f; it returns the SASL address.
func saslBroker(t *testing.T, f *fakeSASL, layers ...map[string]string) (*Server, string) {
	t.Helper()
	useFakeSecurity(t, nil, f)
	srv := startTestBroker(t, append([]map[string]string{{
		"listeners":               "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
		"sasl.enabled.mechanisms": "PLAIN",
		"listener.name.sasl_plaintext.plain.sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret";`,
	}}, layers...)...)
	t.Cleanup(func() { srv.Close() })
	return srv, listenerAddr(t, srv, "SASL_PLAINTEXT")
}

func aliceSASL() *fakeSASL {
	return &fakeSASL{users: map[string]string{"alice": "alice-secret", "bob": "bob-secret"}}
}

// TestSASLPlainClient: a franz-go client authenticates with PLAIN and
// produces and consumes; its connections have the principal User:alice.
// A wrong password fails with SASL_AUTHENTICATION_FAILED.
func TestSASLPlainClient(t *testing.T) {
	srv, addr := saslBroker(t, aliceSASL())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.SASL(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism()),
		kgo.DefaultProduceTopic("sasl"), kgo.AllowAutoTopicCreation(), kgo.ConsumeTopics("sasl"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("hello")}).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	fs := cl.PollRecords(ctx, 1)
	if err := fs.Err0(); err != nil || fs.NumRecords() != 1 {
		t.Fatalf("consume: %v, %d records", err, fs.NumRecords())
	}
	ps := principals(srv, "SASL_PLAINTEXT")
	if len(ps) == 0 {
		t.Fatal("no connection on the SASL listener")
	}
	for _, p := range ps {
		if p != "User:alice" {
			t.Errorf("principal %s, want User:alice", p)
		}
	}

	bad, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.SASL(plain.Auth{User: "alice", Pass: "wrong"}.AsMechanism()))
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	if err := bad.Ping(ctx); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("ping with a wrong password: %v, want SASL_AUTHENTICATION_FAILED", err)
	}
}

// TestSASLStateMachine drives the exchange with raw frames, as Kafka's
// SaslServerAuthenticator: the failures close the connection (after their
// response where Kafka sends one), and only the exchange's requests are
// served before authentication.
func TestSASLStateMachine(t *testing.T) {
	srv, addr := saslBroker(t, aliceSASL())

	t.Run("wrong password: SASL_AUTHENTICATION_FAILED, then closed", func(t *testing.T) {
		r := dialRawAddr(t, addr)
		if hs := r.roundTrip(handshake(1, "PLAIN")).(*kmsg.SASLHandshakeResponse); hs.ErrorCode != 0 {
			t.Fatalf("handshake: error %d", hs.ErrorCode)
		}
		resp := r.roundTrip(authenticate(1, plainToken("alice", "nope"))).(*kmsg.SASLAuthenticateResponse)
		if resp.ErrorCode != kerr.SaslAuthenticationFailed.Code || resp.ErrorMessage == nil ||
			*resp.ErrorMessage != "Authentication failed: Invalid username or password" {
			t.Fatalf("authenticate: error %d %v", resp.ErrorCode, resp.ErrorMessage)
		}
		r.expectClosed("after a failed authentication")
	})
	t.Run("Metadata before authentication: closed", func(t *testing.T) {
		r := dialRawAddr(t, addr)
		r.send(kmsg.NewPtrMetadataRequest())
		r.expectClosed("Metadata before the handshake")

		r = dialRawAddr(t, addr)
		r.roundTrip(handshake(1, "PLAIN"))
		req := kmsg.NewPtrMetadataRequest()
		r.send(req)
		r.expectClosed("Metadata after the handshake")
	})
	t.Run("unsupported mechanism: the enabled ones, then closed", func(t *testing.T) {
		r := dialRawAddr(t, addr)
		hs := r.roundTrip(handshake(1, "SCRAM-SHA-512")).(*kmsg.SASLHandshakeResponse)
		if hs.ErrorCode != kerr.UnsupportedSaslMechanism.Code || strings.Join(hs.SupportedMechanisms, ",") != "PLAIN" {
			t.Fatalf("handshake: error %d, mechanisms %v", hs.ErrorCode, hs.SupportedMechanisms)
		}
		r.expectClosed("after UNSUPPORTED_SASL_MECHANISM")
	})
	t.Run("a second SaslHandshake: ILLEGAL_SASL_STATE, then closed", func(t *testing.T) {
		r := dialRawAddr(t, addr)
		r.roundTrip(handshake(1, "PLAIN"))
		if hs := r.roundTrip(handshake(1, "PLAIN")).(*kmsg.SASLHandshakeResponse); hs.ErrorCode != kerr.IllegalSaslState.Code {
			t.Fatalf("second handshake: error %d", hs.ErrorCode)
		}
		r.expectClosed("after a second handshake")
	})
	t.Run("SaslAuthenticate before the handshake: closed", func(t *testing.T) {
		r := dialRawAddr(t, addr)
		r.send(authenticate(1, plainToken("alice", "alice-secret")))
		r.expectClosed("SaslAuthenticate first")
	})
	t.Run("ApiVersions, handshake, authenticate, then requests; a second SaslAuthenticate is ILLEGAL_SASL_STATE", func(t *testing.T) {
		r := dialRawAddr(t, addr)
		av := kmsg.NewPtrApiVersionsRequest()
		av.SetVersion(0)
		if resp := r.roundTrip(av).(*kmsg.ApiVersionsResponse); resp.ErrorCode != 0 || len(resp.ApiKeys) == 0 {
			t.Fatalf("ApiVersions: %d, %d keys", resp.ErrorCode, len(resp.ApiKeys))
		}
		r.roundTrip(handshake(1, "PLAIN"))
		resp := r.roundTrip(authenticate(1, plainToken("bob", "bob-secret"))).(*kmsg.SASLAuthenticateResponse)
		if resp.ErrorCode != 0 || resp.SessionLifetimeMillis != 0 {
			t.Fatalf("authenticate: error %d, lifetime %d", resp.ErrorCode, resp.SessionLifetimeMillis)
		}
		md := kmsg.NewPtrMetadataRequest()
		md.SetVersion(4)
		if m := r.roundTrip(md).(*kmsg.MetadataResponse); len(m.Brokers) != 1 {
			t.Fatalf("metadata after authentication: %d brokers", len(m.Brokers))
		}
		again := r.roundTrip(authenticate(1, plainToken("bob", "bob-secret"))).(*kmsg.SASLAuthenticateResponse)
		if again.ErrorCode != kerr.IllegalSaslState.Code {
			t.Fatalf("SaslAuthenticate after authentication: error %d", again.ErrorCode)
		}
		if m := r.roundTrip(md).(*kmsg.MetadataResponse); len(m.Brokers) != 1 {
			t.Fatal("the connection no longer serves")
		}
	})
	t.Run("v0 handshake: bare tokens", func(t *testing.T) {
		r := dialRawAddr(t, addr)
		if hs := r.roundTrip(handshake(0, "PLAIN")).(*kmsg.SASLHandshakeResponse); hs.ErrorCode != 0 {
			t.Fatalf("handshake v0: error %d", hs.ErrorCode)
		}
		tok := plainToken("alice", "alice-secret")
		frame := binary.BigEndian.AppendUint32(nil, uint32(len(tok)))
		r.write(append(frame, tok...))
		if reply, err := r.readFrame(); err != nil || len(reply) != 0 {
			t.Fatalf("bare reply: %q, %v", reply, err)
		}
		md := kmsg.NewPtrMetadataRequest()
		md.SetVersion(4)
		if m := r.roundTrip(md).(*kmsg.MetadataResponse); len(m.Brokers) != 1 {
			t.Fatal("metadata after a v0 exchange")
		}
	})
	t.Run("PLAINTEXT listener: SaslHandshake is ILLEGAL_SASL_STATE", func(t *testing.T) {
		r := dialRawAddr(t, listenerAddr(t, srv, "PLAINTEXT"))
		if hs := r.roundTrip(handshake(1, "PLAIN")).(*kmsg.SASLHandshakeResponse); hs.ErrorCode != kerr.IllegalSaslState.Code {
			t.Fatalf("handshake on PLAINTEXT: error %d", hs.ErrorCode)
		}
	})
}

// TestSASLLargeFrameBeforeAuth: a 100 MB size prefix before authentication
// closes the connection at once, before anything is allocated for the
// frame (the default sasl.server.max.receive.size is 512 KiB); the broker
// still serves.
func TestSASLLargeFrameBeforeAuth(t *testing.T) {
	_, addr := saslBroker(t, aliceSASL())
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	r := dialRawAddr(t, addr)
	start := time.Now()
	r.write(binary.BigEndian.AppendUint32(nil, 100<<20))
	r.write(make([]byte, 1024))
	r.expectClosed("a 100 MB frame before authentication")
	took := time.Since(start)
	runtime.ReadMemStats(&after)
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 16<<20 {
		t.Errorf("the broker allocated %d bytes meanwhile", grew)
	}
	if took > 2*time.Second {
		t.Errorf("closed after %v", took)
	}
	r = dialRawAddr(t, addr)
	if hs := r.roundTrip(handshake(1, "PLAIN")).(*kmsg.SASLHandshakeResponse); hs.ErrorCode != 0 {
		t.Fatalf("the broker no longer serves: %d", hs.ErrorCode)
	}
}

// TestSASLSessionExpiry (KIP-368): the session ends with the credential;
// SaslAuthenticate v1 says when, a request after it closes the connection,
// a re-authentication resets it and must keep the principal, and franz-go
// clients re-authenticate on their own.
func TestSASLSessionExpiry(t *testing.T) {
	f := aliceSASL()
	f.lifetime = 1500 * time.Millisecond
	_, addr := saslBroker(t, f)

	login := func(r *rawClient, user string) *kmsg.SASLAuthenticateResponse {
		t.Helper()
		if hs := r.roundTrip(handshake(1, "PLAIN")).(*kmsg.SASLHandshakeResponse); hs.ErrorCode != 0 {
			t.Fatalf("handshake: %d", hs.ErrorCode)
		}
		return r.roundTrip(authenticate(1, plainToken(user, user+"-secret"))).(*kmsg.SASLAuthenticateResponse)
	}
	md := kmsg.NewPtrMetadataRequest()
	md.SetVersion(4)

	t.Run("a request after the session closes the connection", func(t *testing.T) {
		r := dialRawAddr(t, addr)
		start := time.Now()
		resp := login(r, "alice")
		if resp.ErrorCode != 0 || resp.SessionLifetimeMillis <= 0 || resp.SessionLifetimeMillis > 1500 {
			t.Fatalf("authenticate: error %d, lifetime %d", resp.ErrorCode, resp.SessionLifetimeMillis)
		}
		r.roundTrip(md)
		// Wait out the session (not an assertion: the precondition).
		time.Sleep(time.Until(start.Add(time.Duration(resp.SessionLifetimeMillis)*time.Millisecond + 100*time.Millisecond)))
		r.send(md)
		r.expectClosed("a request after the session expired")
	})
	t.Run("re-authentication keeps the principal", func(t *testing.T) {
		r := dialRawAddr(t, addr)
		login(r, "alice")
		if resp := login(r, "alice"); resp.ErrorCode != 0 || resp.SessionLifetimeMillis <= 0 {
			t.Fatalf("re-authentication: error %d, lifetime %d", resp.ErrorCode, resp.SessionLifetimeMillis)
		}
		r.roundTrip(md)

		r = dialRawAddr(t, addr)
		login(r, "alice")
		resp := login(r, "bob")
		if resp.ErrorCode != kerr.SaslAuthenticationFailed.Code || resp.ErrorMessage == nil ||
			!strings.Contains(*resp.ErrorMessage, "Cannot change principals during re-authentication from User.alice: User.bob") {
			t.Fatalf("re-authentication as another: error %d %v", resp.ErrorCode, resp.ErrorMessage)
		}
		r.expectClosed("after a change of principal")
	})
	t.Run("franz-go re-authenticates", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.SASL(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism()))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		first := f.done.Load()
		deadline := time.Now().Add(4 * time.Second)
		for i := 0; time.Now().Before(deadline) && i < 1000; i++ {
			if err := cl.Ping(ctx); err != nil {
				t.Fatalf("ping %d: %v", i, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
		if n := f.done.Load() - first; n < 2 {
			t.Fatalf("%d authentications in 4 s of 1.5 s sessions", n)
		}
	})
}

// --- TLS ----------------------------------------------------------------

// tlsBroker starts a broker with a PLAINTEXT listener and an SSL one
// (client certificates required when mtls); it returns the SSL address.
func tlsBroker(t *testing.T, p *testPKI, mtls bool) (*Server, string) {
	t.Helper()
	cfg := &tls.Config{Certificates: []tls.Certificate{p.server}, MinVersion: tls.VersionTLS12}
	if mtls {
		cfg.ClientAuth, cfg.ClientCAs = tls.RequireAndVerifyClientCert, p.pool
	}
	useFakeSecurity(t, cfg, aliceSASL())
	srv := startTestBroker(t, map[string]string{"listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0"})
	t.Cleanup(func() { srv.Close() })
	return srv, listenerAddr(t, srv, "SSL")
}

// TestTLSWrongClients: a plaintext client on the TLS port and a TLS client
// on the plaintext port are closed, and the broker serves both listeners.
func TestTLSWrongClients(t *testing.T) {
	p := newTestPKI(t)
	srv, addr := tlsBroker(t, p, false)

	r := dialRawAddr(t, addr)
	r.send(kmsg.NewPtrApiVersionsRequest())
	r.expectClosed("a plaintext client on the TLS port")

	nc, err := net.DialTimeout("tcp", listenerAddr(t, srv, "PLAINTEXT"), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	tc := tls.Client(nc, p.clientTLS(nil))
	tc.SetDeadline(time.Now().Add(5 * time.Second))
	if err := tc.Handshake(); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("TLS handshake with the plaintext port: %v, want the connection closed", err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, opts := range [][]kgo.Opt{
		{kgo.SeedBrokers(addr), kgo.DialTLSConfig(p.clientTLS(nil))},
		{kgo.SeedBrokers(listenerAddr(t, srv, "PLAINTEXT"))},
	} {
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			t.Fatal(err)
		}
		if err := cl.Ping(ctx); err != nil {
			t.Fatalf("the broker no longer serves: %v", err)
		}
		cl.Close()
	}
	if ps := principals(srv, "SSL"); len(ps) != 0 && ps[0] != "User:ANONYMOUS" {
		t.Errorf("principal without a client certificate: %v", ps)
	}
}

// TestTLSClientCertificates: with client certificates required, an
// untrusted or expired one is refused in the handshake; a trusted one
// connects with its subject as the principal, and produces and consumes
// over TLS (file regions copied, not sent with sendfile).
func TestTLSClientCertificates(t *testing.T) {
	p := newTestPKI(t)
	srv, addr := tlsBroker(t, p, true)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	for name, cert := range map[string]*tls.Certificate{"untrusted": &p.untrusted, "expired": &p.expired, "none": nil} {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DialTLSConfig(p.clientTLS(cert)))
		if err != nil {
			t.Fatal(err)
		}
		if err := cl.Ping(ctx); err == nil {
			t.Errorf("%s client certificate: connected", name)
		}
		cl.Close()
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DialTLSConfig(p.clientTLS(&p.client)),
		kgo.DefaultProduceTopic("tls"), kgo.AllowAutoTopicCreation(), kgo.ConsumeTopics("tls"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	value := bytes.Repeat([]byte("0123456789"), 30_000) // 300 KB: several TLS records and write buffers
	const n = 5
	for i := range n {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: value, Key: []byte{byte(i)}}).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
	got := 0
	for i := 0; got < n && i < 50; i++ {
		fs := cl.PollRecords(ctx, n)
		if err := fs.Err0(); err != nil {
			t.Fatalf("consume: %v", err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if !bytes.Equal(r.Value, value) || r.Key[0] != byte(got) {
				t.Fatalf("record %d differs", got)
			}
			got++
		})
	}
	if got != n {
		t.Fatalf("consumed %d records, want %d", got, n)
	}
	ps := principals(srv, "SSL")
	if len(ps) == 0 {
		t.Fatal("no connection on the SSL listener")
	}
	for _, pr := range ps {
		if pr != "User:CN=client,O=strait" {
			t.Errorf("principal %s, want User:CN=client,O=strait", pr)
		}
	}
}

// TestTLSHandshakeBounded: a client that connects to a TLS port and sends
// nothing is closed after tlsHandshakeTimeout; one in its handshake when
// the broker closes does not hold Close up.
func TestTLSHandshakeBounded(t *testing.T) {
	setForTest(t, &tlsHandshakeTimeout, 300*time.Millisecond)
	p := newTestPKI(t)
	srv, addr := tlsBroker(t, p, false)
	r := dialRawAddr(t, addr)
	start := time.Now()
	r.expectClosed("a silent client on the TLS port")
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("closed after %v", took)
	}

	setForTest(t, &tlsHandshakeTimeout, time.Minute)
	srv, addr = tlsBroker(t, p, false)
	r = dialRawAddr(t, addr)
	// The connection is registered before its handshake starts.
	waitFor(t, 5*time.Second, "the connection", func() bool { return len(principals(srv, "SSL")) == 1 })
	start = time.Now()
	srv.Close()
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("Close took %v with a connection in its TLS handshake", took)
	}
	r.expectClosed("a connection in its handshake at Close")
}
