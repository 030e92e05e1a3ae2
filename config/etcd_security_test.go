package config

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func init() {
	const embeddedOnly = "Applies only with etcd.endpoints (an external etcd)"
	invalidCases = append(invalidCases, []struct {
		key, value string
		extra      map[string]string
		msg        string
	}{
		{"delegation.token.max.lifetime.ms", "0", nil, "Invalid value 0 for configuration delegation.token.max.lifetime.ms: Value must be at least 1"},
		{"delegation.token.expiry.time.ms", "0", nil, "Invalid value 0 for configuration delegation.token.expiry.time.ms: Value must be at least 1"},
		{"delegation.token.expiry.check.interval.ms", "0", nil, "Invalid value 0 for configuration delegation.token.expiry.check.interval.ms: Value must be at least 1"},

		{"etcd.cert.file", "/nonexistent/cert.pem", map[string]string{"etcd.key.file": "/nonexistent/key.pem", "etcd.listen.client.urls": "https://127.0.0.1:0"},
			"Invalid value /nonexistent/cert.pem for configuration etcd.cert.file: Could not read the file: open /nonexistent/cert.pem: no such file or directory"},
		{"etcd.key.file", "key.pem", nil, "Invalid value key.pem for configuration etcd.key.file: etcd.cert.file must be set too"},
		{"etcd.trusted.ca.file", "/nonexistent/ca.pem", nil,
			"Invalid value /nonexistent/ca.pem for configuration etcd.trusted.ca.file: Could not read the file: open /nonexistent/ca.pem: no such file or directory"},
		{"etcd.client.cert.auth", "true", nil, "Invalid value true for configuration etcd.client.cert.auth: Client certificate authentication needs etcd.trusted.ca.file"},
		{"etcd.peer.cert.file", "cert.pem", nil, "Invalid value cert.pem for configuration etcd.peer.cert.file: etcd.peer.key.file must be set too"},
		{"etcd.peer.key.file", "key.pem", nil, "Invalid value key.pem for configuration etcd.peer.key.file: etcd.peer.cert.file must be set too"},
		{"etcd.peer.trusted.ca.file", "/nonexistent/ca.pem", nil,
			"Invalid value /nonexistent/ca.pem for configuration etcd.peer.trusted.ca.file: Could not read the file: open /nonexistent/ca.pem: no such file or directory"},
		{"etcd.peer.client.cert.auth", "true", nil, "Invalid value true for configuration etcd.peer.client.cert.auth: Client certificate authentication needs etcd.peer.trusted.ca.file"},
		{"etcd.client.cert.file", "c.pem", nil, "Invalid value c.pem for configuration etcd.client.cert.file: " + embeddedOnly},
		{"etcd.client.key.file", "k.pem", nil, "Invalid value k.pem for configuration etcd.client.key.file: " + embeddedOnly},
		{"etcd.client.trusted.ca.file", "ca.pem", nil, "Invalid value ca.pem for configuration etcd.client.trusted.ca.file: " + embeddedOnly},
		{"etcd.username", "root", nil, "Invalid value root for configuration etcd.username: " + embeddedOnly},
		{"etcd.password", "pw", nil, "etcd.password applies only with etcd.endpoints (an external etcd)"},
	}...)
	// Any secret is a key; empty disables tokens (KafkaConfig.tokenAuthEnabled).
	anyValueOfItsType = append(anyValueOfItsType, "delegation.token.secret.key")
}

// TestDelegationTokenSettings: defaults, values, and the secret kept out of
// printing.
func TestDelegationTokenSettings(t *testing.T) {
	c, _ := mustParse(t, map[string]string{})
	d := c.Security.DelegationTokens
	if d.Enabled() || d.MaxLifetime != 7*24*time.Hour || d.ExpiryTime != 24*time.Hour || d.ExpiryCheckInterval != time.Hour {
		t.Errorf("defaults %+v", d)
	}
	c, warnings := mustParse(t, map[string]string{"delegation.token.secret.key": " s3cret ", "delegation.token.max.lifetime.ms": "1000",
		"delegation.token.expiry.time.ms": "500", "delegation.token.expiry.check.interval.ms": "100"})
	d = c.Security.DelegationTokens
	if !d.Enabled() || d.SecretKey.Reveal() != "s3cret" || d.MaxLifetime != time.Second || d.ExpiryTime != 500*time.Millisecond ||
		d.ExpiryCheckInterval != 100*time.Millisecond || len(warnings) != 0 {
		t.Errorf("set: %+v %q", d, warnings)
	}
	if s := d.SecretKey.String(); s != "[hidden]" {
		t.Errorf("secret prints as %q", s)
	}
	// Kafka 4 removed the old alias: a warning, and tokens stay disabled.
	c, warnings = mustParse(t, map[string]string{"delegation.token.master.key": "old"})
	if c.Security.DelegationTokens.Enabled() || len(warnings) != 1 || !strings.Contains(warnings[0], "delegation.token.master.key") {
		t.Errorf("master key: %+v %q", c.Security.DelegationTokens, warnings)
	}
	// An empty secret disables tokens, as in Kafka.
	if c, _ := mustParse(t, map[string]string{"delegation.token.secret.key": " "}); c.Security.DelegationTokens.Enabled() {
		t.Error("an empty secret enables tokens")
	}
}

// testCerts makes a CA and a certificate for 127.0.0.1 signed by it with the
// openssl CLI; it fails the test when openssl is missing.
func testCerts(t *testing.T) (dir string) {
	t.Helper()
	if _, err := exec.LookPath("openssl"); err != nil {
		t.Fatalf("these tests need the openssl CLI: %v", err)
	}
	dir = t.TempDir()
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
	return dir
}

// TestEtcdSecuritySettings: the keys reach Config when they fit, and a TLS
// setting beside an http:// URL, an https:// URL without a certificate, or
// a file that is not a certificate is a ConfigError naming the key.
func TestEtcdSecuritySettings(t *testing.T) {
	dir := testCerts(t)
	f := func(name string) string { return filepath.Join(dir, name) }
	c, _ := mustParse(t, map[string]string{"etcd.listen.client.urls": "https://127.0.0.1:0", "etcd.cert.file": f("node.pem"),
		"etcd.key.file": f("node.key"), "etcd.trusted.ca.file": f("ca.pem"), "etcd.client.cert.auth": "true"})
	if s := c.Etcd.Security; s.CertFile != f("node.pem") || s.KeyFile != f("node.key") || s.TrustedCAFile != f("ca.pem") || !s.ClientCertAuth {
		t.Errorf("embedded: %+v", s)
	}
	c, _ = mustParse(t, map[string]string{"etcd.endpoints": "https://127.0.0.1:2379", "etcd.client.cert.file": f("node.pem"),
		"etcd.client.key.file": f("node.key"), "etcd.client.trusted.ca.file": f("ca.pem"), "etcd.username": "strait", "etcd.password": "pw"})
	if s := c.Etcd.Security; s.ClientCertFile != f("node.pem") || s.Username != "strait" || s.Password.Reveal() != "pw" {
		t.Errorf("external: %+v", s)
	}

	for name, tc := range map[string]struct {
		props   map[string]string
		key, in string
	}{
		"cert with an http listener": {map[string]string{"etcd.listen.client.urls": "http://127.0.0.1:0",
			"etcd.cert.file": f("node.pem"), "etcd.key.file": f("node.key")}, "etcd.cert.file", "http://127.0.0.1:0"},
		"cert and no listener": {map[string]string{"etcd.cert.file": f("node.pem"), "etcd.key.file": f("node.key")},
			"etcd.cert.file", "no client listener"},
		"https without cert": {map[string]string{"etcd.listen.client.urls": "https://127.0.0.1:0"}, "etcd.listen.client.urls", "etcd.cert.file"},
		"peer cert with an http peer": {map[string]string{"etcd.initial.cluster": "strait=http://127.0.0.1:2380",
			"etcd.peer.cert.file": f("node.pem"), "etcd.peer.key.file": f("node.key")}, "etcd.peer.cert.file", "http://127.0.0.1:2380"},
		"peer cert without peers": {map[string]string{"etcd.peer.cert.file": f("node.pem"), "etcd.peer.key.file": f("node.key")},
			"etcd.peer.cert.file", "no peers"},
		"key that is not a key": {map[string]string{"etcd.listen.client.urls": "https://127.0.0.1:0",
			"etcd.cert.file": f("node.pem"), "etcd.key.file": f("ca.pem")}, "etcd.cert.file", "Could not load"},
		"CA that is not PEM": {map[string]string{"etcd.trusted.ca.file": f("ext.cnf")}, "etcd.trusted.ca.file", "No PEM certificate"},
		"client TLS with an http endpoint": {map[string]string{"etcd.endpoints": "http://127.0.0.1:2379",
			"etcd.client.trusted.ca.file": f("ca.pem")}, "etcd.client.trusted.ca.file", "http://127.0.0.1:2379"},
		"server TLS with an external etcd": {map[string]string{"etcd.endpoints": "https://127.0.0.1:2379",
			"etcd.cert.file": f("node.pem")}, "etcd.cert.file", "only to the embedded etcd"},
		"password without user": {map[string]string{"etcd.endpoints": "http://127.0.0.1:2379", "etcd.password": "sekrit"},
			"etcd.password", "etcd.username is not"},
	} {
		_, _, err := Parse(tc.props)
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Key != tc.key || !strings.Contains(ce.Error(), tc.in) {
			t.Errorf("%s: %v (key %v), want a ConfigError on %s mentioning %q", name, err, ce, tc.key, tc.in)
		}
		if err != nil && strings.Contains(err.Error(), "sekrit") {
			t.Errorf("%s: the password reached the error: %v", name, err)
		}
	}
}
