package main

import (
	"context"
	"crypto/tls"
	"encoding/pem"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

// TestScenarioSecurityFields: the security fields load, name the scenario,
// default to SCRAM-SHA-512, and wrong combinations are refused.
func TestScenarioSecurityFields(t *testing.T) {
	dir := t.TempDir()
	writeScenario(t, dir, "a.json", `[{"record_size": 1024},
		{"record_size": 1024, "security": "SASL_SSL"},
		{"record_size": 1024, "security": "SASL_SSL", "sasl_mechanism": "PLAIN"},
		{"record_size": 1024, "security": "SSL"},
		{"record_size": 100, "security": "SSL"}]`)
	ss, err := loadScenarios([]string{dir}, 1)
	if err != nil {
		t.Fatal(err)
	}
	wantNames := []string{
		"1KB p6 acks=all none 1prod",
		"1KB p6 acks=all none 1prod SASL_SSL/SCRAM-SHA-512",
		"1KB p6 acks=all none 1prod SASL_SSL/PLAIN",
		"1KB p6 acks=all none 1prod SSL",
		"100B p6 acks=all none 1prod SSL",
	}
	for i, s := range ss {
		if s.Name != wantNames[i] {
			t.Errorf("scenario %d named %q, want %q", i, s.Name, wantNames[i])
		}
	}
	if ss[0].secured() || !ss[1].secured() || ss[1].mechanism() != mechScram512 || ss[3].mechanism() != "" {
		t.Errorf("protocol/mechanism defaults wrong: %+v", ss[:4])
	}
	// The 100-byte SSL scenario has no plaintext twin; the others have the first.
	if got, want := twins(ss), map[int]int{1: 0, 2: 0, 3: 0}; len(got) != len(want) || got[1] != 0 || got[2] != 0 || got[3] != 0 {
		t.Errorf("twins = %v, want %v", got, want)
	}
	protos, mechs := securedNeeds(ss)
	if strings.Join(protos, ",") != "SASL_SSL,SSL" || strings.Join(mechs, ",") != "PLAIN,SCRAM-SHA-512" {
		t.Errorf("securedNeeds = %v %v", protos, mechs)
	}

	for _, bad := range []string{
		`{"security": "TLS"}`,
		`{"security": "SSL", "sasl_mechanism": "PLAIN"}`,
		`{"sasl_mechanism": "PLAIN"}`,
		`{"security": "SASL_SSL", "sasl_mechanism": "GSSAPI"}`,
	} {
		d := t.TempDir()
		writeScenario(t, d, "bad.json", bad)
		if _, err := loadScenarios([]string{d}, 1); err == nil {
			t.Errorf("%s loaded without an error", bad)
		}
	}
}

// TestListenerKeys: a secured scenario's clients seed the listener's address
// with the options registered for its key; plaintext ones get none.
func TestListenerKeys(t *testing.T) {
	p := &process{addr: "127.0.0.1:1", listeners: map[string]string{protoSASLSSL: "127.0.0.1:2"}}
	plain := Scenario{}
	scram := Scenario{Security: protoSASLSSL}
	ssl := Scenario{Security: protoSSL}
	if got := p.scenarioAddr(plain); got != "127.0.0.1:1" {
		t.Errorf("plaintext scenario address %q", got)
	}
	if got := p.scenarioAddr(scram); got != "127.0.0.1:2#SCRAM-SHA-512" || seedAddr(got) != "127.0.0.1:2" {
		t.Errorf("SASL_SSL scenario address %q", got)
	}
	if got := p.scenarioAddr(ssl); got != "" {
		t.Errorf("a broker without an SSL listener gave %q", got)
	}
	opts, err := clientSecurity(protoSASLSSL, mechScram512, nil, "u", "p")
	if err != nil || len(opts) != 2 {
		t.Fatalf("clientSecurity: %d options, %v", len(opts), err)
	}
	registerListener("127.0.0.1:2#SCRAM-SHA-512", opts)
	if n := len(baseOpts([]string{"127.0.0.1:2#SCRAM-SHA-512"})) - len(baseOpts([]string{"127.0.0.1:1"})); n != 2 {
		t.Errorf("the secured key adds %d options, want TLS and SASL", n)
	}
	if _, err := clientSecurity(protoSASLSSL, "GSSAPI", nil, "u", "p"); err == nil {
		t.Error("GSSAPI accepted")
	}
	if err := registerRunSecurity("127.0.0.1:3", []Scenario{plain, ssl}, "", "", ""); err == nil {
		t.Error("run accepted two protocols against one listener")
	}
	if err := registerRunSecurity("127.0.0.1:3", []Scenario{scram}, "", "", ""); err == nil {
		t.Error("run accepted SASL without a user")
	}
}

// TestPKIServesTLS: the certificates made with the openssl CLI and keytool
// give a keystore of every type, properties with Kafka's per-listener keys,
// and a PEM keystore that a TLS server on 127.0.0.1 serves to a client
// trusting only the generated CA.
func TestPKIServesTLS(t *testing.T) {
	p, err := newPKI(t.TempDir(), "")
	if err != nil {
		t.Fatalf("certificates (openssl and keytool must be installed): %v", err)
	}
	for _, f := range []string{p.caPEM, p.p12, p.jks, p.pem} {
		if st, err := os.Stat(f); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	props := p.brokerProperties([]string{protoSSL, protoSASLSSL}, []string{mechScram512, mechPlain})
	for _, want := range []string{
		"listener.name.ssl.ssl.keystore.type=PKCS12\n",
		"listener.name.ssl.ssl.keystore.location=" + p.p12 + "\n",
		"listener.name.sasl_ssl.ssl.keystore.password=" + storePassword + "\n",
		"listener.name.sasl_ssl.sasl.enabled.mechanisms=SCRAM-SHA-512,PLAIN\n",
		"listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;\n",
		`listener.name.sasl_ssl.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_bench="bench-secret";` + "\n",
	} {
		if !strings.Contains(props, want) {
			t.Errorf("properties lack %q:\n%s", want, props)
		}
	}
	if strings.Contains(props, "listener.name.ssl.sasl") {
		t.Errorf("SSL listener got SASL settings:\n%s", props)
	}

	raw, err := os.ReadFile(p.pem)
	if err != nil {
		t.Fatal(err)
	}
	var certPEM, keyPEM []byte
	for rest := raw; ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		if b.Type == "PRIVATE KEY" {
			keyPEM = append(keyPEM, pem.EncodeToMemory(b)...)
		} else {
			certPEM = append(certPEM, pem.EncodeToMemory(b)...)
		}
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatalf("PEM keystore: %v", err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		_ = c.(*tls.Conn).Handshake()
		_, _ = io.WriteString(c, "ok")
		c.Close()
	}()
	info, err := tlsProbe(ln.Addr().String(), p.roots)
	if err != nil {
		t.Fatalf("handshake with the generated certificate: %v", err)
	}
	if !strings.HasPrefix(info, "TLS 1.3 ") {
		t.Errorf("negotiated %q, want TLS 1.3", info)
	}
	// A client that trusts only the system roots refuses the bench CA.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	d := &tls.Dialer{NetDialer: &net.Dialer{}, Config: &tls.Config{ServerName: "127.0.0.1"}}
	if c, err := d.DialContext(ctx, "tcp", ln.Addr().String()); err == nil {
		c.Close()
		t.Error("a client without the bench CA accepted the certificate")
	}
}

// TestSecurityCostTable: a secured scenario is set beside its plaintext
// twin per broker, and kfake, which cannot run it, shows n/a.
func TestSecurityCostTable(t *testing.T) {
	plain := Scenario{Name: "base", RecordSize: 1024, Partitions: 6}
	sec := plain
	sec.Name, sec.Security = "base SSL", protoSSL
	res := func(sc, kind string, mb float64) ScenarioResult {
		return ScenarioResult{Scenario: sc, Target: kind, Round: 1,
			Produce: Throughput{MBPerSec: mb, RecordsPerSec: mb * 1000}, Consume: Throughput{MBPerSec: 2 * mb, RecordsPerSec: mb * 2000}}
	}
	rep := &CompareReport{
		Reference: kindKafka, Subject: kindStrait, Targets: []string{kindKafka, kindStrait, kindKfake},
		Scenarios: []Scenario{plain, sec},
		Results: []ScenarioResult{
			res("base", kindKafka, 100), res("base", kindStrait, 200), res("base", kindKfake, 300),
			res("base SSL", kindKafka, 50), res("base SSL", kindStrait, 150),
			{Scenario: "base SSL", Target: kindKfake, Round: 1, Skipped: "kfake has no SSL listener"},
		},
		TLS: map[string]map[string]string{kindKafka: {protoSSL: "TLS 1.3 TLS_AES_256_GCM_SHA384"}},
		ConnSetup: map[string]map[string]ConnSetup{
			kindKafka:  {protoPlaintext: {N: 30, P50Ms: 2, P99Ms: 4}, protoSSL: {N: 30, P50Ms: 8, P99Ms: 12}},
			kindStrait: {protoPlaintext: {N: 30, P50Ms: 1, P99Ms: 2}, protoSSL: {N: 30, P50Ms: 4, P99Ms: 5}},
		},
		Keystore: "PKCS12",
	}
	var b strings.Builder
	writeMarkdown(&b, rep)
	out := b.String()
	for _, want := range []string{
		"| base SSL | 50.0 (50k) | 150.0 (150k) | **3.00** | n/a |",
		"| base SSL (twin: base) | Kafka | 100.0 → 50.0 | **0.50** | 200.0 → 100.0 | **0.50** |",
		"| base SSL (twin: base) | Strait | 200.0 → 150.0 | **0.75** |",
		"Kafka SSL: TLS 1.3 TLS_AES_256_GCM_SHA384",
		"| PLAINTEXT | 2.00 | 4.00 | 1.00 | 2.00 | **0.50** |\n| SSL | 8.00 | 12.00 | 4.00 | 5.00 | **0.50** |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "## Errors") {
		t.Errorf("an n/a counted as an error:\n%s", out)
	}
}
