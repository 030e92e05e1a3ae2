package main

// Secured listeners: scenarios with "security" SSL, SASL_PLAINTEXT or
// SASL_SSL run over a listener of that protocol on the same broker process
// as the plaintext scenarios, so a secured scenario and its plaintext twin
// measure the same broker seconds apart and their ratio is the cost of TLS
// (and SASL). Both Kafka and Strait get the same properties (Kafka's keys,
// per listener: listener.name.<l>.ssl.keystore.*, sasl.enabled.mechanisms,
// <mechanism>.sasl.jaas.config) and the same keystore; SCRAM users are made
// with AlterUserScramCredentials over the PLAINTEXT listener, which every
// broker keeps for setup and the probes.

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// Kafka's security protocols, also the names of the listeners that serve them.
const (
	protoPlaintext     = "PLAINTEXT"
	protoSSL           = "SSL"
	protoSASLPlaintext = "SASL_PLAINTEXT"
	protoSASLSSL       = "SASL_SSL"
)

// SASL mechanisms a scenario may ask for.
const (
	mechScram512 = "SCRAM-SHA-512"
	mechScram256 = "SCRAM-SHA-256"
	mechPlain    = "PLAIN"
)

// The one user every secured broker knows, for every mechanism. Not a
// secret: a scratch broker on loopback for the length of a benchmark.
const (
	benchUser     = "bench"
	benchPassword = "bench-secret"
	storePassword = "bench-store-secret"
)

func usesTLS(proto string) bool  { return proto == protoSSL || proto == protoSASLSSL }
func usesSASL(proto string) bool { return proto == protoSASLPlaintext || proto == protoSASLSSL }

func validProtocol(proto string) bool {
	switch proto {
	case protoPlaintext, protoSSL, protoSASLPlaintext, protoSASLSSL:
		return true
	}
	return false
}

func validMechanism(m string) bool { return m == mechScram512 || m == mechScram256 || m == mechPlain }

// scenarioSeeds are the bootstrap brokers of s against brokers given by
// address (the run command): the first as s's listener key.
func scenarioSeeds(brokers []string, s Scenario) []string {
	if !s.secured() || len(brokers) == 0 {
		return brokers
	}
	return append([]string{listenerKey(brokers[0], s.mechanism())}, brokers[1:]...)
}

// listenerOpts holds the client options of each secured listener, by its
// key (listenerKey: the address, and the SASL mechanism after a #): every
// client the harness makes for such a key (baseOpts) dials the address as
// its listener wants, without threading security through every call.
var listenerOpts sync.Map // "host:port[#MECHANISM]" -> []kgo.Opt

func registerListener(key string, opts []kgo.Opt) { listenerOpts.Store(key, opts) }

// securityOpts are the client options registered for key, if any.
func securityOpts(key string) []kgo.Opt {
	if v, ok := listenerOpts.Load(key); ok {
		return v.([]kgo.Opt)
	}
	return nil
}

// clientSecurity builds the options of a client of a proto listener:
// TLS trusting roots (nil: the system's), SASL with mechanism as user.
func clientSecurity(proto, mechanism string, roots *x509.CertPool, user, password string) ([]kgo.Opt, error) {
	var opts []kgo.Opt
	if usesTLS(proto) {
		// ServerName is left empty: franz-go sets it to the dialed host,
		// and the bench certificate holds IP:127.0.0.1.
		opts = append(opts, kgo.DialTLSConfig(&tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}))
	}
	if usesSASL(proto) {
		m, err := saslMechanism(mechanism, user, password)
		if err != nil {
			return nil, err
		}
		opts = append(opts, kgo.SASL(m))
	}
	return opts, nil
}

func saslMechanism(mechanism, user, password string) (sasl.Mechanism, error) {
	switch mechanism {
	case mechScram512:
		return scram.Auth{User: user, Pass: password}.AsSha512Mechanism(), nil
	case mechScram256:
		return scram.Auth{User: user, Pass: password}.AsSha256Mechanism(), nil
	case mechPlain:
		return plain.Auth{User: user, Pass: password}.AsMechanism(), nil
	}
	return nil, fmt.Errorf("sasl mechanism %q: want SCRAM-SHA-512, SCRAM-SHA-256 or PLAIN", mechanism)
}

// pki is the bench's certificate authority and the broker's keystore in
// each format a broker may be told to read (same key, same chain).
type pki struct {
	dir      string
	caPEM    string // the CA certificate: the clients' trust
	p12      string // PKCS12 keystore (openssl pkcs12 -export), password storePassword
	jks      string // JKS keystore (keytool -importkeystore), password storePassword
	pem      string // PEM keystore: unencrypted PKCS#8 key, then the chain
	roots    *x509.CertPool
	storeTyp string // which one the brokers get: PKCS12 (default), JKS or PEM
	// cipherSuites, when set, is every TLS listener's ssl.cipher.suites
	// (e.g. TLS_AES_128_GCM_SHA256, what Go's client and server pick, where
	// Kafka's JSSE picks TLS_AES_256_GCM_SHA384 by default).
	cipherSuites string
}

// newPKI generates into dir, with the openssl CLI and keytool, a CA and a
// broker certificate for 127.0.0.1 and localhost signed by it (RSA 2048,
// as Kafka's security guide makes them), and the keystores.
func newPKI(dir, storeType string) (*pki, error) {
	storeType = strings.ToUpper(storeType)
	if storeType == "" {
		storeType = "PKCS12"
	}
	if storeType != "PKCS12" && storeType != "JKS" && storeType != "PEM" {
		return nil, fmt.Errorf("keystore type %q: want PKCS12, JKS or PEM", storeType)
	}
	for _, tool := range []string{"openssl", "keytool"} {
		if _, err := exec.LookPath(tool); err != nil {
			return nil, fmt.Errorf("secured scenarios need %s to make their certificates (apt-get install openssl openjdk-17-jre-headless): %w", tool, err)
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	p := &pki{dir: dir, storeTyp: storeType,
		caPEM: filepath.Join(dir, "ca.pem"), p12: filepath.Join(dir, "broker.p12"),
		jks: filepath.Join(dir, "broker.jks"), pem: filepath.Join(dir, "broker-keystore.pem")}
	f := func(name string) string { return filepath.Join(dir, name) }
	ext := "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\n" +
		"extendedKeyUsage=serverAuth,clientAuth\nsubjectAltName=IP:127.0.0.1,DNS:localhost\n"
	if err := os.WriteFile(f("broker.ext"), []byte(ext), 0o600); err != nil {
		return nil, err
	}
	steps := [][]string{
		{"openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", f("ca.key"), "-out", p.caPEM,
			"-days", "30", "-subj", "/CN=strait-bench CA",
			"-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign"},
		{"openssl", "req", "-newkey", "rsa:2048", "-nodes", "-keyout", f("broker.key"), "-out", f("broker.csr"),
			"-subj", "/CN=localhost"},
		{"openssl", "x509", "-req", "-in", f("broker.csr"), "-CA", p.caPEM, "-CAkey", f("ca.key"),
			"-CAcreateserial", "-out", f("broker.pem"), "-days", "30", "-sha256", "-extfile", f("broker.ext")},
		{"openssl", "pkcs12", "-export", "-in", f("broker.pem"), "-certfile", p.caPEM, "-inkey", f("broker.key"),
			"-name", "broker", "-out", p.p12, "-passout", "pass:" + storePassword},
		// keytool reads openssl's PKCS12 (what the JVM broker will do) and
		// writes the JKS form of the same entry.
		{"keytool", "-importkeystore", "-noprompt", "-srckeystore", p.p12, "-srcstoretype", "PKCS12",
			"-srcstorepass", storePassword, "-destkeystore", p.jks, "-deststoretype", "JKS",
			"-deststorepass", storePassword, "-destkeypass", storePassword},
	}
	for _, s := range steps {
		cmd := exec.Command(s[0], s[1:]...)
		if out, err := cmd.CombinedOutput(); err != nil {
			// The arguments hold only the scratch store's fixed password.
			return nil, fmt.Errorf("%s %s: %v: %s", s[0], s[1], err, strings.TrimSpace(string(out)))
		}
	}
	key, err := os.ReadFile(f("broker.key"))
	if err != nil {
		return nil, err
	}
	if !strings.Contains(string(key), "BEGIN PRIVATE KEY") {
		return nil, errors.New("openssl wrote the broker key in another form than unencrypted PKCS#8")
	}
	cert, err := os.ReadFile(f("broker.pem"))
	if err != nil {
		return nil, err
	}
	ca, err := os.ReadFile(p.caPEM)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(p.pem, slices.Concat(key, cert, ca), 0o600); err != nil {
		return nil, err
	}
	p.roots = x509.NewCertPool()
	if !p.roots.AppendCertsFromPEM(ca) {
		return nil, errors.New("the generated CA certificate does not parse")
	}
	return p, nil
}

// keystore is the location and type of the keystore the brokers get.
func (p *pki) keystore() (location, typ string) {
	switch p.storeTyp {
	case "JKS":
		return p.jks, "JKS"
	case "PEM":
		return p.pem, "PEM"
	}
	return p.p12, "PKCS12"
}

// brokerProperties are the security settings of listeners named after
// protos (SSL, SASL_SSL, ...) with the SASL mechanisms mechs enabled, as
// Kafka's keys, one key=value a line: the same file for Kafka (appended to
// its server.properties) and Strait.
func (p *pki) brokerProperties(protos, mechs []string) string {
	var b strings.Builder
	w := func(k, v string) { fmt.Fprintf(&b, "%s=%s\n", k, v) }
	loc, typ := p.keystore()
	for _, proto := range protos {
		l := "listener.name." + strings.ToLower(proto) + "."
		if usesTLS(proto) {
			w(l+"ssl.keystore.type", typ)
			w(l+"ssl.keystore.location", loc)
			if typ != "PEM" { // the PEM store's key is not encrypted
				w(l+"ssl.keystore.password", storePassword)
				w(l+"ssl.key.password", storePassword)
			}
			w(l+"ssl.client.auth", "none")
			if p.cipherSuites != "" {
				w(l+"ssl.cipher.suites", p.cipherSuites)
			}
		}
		if usesSASL(proto) {
			w(l+"sasl.enabled.mechanisms", strings.Join(mechs, ","))
			for _, m := range mechs {
				jaas := "org.apache.kafka.common.security.scram.ScramLoginModule required;"
				if m == mechPlain {
					jaas = fmt.Sprintf("org.apache.kafka.common.security.plain.PlainLoginModule required user_%s=\"%s\";", benchUser, benchPassword)
				}
				w(l+strings.ToLower(m)+".sasl.jaas.config", jaas)
			}
		}
	}
	return b.String()
}

// setupSecured makes the SCRAM users through the plaintext listener, then
// registers every secured listener's client options and waits until each
// serves Metadata to an authenticated client (Kafka applies SCRAM
// credentials from its metadata log a moment after the alter returns).
// It returns the TLS version and cipher suite each TLS listener negotiated
// with Go's client.
func (p *process) setupSecured(ctx context.Context, pk *pki, mechanisms []string) (map[string]string, error) {
	if len(p.listeners) == 0 {
		return nil, nil
	}
	var saslListener bool
	for proto := range p.listeners {
		saslListener = saslListener || usesSASL(proto)
	}
	if saslListener {
		// One request per mechanism: Kafka refuses a user named twice in
		// one request (DUPLICATE_RESOURCE), whatever the mechanisms.
		for _, m := range mechanisms {
			var mech kadm.ScramMechanism
			switch m {
			case mechScram512:
				mech = kadm.ScramSha512
			case mechScram256:
				mech = kadm.ScramSha256
			default:
				continue
			}
			adm := kadm.NewClient(mustClient([]string{p.addr}))
			res, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: benchUser, Mechanism: mech, Iterations: 4096, Password: benchPassword}})
			adm.Close()
			if err == nil {
				err = res.Error()
			}
			if err != nil {
				return nil, fmt.Errorf("AlterUserScramCredentials %s for %s: %w", m, benchUser, err)
			}
		}
	}
	tlsInfo := map[string]string{}
	for proto, addr := range p.listeners {
		if usesTLS(proto) {
			info, err := tlsProbe(addr, pk.roots)
			if err != nil {
				return nil, fmt.Errorf("%s listener %s: %w", proto, addr, err)
			}
			tlsInfo[proto] = info
		}
		mechs := []string{""}
		if usesSASL(proto) {
			mechs = mechanisms
		}
		for _, m := range mechs {
			opts, err := clientSecurity(proto, m, pk.roots, benchUser, benchPassword)
			if err != nil {
				return nil, err
			}
			registerListener(listenerKey(addr, m), opts)
			if err := waitAuthenticated(ctx, listenerKey(addr, m), 30*time.Second); err != nil {
				return nil, fmt.Errorf("%s listener %s (%s): %w", proto, addr, m, err)
			}
		}
	}
	return tlsInfo, nil
}

// listenerKey names a secured listener with one SASL mechanism: a scenario
// passes it as its broker address; baseOpts turns it back into the
// address and the options (the seed broker among them).
func listenerKey(addr, mechanism string) string {
	if mechanism == "" {
		return addr
	}
	return addr + "#" + mechanism
}

// seedAddr is the dialable address of a listener key.
func seedAddr(key string) string {
	addr, _, _ := strings.Cut(key, "#")
	return addr
}

// waitAuthenticated retries a Metadata request over key's listener until it
// succeeds or limit passes.
func waitAuthenticated(ctx context.Context, key string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	var last error
	for {
		cl, err := kgo.NewClient(baseOpts([]string{key})...)
		if err != nil {
			return err
		}
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, last = kadm.NewClient(cl).BrokerMetadata(pctx)
		cancel()
		cl.Close()
		if last == nil {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("no authenticated Metadata within %v: %w", limit, last)
		}
		sleepCtx(ctx, 200*time.Millisecond)
	}
}

// tlsProbe handshakes with addr and names what was negotiated, e.g.
// "TLS 1.3 TLS_AES_128_GCM_SHA256".
func tlsProbe(addr string, roots *x509.CertPool) (string, error) {
	host, _, _ := strings.Cut(addr, ":")
	d := &tls.Dialer{Config: &tls.Config{RootCAs: roots, ServerName: host, MinVersion: tls.VersionTLS12}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", err
	}
	defer c.Close()
	st := c.(*tls.Conn).ConnectionState()
	return tls.VersionName(st.Version) + " " + tls.CipherSuiteName(st.CipherSuite), nil
}

// scenarioAddr is the broker address s's clients use: the plaintext
// listener, or the listener key of s's secured listener and mechanism;
// "" when the broker has no such listener (kfake).
func (p *process) scenarioAddr(s Scenario) string {
	proto := s.protocol()
	if proto == protoPlaintext {
		return p.addr
	}
	addr := p.listeners[proto]
	if addr == "" {
		return ""
	}
	return listenerKey(addr, s.mechanism())
}

// securedNeeds lists the secured protocols and SASL mechanisms scenarios
// use, in a stable order.
func securedNeeds(scenarios []Scenario) (protocols, mechanisms []string) {
	for _, s := range scenarios {
		if p := s.protocol(); p != protoPlaintext && !slices.Contains(protocols, p) {
			protocols = append(protocols, p)
		}
		if m := s.mechanism(); m != "" && !slices.Contains(mechanisms, m) {
			mechanisms = append(mechanisms, m)
		}
	}
	slices.Sort(protocols)
	slices.Sort(mechanisms)
	return protocols, mechanisms
}

// twins maps each secured scenario's index to its plaintext twin's (same
// parameters but the listener), for those that have one among scenarios.
func twins(scenarios []Scenario) map[int]int {
	out := map[int]int{}
	for i, s := range scenarios {
		if !s.secured() {
			continue
		}
		for j, t := range scenarios {
			if !t.secured() && reflect.DeepEqual(s.twinKey(), t.twinKey()) {
				out[i] = j
				break
			}
		}
	}
	return out
}

// registerRunSecurity registers the client options of the run command's
// secured scenarios against addr: TLS trusting caFile, SASL as user.
func registerRunSecurity(addr string, scenarios []Scenario, caFile, user, password string) error {
	if password == "" {
		password = os.Getenv("STRAIT_BENCH_SASL_PASSWORD")
	}
	var roots *x509.CertPool
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return err
		}
		roots = x509.NewCertPool()
		if !roots.AppendCertsFromPEM(pem) {
			return fmt.Errorf("-tls-ca %s: no PEM certificate in it", caFile)
		}
	}
	protos := map[string]bool{}
	for _, s := range scenarios {
		protos[s.protocol()] = true
	}
	if len(protos) > 1 {
		return fmt.Errorf("-brokers is one listener: every scenario must use the same security protocol, not %v", slices.Sorted(maps.Keys(protos)))
	}
	for _, s := range scenarios {
		if err := s.validate(); err != nil {
			return err
		}
		if !s.secured() {
			continue
		}
		if usesSASL(s.protocol()) && user == "" {
			return fmt.Errorf("%s: %s needs -sasl-user and -sasl-password", s.Name, s.protocol())
		}
		opts, err := clientSecurity(s.protocol(), s.mechanism(), roots, user, password)
		if err != nil {
			return err
		}
		registerListener(listenerKey(addr, s.mechanism()), opts)
	}
	return nil
}

// ConnSetup is how long a new client takes on one listener from dial to its
// first Metadata answer: TCP connect, TLS handshake, SASL exchange (SCRAM
// is two round trips and the client's PBKDF2), ApiVersions, Metadata.
type ConnSetup struct {
	N     int     `json:"n"`
	P50Ms float64 `json:"p50_ms"`
	P99Ms float64 `json:"p99_ms"`
}

// connSetupWarmup connections go unmeasured: the JVM compiles its
// handshake code on the first ones.
const connSetupWarmup = 5

// measureConnSetup opens n clients on key's listener one after the other.
func measureConnSetup(ctx context.Context, key string, n int) (ConnSetup, error) {
	var took []int64
	for i := range connSetupWarmup + n {
		start := time.Now()
		cl, err := kgo.NewClient(baseOpts([]string{key})...)
		if err != nil {
			return ConnSetup{}, err
		}
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		_, err = kadm.NewClient(cl).BrokerMetadata(pctx)
		d := time.Since(start)
		cancel()
		cl.Close()
		if err != nil {
			return ConnSetup{}, err
		}
		if i >= connSetupWarmup {
			took = append(took, int64(d))
		}
	}
	slices.Sort(took)
	return ConnSetup{N: n, P50Ms: pct(took, 0.5), P99Ms: pct(took, 0.99)}, nil
}

// connSetupLabels are the listeners the scenarios use, plaintext first, as
// "PLAINTEXT", "SSL", "SASL_SSL/SCRAM-SHA-512".
func connSetupLabels(scenarios []Scenario) []string {
	out := []string{protoPlaintext}
	for _, s := range scenarios {
		l := s.protocol()
		if m := s.mechanism(); m != "" {
			l += "/" + m
		}
		if !slices.Contains(out, l) {
			out = append(out, l)
		}
	}
	return out
}

// labelScenario is a scenario on the listener a connSetupLabels label names.
func labelScenario(label string) Scenario {
	proto, mech, _ := strings.Cut(label, "/")
	return Scenario{Security: proto, SASLMechanism: mech}
}
