package controller

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// testCerts makes, with the openssl CLI, a CA and a certificate for
// 127.0.0.1 it signed (server and client use), in a temporary directory.
func testCerts(t *testing.T) func(name string) string {
	t.Helper()
	if _, err := exec.LookPath("openssl"); err != nil {
		t.Fatalf("this test needs the openssl CLI: %v", err)
	}
	dir := t.TempDir()
	run := func(args ...string) {
		cmd := exec.Command("openssl", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("openssl %v: %v\n%s", args, err, out)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "ext.cnf"), []byte("subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ec := []string{"-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"}
	run(append([]string{"req", "-x509", "-days", "1", "-subj", "/CN=test-ca", "-keyout", "ca.key", "-out", "ca.pem"}, ec...)...)
	run(append([]string{"req", "-subj", "/CN=127.0.0.1", "-keyout", "node.key", "-out", "node.csr"}, ec...)...)
	run("x509", "-req", "-days", "1", "-in", "node.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
		"-extfile", "ext.cnf", "-out", "node.pem")
	return func(name string) string { return filepath.Join(dir, name) }
}

// canRead reports whether a client of url with tlsInfo can read a key
// within a second.
func canRead(t *testing.T, url string, tlsInfo transport.TLSInfo) error {
	t.Helper()
	tlsCfg, err := tlsInfo.ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{url}, TLS: tlsCfg, DialTimeout: time.Second, Logger: zap.NewNop()})
	if err != nil {
		return err
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, err = cli.Get(ctx, "/strait/cluster_id")
	return err
}

// By default the embedded etcd has no client listener at all.
func TestEmbeddedEtcdHasNoClientListenerByDefault(t *testing.T) {
	c := startController(t, testConfig(t, 1))
	if n := len(c.etcd.Clients); n != 0 || len(c.etcd.Config().ListenClientUrls) != 0 || c.EmbeddedClientURL() != "" {
		t.Fatalf("%d client listeners (%v), URL %q", n, c.etcd.Config().ListenClientUrls, c.EmbeddedClientURL())
	}
	if len(c.etcd.Peers) != 0 {
		t.Fatalf("%d peer listeners", len(c.etcd.Peers))
	}
}

// The embedded etcd with client TLS and client-certificate authentication:
// a client with the CA's certificate reads, one without a certificate is
// refused, and another controller joins as a TLS client of it.
func TestEmbeddedEtcdClientTLS(t *testing.T) {
	f := testCerts(t)
	cfg := testConfig(t, 1)
	cfg.EtcdListenClientURLs = []string{"https://127.0.0.1:0"}
	cfg.EtcdSecurity = EtcdSecurity{CertFile: f("node.pem"), KeyFile: f("node.key"), TrustedCAFile: f("ca.pem"), ClientCertAuth: true}
	a := startController(t, cfg)
	url := a.EmbeddedClientURL()
	if !strings.HasPrefix(url, "https://127.0.0.1:") {
		t.Fatalf("client URL %q", url)
	}
	if err := canRead(t, url, transport.TLSInfo{CertFile: f("node.pem"), KeyFile: f("node.key"), TrustedCAFile: f("ca.pem")}); err != nil {
		t.Errorf("with a client certificate: %v", err)
	}
	if err := canRead(t, url, transport.TLSInfo{TrustedCAFile: f("ca.pem")}); err == nil {
		t.Error("a client without a certificate was served")
	}
	if err := canRead(t, strings.Replace(url, "https://", "http://", 1), transport.TLSInfo{}); err == nil {
		t.Error("a plaintext client was served")
	}

	cfgB := testConfig(t, 2)
	cfgB.DataDir, cfgB.EtcdEndpoints = "", []string{url}
	cfgB.EtcdSecurity = EtcdSecurity{ClientCertFile: f("node.pem"), ClientKeyFile: f("node.key"), ClientTrustedCAFile: f("ca.pem")}
	b := startController(t, cfgB)
	if b.ClusterID() != a.ClusterID() {
		t.Errorf("cluster ids %s and %s", a.ClusterID(), b.ClusterID())
	}
}

// Settings that do not fit are refused by New, naming the key.
func TestEtcdSecurityValidation(t *testing.T) {
	for name, tc := range map[string]struct {
		change func(*Config)
		want   string
	}{
		"cert with http": {func(c *Config) {
			c.EtcdListenClientURLs = []string{"http://127.0.0.1:0"}
			c.EtcdSecurity.CertFile, c.EtcdSecurity.KeyFile = "c", "k"
		}, "etcd.cert.file"},
		"cert without listener": {func(c *Config) { c.EtcdSecurity.CertFile, c.EtcdSecurity.KeyFile = "c", "k" }, "etcd.cert.file"},
		"https without cert":    {func(c *Config) { c.EtcdListenClientURLs = []string{"https://127.0.0.1:0"} }, "etcd.listen.client.urls"},
		"client cert embedded":  {func(c *Config) { c.EtcdSecurity.ClientCertFile = "c" }, "etcd.client.cert.file"},
		"server cert external": {func(c *Config) {
			c.EtcdEndpoints = []string{"https://127.0.0.1:1"}
			c.EtcdSecurity.CertFile = "c"
		}, "etcd.cert.file"},
		"peer cert single member":  {func(c *Config) { c.EtcdSecurity.PeerCertFile, c.EtcdSecurity.PeerKeyFile = "c", "k" }, "etcd.peer.cert.file"},
		"advertise without listen": {func(c *Config) { c.EtcdAdvertiseClientURLs = []string{"http://127.0.0.1:2379"} }, "etcd.listen.client.urls"},
	} {
		cfg := testConfig(t, 1)
		tc.change(&cfg)
		if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error naming %s", name, err, tc.want)
		}
	}
}

// A controller of an external etcd with auth enabled logs in with
// etcd.username and etcd.password; a wrong password does not start.
func TestExternalEtcdWithAuth(t *testing.T) {
	var quiet atomic.Bool
	e, client, err := startEmbeddedEtcd(ctxT(t), t.TempDir(), testLogger(), &quiet)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		client.Close()
		quiet.Store(true)
		e.Close()
	})
	ctx := ctxT(t)
	if _, err := client.UserAdd(ctx, "root", "root-pw"); err != nil {
		t.Fatal(err)
	}
	if _, err := client.UserGrantRole(ctx, "root", "root"); err != nil {
		t.Fatal(err)
	}
	if _, err := client.AuthEnable(ctx); err != nil {
		t.Fatal(err)
	}
	url := embeddedClientURL(e)
	if err := canRead(t, url, transport.TLSInfo{}); err == nil {
		t.Fatal("an anonymous client read with auth enabled")
	}

	cfg := testConfig(t, 1)
	cfg.DataDir, cfg.EtcdEndpoints = "", []string{url}
	cfg.EtcdSecurity = EtcdSecurity{Username: "root", Password: "root-pw"}
	c := startController(t, cfg)
	if _, err := c.CreateTopic(ctxT(t), CreateTopicRequest{Name: "t", NumPartitions: 1, ReplicationFactor: 1}); err != nil {
		t.Fatal(err)
	}

	bad := testConfig(t, 2)
	bad.DataDir, bad.EtcdEndpoints = "", []string{url}
	bad.EtcdSecurity = EtcdSecurity{Username: "root", Password: "wrong"}
	wc, err := New(bad)
	if err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := wc.Start(sctx); err == nil {
		wc.Close()
		t.Fatal("a wrong password started")
	} else if strings.Contains(err.Error(), "wrong") {
		t.Errorf("the password reached the error: %v", err)
	}
}

// A member listening for peers over TLS with peer client-certificate
// authentication starts, and its peer port refuses a TLS client without a
// certificate.
func TestEmbeddedEtcdPeerTLS(t *testing.T) {
	f := testCerts(t)
	port := freeLoopbackPorts(t, 1)[0]
	cfg := testConfig(t, 1)
	cfg.EtcdName = "m1"
	cfg.EtcdInitialCluster = fmt.Sprintf("m1=https://127.0.0.1:%d", port)
	cfg.EtcdSecurity = EtcdSecurity{PeerCertFile: f("node.pem"), PeerKeyFile: f("node.key"), PeerTrustedCAFile: f("ca.pem"),
		PeerClientCertAuth: true}
	c := startController(t, cfg)
	if len(c.etcd.Peers) != 1 {
		t.Fatalf("%d peer listeners", len(c.etcd.Peers))
	}
	pool := x509.NewCertPool()
	pem, err := os.ReadFile(f("ca.pem"))
	if err != nil || !pool.AppendCertsFromPEM(pem) {
		t.Fatalf("CA: %v", err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	dial := func(certs []tls.Certificate) error {
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: time.Second}, "tcp", addr,
			&tls.Config{RootCAs: pool, Certificates: certs, ServerName: "127.0.0.1"})
		if err != nil {
			return err
		}
		defer conn.Close()
		// TLS 1.3 reports a refused client certificate on the first read.
		_ = conn.SetDeadline(time.Now().Add(time.Second))
		if _, err := conn.Write([]byte("GET /version HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
			return err
		}
		_, err = conn.Read(make([]byte, 1))
		return err
	}
	if err := dial(nil); err == nil {
		t.Error("a peer without a certificate was served")
	}
	cert, err := tls.LoadX509KeyPair(f("node.pem"), f("node.key"))
	if err != nil {
		t.Fatal(err)
	}
	if err := dial([]tls.Certificate{cert}); err != nil {
		t.Errorf("a peer with a certificate: %v", err)
	}
}

// Printing a controller configuration shows no secret.
func TestSecretsDoNotPrint(t *testing.T) {
	cfg := testConfig(t, 1)
	cfg.EtcdSecurity.Username, cfg.EtcdSecurity.Password = "strait", "etcd-pw"
	cfg.DelegationTokens.SecretKey = "token-secret"
	for _, s := range []string{fmt.Sprintf("%v", cfg), fmt.Sprintf("%+v", cfg), fmt.Sprint(cfg.EtcdSecurity, cfg.DelegationTokens)} {
		if strings.Contains(s, "etcd-pw") || strings.Contains(s, "token-secret") {
			t.Errorf("a secret printed: %s", s)
		}
	}
}
