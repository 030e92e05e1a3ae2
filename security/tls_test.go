package security

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/strait/strait/config"
	"github.com/strait/strait/internal/testcerts"
)

// serve runs a TLS listener on 127.0.0.1 with cfg; each accepted
// connection completes its handshake, writes "k" and closes, and its
// handshake result is sent on the returned channel.
type result struct {
	state tls.ConnectionState
	err   error
}

func serve(t *testing.T, cfg *tls.Config) (string, <-chan result) {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	out := make(chan result, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				tc := c.(*tls.Conn)
				_ = tc.SetDeadline(time.Now().Add(10 * time.Second))
				err := tc.Handshake()
				if err == nil {
					_, err = tc.Write([]byte("k"))
				}
				out <- result{tc.ConnectionState(), err}
			}()
		}
	}()
	return ln.Addr().String(), out
}

// dial connects with cfg and reads the server's byte: with TLS 1.3 a
// rejected client certificate shows only then.
func dial(addr string, cfg *tls.Config) (*x509.Certificate, error) {
	d := &net.Dialer{Timeout: 5 * time.Second}
	c, err := tls.DialWithDialer(d, "tcp", addr, cfg)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	b := make([]byte, 1)
	if _, err := io.ReadFull(c, b); err != nil {
		return nil, err
	}
	return c.ConnectionState().PeerCertificates[0], nil
}

// handshake dials and waits for the server's side of the handshake.
func handshake(t *testing.T, addr string, results <-chan result, cfg *tls.Config) (*x509.Certificate, result, error) {
	t.Helper()
	leaf, err := dial(addr, cfg)
	select {
	case r := <-results:
		return leaf, r, err
	case <-time.After(10 * time.Second):
		t.Fatal("no server handshake result within 10s")
	}
	return nil, result{}, nil
}

func caPool(t *testing.T, pemText string) *x509.CertPool {
	p := x509.NewCertPool()
	if !p.AppendCertsFromPEM([]byte(pemText)) {
		t.Fatal("bad CA PEM")
	}
	return p
}

func clientCert(t *testing.T, id testcerts.Identity) tls.Certificate {
	c, err := tls.X509KeyPair([]byte(id.CertPEM), []byte(id.KeyPEM))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestTLS runs the TLS tests on one set of certificates (making them
// takes seconds): go test -run TestTLS/Reload picks one.
func TestTLS(t *testing.T) {
	s := testcerts.New(t)
	t.Run("Stores", func(t *testing.T) { testServerTLS(t, s) })
	t.Run("StoreErrors", func(t *testing.T) { testStoreErrorsNameTheKey(t, s) })
	t.Run("ClientAuth", func(t *testing.T) { testClientAuth(t, s) })
	t.Run("Reload", func(t *testing.T) { testReload(t, s) })
	t.Run("ProtocolVersions", func(t *testing.T) { testProtocolVersions(t, s) })
	t.Run("ClientTLS", func(t *testing.T) { testClientTLS(t, s) })
	t.Run("FromParse", func(t *testing.T) { testFromParse(t, s) })
	t.Run("EncryptedPEMKeys", func(t *testing.T) { testEncryptedPEMKeys(t, s) })
}

// testFromParse: settings read by config.Parse load, and a store that
// does not names the listener's own key it came from.
func testFromParse(t *testing.T, s *testcerts.Set) {
	props := map[string]string{
		"listeners":                      "PLAINTEXT://127.0.0.1:9092,SSL://127.0.0.1:9093",
		"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL",
		"ssl.keystore.type":              "PEM",
		"ssl.keystore.location":          s.Server.EncPEMStore,
		"ssl.key.password":               testcerts.Password,
		"ssl.truststore.location":        s.TrustP12,
		"ssl.truststore.type":            "PKCS12",
		"ssl.truststore.password":        testcerts.Password,
		"ssl.client.auth":                "required",
	}
	c, _, err := config.Parse(props)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := NewServerTLS(c.Security.Listeners["SSL"].TLS)
	if err != nil {
		t.Fatal(err)
	}
	addr, res := serve(t, srv.Config())
	client := &tls.Config{RootCAs: caPool(t, s.CAPEM), ServerName: "127.0.0.1", Certificates: []tls.Certificate{clientCert(t, s.Client)}}
	if _, r, err := handshake(t, addr, res, client); err != nil || r.err != nil || mustPrincipal(t, srv, r.state).Name != testcerts.ClientSubjectDN {
		t.Errorf("handshake: %v / %v", err, r.err)
	}

	props["listener.name.ssl.ssl.keystore.location"] = s.Dir + "/missing.pem"
	if c, _, err = config.Parse(props); err != nil {
		t.Fatal(err)
	}
	_, err = NewServerTLS(c.Security.Listeners["SSL"].TLS)
	var ce *config.ConfigError
	if !errors.As(err, &ce) || ce.Key != "listener.name.ssl.ssl.keystore.location" {
		t.Errorf("missing listener keystore: %v", err)
	}
}

// base is settings as config.Parse gives them by default.
func base() config.TLS {
	return config.TLS{ClientAuth: "none", Protocol: "TLSv1.3", EnabledProtocols: []string{"TLSv1.2", "TLSv1.3"},
		KeystoreType: "JKS", TruststoreType: "JKS", PrincipalMappingRules: "DEFAULT", EndpointIdentificationAlgorithm: "https"}
}

// testServerTLS: every key store and trust store type loads, and a real
// handshake on 127.0.0.1 authenticates the client certificate, whose
// subject becomes the principal.
func testServerTLS(t *testing.T, s *testcerts.Set) {
	pw := config.Password(testcerts.Password)
	keystores := map[string]func(*config.TLS){
		"PEM file": func(c *config.TLS) { c.KeystoreType, c.KeystoreLocation = "PEM", s.Server.PEMStore },
		"encrypted PEM file": func(c *config.TLS) {
			c.KeystoreType, c.KeystoreLocation, c.KeyPassword = "PEM", s.Server.EncPEMStore, pw
		},
		"PEM strings": func(c *config.TLS) {
			c.KeystoreType, c.KeystoreKey, c.KeystoreCertificateChain = "PEM", config.Password(s.Server.KeyPEM), s.Server.ChainPEM
		},
		"encrypted PEM strings": func(c *config.TLS) {
			c.KeystoreType, c.KeystoreKey, c.KeystoreCertificateChain, c.KeyPassword = "PEM", config.Password(s.Server.EncKeyPEM), s.Server.ChainPEM, pw
		},
		"PKCS12": func(c *config.TLS) {
			c.KeystoreType, c.KeystoreLocation, c.KeystorePassword = "PKCS12", s.Server.P12, pw
		},
		"JKS": func(c *config.TLS) { c.KeystoreType, c.KeystoreLocation, c.KeystorePassword = "JKS", s.Server.JKS, pw },
	}
	truststores := map[string]func(*config.TLS){
		"PEM file":    func(c *config.TLS) { c.TruststoreType, c.TruststoreLocation = "PEM", s.CAFile },
		"PEM strings": func(c *config.TLS) { c.TruststoreType, c.TruststoreCertificates = "PEM", s.CAPEM },
		"PKCS12": func(c *config.TLS) {
			c.TruststoreType, c.TruststoreLocation, c.TruststorePassword = "PKCS12", s.TrustP12, pw
		},
		"JKS": func(c *config.TLS) {
			c.TruststoreType, c.TruststoreLocation, c.TruststorePassword = "JKS", s.TrustJKS, pw
		},
		// Kafka: "If a password is not set, trust store file configured
		// will still be used, but integrity checking is disabled."
		"JKS without password": func(c *config.TLS) { c.TruststoreType, c.TruststoreLocation = "JKS", s.TrustJKS },
	}
	client := &tls.Config{RootCAs: caPool(t, s.CAPEM), ServerName: "localhost", Certificates: []tls.Certificate{clientCert(t, s.Client)}}
	for kn, ks := range keystores {
		for tn, ts := range truststores {
			t.Run("keystore "+kn+", truststore "+tn, func(t *testing.T) {
				c := base()
				c.ClientAuth = "required"
				ks(&c)
				ts(&c)
				srv, err := NewServerTLS(&c)
				if err != nil {
					t.Fatal(err)
				}
				addr, results := serve(t, srv.Config())
				leaf, r, err := handshake(t, addr, results, client)
				if err != nil || r.err != nil {
					t.Fatalf("handshake: client %v, server %v", err, r.err)
				}
				if leaf.Subject.CommonName != "localhost" {
					t.Errorf("served %s", leaf.Subject)
				}
				if p := mustPrincipal(t, srv, r.state); p != User(testcerts.ClientSubjectDN) {
					t.Errorf("principal %v, want User:%s", p, testcerts.ClientSubjectDN)
				}
			})
		}
	}
}

// testStoreErrorsNameTheKey: a store that does not load is a ConfigError
// naming the exact key (the listener's own when it came from there), and
// never carries a password.
func testStoreErrorsNameTheKey(t *testing.T, s *testcerts.Set) {
	pw := config.Password(testcerts.Password)
	wrong := config.Password("not-the-password")
	cases := []struct {
		name string
		set  func(*config.TLS)
		key  string
	}{
		{"no keystore", func(c *config.TLS) {}, "ssl.keystore.location"},
		{"missing file", func(c *config.TLS) {
			c.KeystoreLocation, c.KeystorePassword = s.Dir+"/nope.jks", pw
			c.Keys = map[string]string{"ssl.keystore.location": "listener.name.ssl.ssl.keystore.location"}
		}, "listener.name.ssl.ssl.keystore.location"},
		{"JKS wrong password", func(c *config.TLS) { c.KeystoreLocation, c.KeystorePassword = s.Server.JKS, wrong }, "ssl.keystore.password"},
		{"PKCS12 wrong password", func(c *config.TLS) {
			c.KeystoreType, c.KeystoreLocation, c.KeystorePassword = "PKCS12", s.Server.P12, wrong
		}, "ssl.keystore.password"},
		{"JKS file as PKCS12", func(c *config.TLS) {
			c.KeystoreType, c.KeystoreLocation, c.KeystorePassword = "PKCS12", s.Server.JKS, pw
		}, "ssl.keystore.type"},
		{"PKCS12 file as JKS", func(c *config.TLS) { c.KeystoreLocation, c.KeystorePassword = s.Server.P12, pw }, "ssl.keystore.type"},
		{"PEM file as JKS", func(c *config.TLS) { c.KeystoreLocation, c.KeystorePassword = s.Server.PEMStore, pw }, "ssl.keystore.type"},
		{"store without password", func(c *config.TLS) { c.KeystoreLocation = s.Server.JKS }, "ssl.keystore.password"},
		{"password without store", func(c *config.TLS) { c.KeystorePassword = pw }, "ssl.keystore.location"},
		{"PEM with store password", func(c *config.TLS) {
			c.KeystoreType, c.KeystoreLocation, c.KeystorePassword = "PEM", s.Server.PEMStore, pw
		}, "ssl.keystore.password"},
		{"encrypted PEM without key password", func(c *config.TLS) { c.KeystoreType, c.KeystoreLocation = "PEM", s.Server.EncPEMStore }, "ssl.key.password"},
		{"encrypted PEM wrong key password", func(c *config.TLS) {
			c.KeystoreType, c.KeystoreLocation, c.KeyPassword = "PEM", s.Server.EncPEMStore, wrong
		}, "ssl.key.password"},
		{"PEM key string with JKS type", func(c *config.TLS) {
			c.KeystoreKey, c.KeystoreCertificateChain = config.Password(s.Server.KeyPEM), s.Server.ChainPEM
		}, "ssl.keystore.type"},
		{"PEM key string without chain", func(c *config.TLS) {
			c.KeystoreType, c.KeystoreKey = "PEM", config.Password(s.Server.KeyPEM)
		}, "ssl.keystore.certificate.chain"},
		{"chain without key", func(c *config.TLS) { c.KeystoreType, c.KeystoreCertificateChain = "PEM", s.Server.ChainPEM }, "ssl.keystore.key"},
		{"key of another certificate", func(c *config.TLS) {
			c.KeystoreType, c.KeystoreKey, c.KeystoreCertificateChain = "PEM", config.Password(s.Client.KeyPEM), s.Server.ChainPEM
		}, "ssl.keystore.certificate.chain"},
		{"garbage key string", func(c *config.TLS) {
			c.KeystoreType, c.KeystoreKey, c.KeystoreCertificateChain = "PEM", "not a key", s.Server.ChainPEM
		}, "ssl.keystore.key"},
		{"truststore wrong password", func(c *config.TLS) {
			c.KeystoreType, c.KeystoreLocation = "PEM", s.Server.PEMStore
			c.TruststoreLocation, c.TruststorePassword = s.TrustJKS, wrong
		}, "ssl.truststore.password"},
		{"truststore PKCS12 wrong password", func(c *config.TLS) {
			c.KeystoreType, c.KeystoreLocation = "PEM", s.Server.PEMStore
			c.TruststoreType, c.TruststoreLocation, c.TruststorePassword = "PKCS12", s.TrustP12, wrong
		}, "ssl.truststore.password"},
		{"truststore missing", func(c *config.TLS) {
			c.KeystoreType, c.KeystoreLocation = "PEM", s.Server.PEMStore
			c.TruststoreType, c.TruststoreLocation = "PEM", s.Dir+"/none.pem"
		}, "ssl.truststore.location"},
		{"truststore certificates with JKS type", func(c *config.TLS) {
			c.KeystoreType, c.KeystoreLocation = "PEM", s.Server.PEMStore
			c.TruststoreCertificates = s.CAPEM
		}, "ssl.truststore.type"},
		{"TLSv1.1", func(c *config.TLS) {
			c.KeystoreType, c.KeystoreLocation = "PEM", s.Server.PEMStore
			c.EnabledProtocols = []string{"TLSv1.1", "TLSv1.2"}
		}, "ssl.enabled.protocols"},
		{"unknown cipher suite", func(c *config.TLS) {
			c.KeystoreType, c.KeystoreLocation = "PEM", s.Server.PEMStore
			c.CipherSuites = []string{"TLS_NOPE"}
		}, "ssl.cipher.suites"},
		{"insecure cipher suite", func(c *config.TLS) {
			c.KeystoreType, c.KeystoreLocation = "PEM", s.Server.PEMStore
			c.CipherSuites = []string{"TLS_RSA_WITH_RC4_128_SHA"}
		}, "ssl.cipher.suites"},
		{"TLS 1.3 only with TLS 1.2 suites", func(c *config.TLS) {
			c.KeystoreType, c.KeystoreLocation = "PEM", s.Server.PEMStore
			c.EnabledProtocols = []string{"TLSv1.3"}
			c.CipherSuites = []string{"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"}
		}, "ssl.cipher.suites"},
		{"bad mapping rule", func(c *config.TLS) {
			c.KeystoreType, c.KeystoreLocation = "PEM", s.Server.PEMStore
			c.PrincipalMappingRules = "RULE:^CN=(.*?)/$1/Q"
		}, "ssl.principal.mapping.rules"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := base()
			tc.set(&c)
			_, err := NewServerTLS(&c)
			var ce *config.ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("error %v, want a *config.ConfigError", err)
			}
			if ce.Key != tc.key {
				t.Errorf("key %q, want %q (%s)", ce.Key, tc.key, ce.Message)
			}
			if strings.Contains(ce.Error(), testcerts.Password) || strings.Contains(ce.Error(), string(wrong)) {
				t.Errorf("message holds a password: %s", ce.Error())
			}
		})
	}
}

// testClientAuth: required refuses a connection without a certificate,
// with one of an untrusted CA, and with an expired one; requested accepts
// none (ANONYMOUS) but still refuses a bad one; none asks for nothing.
func testClientAuth(t *testing.T, s *testcerts.Set) {
	roots := caPool(t, s.CAPEM)
	with := func(ids ...testcerts.Identity) *tls.Config {
		c := &tls.Config{RootCAs: roots, ServerName: "localhost"}
		if len(ids) > 0 {
			// Sent whatever CAs the server names, as a misconfigured
			// or hostile client would.
			cert := clientCert(t, ids[0])
			c.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert, nil }
		}
		return c
	}
	start := func(auth string, versions ...string) (*ServerTLS, string, <-chan result) {
		c := base()
		c.ClientAuth = auth
		c.KeystoreType, c.KeystoreLocation = "PEM", s.Server.PEMStore
		c.TruststoreType, c.TruststoreLocation = "PEM", s.CAFile
		if len(versions) > 0 {
			c.EnabledProtocols = versions
		}
		srv, err := NewServerTLS(&c)
		if err != nil {
			t.Fatal(err)
		}
		addr, res := serve(t, srv.Config())
		return srv, addr, res
	}
	for _, v := range []string{"TLSv1.2", "TLSv1.3"} {
		t.Run(v, func(t *testing.T) {
			srv, addr, res := start("required", v)
			if _, r, err := handshake(t, addr, res, with(s.Client)); err != nil || r.err != nil {
				t.Errorf("valid client: %v / %v", err, r.err)
			} else if p := mustPrincipal(t, srv, r.state); p.Name != testcerts.ClientSubjectDN {
				t.Errorf("principal %v", p)
			}
			for name, cfg := range map[string]*tls.Config{"no certificate": with(), "untrusted": with(s.Untrusted), "expired": with(s.Expired)} {
				_, r, err := handshake(t, addr, res, cfg)
				if err == nil || r.err == nil {
					t.Errorf("required, %s: accepted (client %v, server %v)", name, err, r.err)
				}
			}

			srv, addr, res = start("requested", v)
			_, r, err := handshake(t, addr, res, with())
			if err != nil || r.err != nil {
				t.Fatalf("requested, no certificate: %v / %v", err, r.err)
			}
			if p := mustPrincipal(t, srv, r.state); p != Anonymous {
				t.Errorf("requested, no certificate: principal %v", p)
			}
			if _, r, err := handshake(t, addr, res, with(s.Client)); err != nil || r.err != nil || mustPrincipal(t, srv, r.state).Name != testcerts.ClientSubjectDN {
				t.Errorf("requested, valid: %v / %v", err, r.err)
			}
			if _, r, err := handshake(t, addr, res, with(s.Untrusted)); err == nil || r.err == nil {
				t.Error("requested, untrusted: accepted")
			}

			srv, addr, res = start("none", v)
			_, r, err = handshake(t, addr, res, with(s.Client))
			if err != nil || r.err != nil {
				t.Fatalf("none: %v / %v", err, r.err)
			}
			if p := mustPrincipal(t, srv, r.state); p != Anonymous {
				t.Errorf("none: principal %v", p)
			}
		})
	}
}

// testReload: a reload changes the certificate new connections see; a
// failed one returns the ConfigError and keeps the current stores.
func testReload(t *testing.T, s *testcerts.Set) {
	c := base()
	c.KeystoreType, c.KeystoreLocation = "PEM", s.Server.PEMStore
	srv, err := NewServerTLS(&c)
	if err != nil {
		t.Fatal(err)
	}
	addr, res := serve(t, srv.Config())
	client := &tls.Config{RootCAs: caPool(t, s.CAPEM), ServerName: "localhost"}
	served := func() string {
		t.Helper()
		leaf, r, err := handshake(t, addr, res, client)
		if err != nil || r.err != nil {
			t.Fatalf("handshake: %v / %v", err, r.err)
		}
		return leaf.Subject.CommonName
	}
	if cn := served(); cn != "localhost" {
		t.Fatalf("before reload: %s", cn)
	}
	// The same certificate in another store type: allowed.
	same := base()
	same.KeystoreType, same.KeystoreLocation, same.KeystorePassword = "PKCS12", s.Server.P12, testcerts.Password
	if err := srv.Reload(&same); err != nil {
		t.Fatal(err)
	}
	// Another subject: refused unless ssl.allow.dn.changes (Kafka).
	next := base()
	next.KeystoreType, next.KeystoreLocation, next.KeystorePassword = "JKS", s.Server2.JKS, testcerts.Password
	var ce *config.ConfigError
	if err := srv.Reload(&next); !errors.As(err, &ce) || ce.Key != "ssl.keystore.location" ||
		!strings.Contains(ce.Message, "DistinguishedName does not match") {
		t.Fatalf("reload with another subject: %v", err)
	}
	if cn := served(); cn != "localhost" {
		t.Fatalf("after a refused reload: %s", cn)
	}
	// Dropping subject alternative names: refused unless
	// ssl.allow.san.changes.
	fewer := base()
	fewer.KeystoreType, fewer.KeystoreLocation, fewer.AllowDNChanges = "PEM", s.Client.PEMStore, true
	if err := srv.Reload(&fewer); !errors.As(err, &ce) || !strings.Contains(ce.Message, "SubjectAltNames do not match") {
		t.Fatalf("reload dropping SANs: %v", err)
	}
	next.AllowDNChanges = true
	if err := srv.Reload(&next); err != nil {
		t.Fatal(err)
	}
	if cn := served(); cn != "localhost-2" {
		t.Fatalf("after reload: %s", cn)
	}
	bad := next
	bad.KeystorePassword = "wrong"
	if err := srv.Reload(&bad); !errors.As(err, &ce) || ce.Key != "ssl.keystore.password" {
		t.Fatalf("failed reload: %v", err)
	}
	if cn := served(); cn != "localhost-2" {
		t.Fatalf("after a failed reload: %s", cn)
	}
}

// testProtocolVersions: a TLS 1.2-only listener refuses a TLS 1.3-only
// client and the reverse; the versions negotiated are the ones allowed.
func testProtocolVersions(t *testing.T, s *testcerts.Set) {
	for _, tc := range []struct {
		enabled       string
		want, refused uint16
	}{{"TLSv1.2", tls.VersionTLS12, tls.VersionTLS13}, {"TLSv1.3", tls.VersionTLS13, tls.VersionTLS12}} {
		c := base()
		c.KeystoreType, c.KeystoreLocation = "PEM", s.Server.PEMStore
		c.EnabledProtocols = []string{tc.enabled}
		srv, err := NewServerTLS(&c)
		if err != nil {
			t.Fatal(err)
		}
		addr, res := serve(t, srv.Config())
		_, r, err := handshake(t, addr, res, &tls.Config{RootCAs: caPool(t, s.CAPEM), ServerName: "localhost"})
		if err != nil || r.err != nil || r.state.Version != tc.want {
			t.Errorf("%s: version %x, %v / %v", tc.enabled, r.state.Version, err, r.err)
		}
		only := &tls.Config{RootCAs: caPool(t, s.CAPEM), ServerName: "localhost", MinVersion: tc.refused, MaxVersion: tc.refused}
		if _, r, err := handshake(t, addr, res, only); err == nil || r.err == nil {
			t.Errorf("%s: a client of version %x was accepted", tc.enabled, tc.refused)
		}
	}
	// Listing only TLS 1.2 suites keeps TLS 1.3 from being negotiated, as
	// in Java.
	c := base()
	c.KeystoreType, c.KeystoreLocation = "PEM", s.Server.PEMStore
	c.CipherSuites = []string{"TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384"}
	srv, err := NewServerTLS(&c)
	if err != nil {
		t.Fatal(err)
	}
	addr, res := serve(t, srv.Config())
	_, r, err := handshake(t, addr, res, &tls.Config{RootCAs: caPool(t, s.CAPEM), ServerName: "localhost"})
	if err != nil || r.err != nil || r.state.Version != tls.VersionTLS12 || r.state.CipherSuite != tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384 {
		t.Errorf("cipher suites: version %x suite %x, %v / %v", r.state.Version, r.state.CipherSuite, err, r.err)
	}
}

// testClientTLS: this broker as a client: the trust store verifies the
// peer, its host name unless ssl.endpoint.identification.algorithm is
// empty, and the key store is the client certificate.
func testClientTLS(t *testing.T, s *testcerts.Set) {
	sc := base()
	sc.ClientAuth = "required"
	sc.KeystoreType, sc.KeystoreLocation = "PEM", s.Server.PEMStore
	sc.TruststoreType, sc.TruststoreLocation = "PEM", s.CAFile
	srv, err := NewServerTLS(&sc)
	if err != nil {
		t.Fatal(err)
	}
	addr, res := serve(t, srv.Config())

	cc := base()
	cc.KeystoreType, cc.KeystoreLocation, cc.KeyPassword = "PEM", s.Client.EncPEMStore, testcerts.Password
	cc.TruststoreType, cc.TruststoreLocation, cc.TruststorePassword = "JKS", s.TrustJKS, testcerts.Password
	for _, tc := range []struct {
		name, server, algorithm string
		ok                      bool
	}{
		{"host name checked", "localhost", "https", true},
		{"IP SAN checked", "127.0.0.1", "https", true},
		{"wrong host name refused", "broker.example", "https", false},
		{"host name not checked", "broker.example", "", true},
	} {
		cc.EndpointIdentificationAlgorithm = tc.algorithm
		cfg, err := ClientTLS(&cc, tc.server)
		if err != nil {
			t.Fatal(err)
		}
		_, r, err := handshake(t, addr, res, cfg)
		if ok := err == nil && r.err == nil; ok != tc.ok {
			t.Errorf("%s: ok %v (client %v, server %v)", tc.name, ok, err, r.err)
		}
		if tc.ok && r.err == nil && mustPrincipal(t, srv, r.state).Name != testcerts.ClientSubjectDN {
			t.Errorf("%s: principal %v", tc.name, mustPrincipal(t, srv, r.state))
		}
	}
	// Without host name checks the chain is still verified.
	untrusting := base()
	untrusting.EndpointIdentificationAlgorithm = ""
	untrusting.TruststoreType, untrusting.TruststoreCertificates = "PEM", s.Untrusted.ChainPEM
	cfg, err := ClientTLS(&untrusting, "localhost")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := handshake(t, addr, res, cfg); err == nil {
		t.Error("a server of an untrusted CA was accepted")
	}
}

// mustPrincipal is srv.Principal(state), failing the test on an error.
func mustPrincipal(t *testing.T, srv *ServerTLS, state tls.ConnectionState) Principal {
	t.Helper()
	p, err := srv.Principal(state)
	if err != nil {
		t.Fatalf("principal: %v", err)
	}
	return p
}
