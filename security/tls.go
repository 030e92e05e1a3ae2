package security

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/strait/strait/config"
)

// ServerTLS is a listener's TLS server configuration. Reload swaps the
// keystore and truststore in place (a dynamic ssl.* update), and new
// handshakes take the new ones (Config's GetConfigForClient).
type ServerTLS struct {
	reload  sync.Mutex // one Reload compares and swaps at a time
	mapper  *principalMapper
	current atomic.Pointer[tls.Config]
	outer   *tls.Config
}

// NewServerTLS builds a listener's TLS configuration from its settings,
// loading the keystore and truststore. The error is a *config.ConfigError
// naming the key at fault.
func NewServerTLS(t *config.TLS) (*ServerTLS, error) {
	cfg, err := serverConfig(t)
	if err != nil {
		return nil, err
	}
	m, err := newPrincipalMapper(t)
	if err != nil {
		return nil, err
	}
	s := &ServerTLS{mapper: m}
	s.current.Store(cfg)
	s.outer = &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			return s.current.Load(), nil
		},
	}
	return s, nil
}

// Config is the *tls.Config to give tls.Server.
func (s *ServerTLS) Config() *tls.Config { return s.outer }

// Reload loads t's keystore and truststore and uses them for new
// connections; on error nothing changes. (ssl.principal.mapping.rules is
// not dynamic in Kafka and keeps its value.)
func (s *ServerTLS) Reload(t *config.TLS) error {
	s.reload.Lock()
	defer s.reload.Unlock()
	cfg, err := s.check(t)
	if err != nil {
		return err
	}
	s.current.Store(cfg)
	return nil
}

// CheckReload is Reload without the swap: whether t's stores load and may
// replace the current ones (AlterConfigs checks it before storing a
// dynamic ssl.* update, as Kafka validates one).
func (s *ServerTLS) CheckReload(t *config.TLS) error {
	s.reload.Lock()
	defer s.reload.Unlock()
	_, err := s.check(t)
	return err
}

// check loads t's configuration and checks it against the current one;
// the caller holds reload.
func (s *ServerTLS) check(t *config.TLS) (*tls.Config, error) {
	cfg, err := serverConfig(t)
	if err != nil {
		return nil, err
	}
	if err := compatibleCertificate(t, s.current.Load().Certificates[0].Leaf, cfg.Certificates[0].Leaf); err != nil {
		return nil, err
	}
	return cfg, nil
}

// compatibleCertificate is Kafka's check of a reloaded key store
// (SslFactory.CertificateEntries.ensureCompatible): unless
// ssl.allow.dn.changes, the subject stays the same, and unless
// ssl.allow.san.changes, every subject alternative name stays.
func compatibleCertificate(t *config.TLS, old, next *x509.Certificate) error {
	k := t.Key("ssl.keystore.location")
	if !t.AllowDNChanges {
		o, _ := distinguishedName(old)
		n, _ := distinguishedName(next)
		if !strings.EqualFold(o, n) {
			return &config.ConfigError{Key: k, Message: "Validation of dynamic config update of SSLFactory failed: " +
				"Keystore DistinguishedName does not match:  existing={DN=" + o + "}, new={DN=" + n + "}"}
		}
	}
	if !t.AllowSANChanges {
		have := map[string]bool{}
		for _, n := range sanList(next) {
			have[n] = true
		}
		for _, n := range sanList(old) {
			if !have[n] {
				return &config.ConfigError{Key: k, Message: "Validation of dynamic config update of SSLFactory failed: " +
					"Keystore SubjectAltNames do not match:  existing={SAN=" + strings.Join(sanList(old), ",") +
					"}, new={SAN=" + strings.Join(sanList(next), ",") + "}"}
			}
		}
	}
	return nil
}

func sanList(c *x509.Certificate) []string {
	var out []string
	for _, n := range c.DNSNames {
		out = append(out, "DNS:"+n)
	}
	for _, ip := range c.IPAddresses {
		out = append(out, "IP:"+ip.String())
	}
	for _, e := range c.EmailAddresses {
		out = append(out, "email:"+e)
	}
	for _, u := range c.URIs {
		out = append(out, "URI:"+u.String())
	}
	return out
}

// Principal is the principal of a connection whose handshake gave state:
// the client certificate's subject mapped by ssl.principal.mapping.rules,
// or Anonymous without a client certificate. A name that matches no rule
// is an error, and the connection is refused (Kafka fails the
// authentication rather than let the client in as ANONYMOUS).
func (s *ServerTLS) Principal(state tls.ConnectionState) (Principal, error) {
	if len(state.PeerCertificates) == 0 || len(state.VerifiedChains) == 0 {
		return Anonymous, nil
	}
	dn, err := distinguishedName(state.PeerCertificates[0])
	if err != nil {
		return Anonymous, err
	}
	name, err := s.mapper.name(dn)
	if err != nil {
		return Anonymous, err
	}
	return User(name), nil
}

// ClientTLS is the *tls.Config this broker uses to reach another broker's
// listener with settings t (its truststore, and its keystore for mTLS).
// An empty ssl.endpoint.identification.algorithm verifies the chain but not
// the host name.
func ClientTLS(t *config.TLS, serverName string) (*tls.Config, error) {
	if t == nil {
		return nil, &config.ConfigError{Key: "ssl.keystore.location", Message: "no TLS settings"}
	}
	cfg, err := common(t)
	if err != nil {
		return nil, err
	}
	cert, err := loadKeystore(t)
	if err != nil {
		return nil, err
	}
	if cert != nil {
		cfg.Certificates = []tls.Certificate{*cert}
	}
	roots, err := loadTruststore(t)
	if err != nil {
		return nil, err
	}
	// ssl.protocol=TLSv1.2 keeps a Java client from offering TLS 1.3.
	if t.Protocol == "TLSv1.2" && cfg.MaxVersion > tls.VersionTLS12 {
		if cfg.MinVersion > tls.VersionTLS12 {
			return nil, &config.ConfigError{Key: t.Key("ssl.protocol"),
				Message: "Invalid value TLSv1.2 for configuration " + t.Key("ssl.protocol") + ": ssl.enabled.protocols allows only TLSv1.3"}
		}
		cfg.MaxVersion = tls.VersionTLS12
	}
	cfg.RootCAs = roots
	cfg.ServerName = serverName
	if t.EndpointIdentificationAlgorithm == "" {
		// Go checks the host name with the chain; to check the chain
		// only, verify it here.
		cfg.InsecureSkipVerify = true
		cfg.VerifyConnection = func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("tls: the server sent no certificate")
			}
			opts := x509.VerifyOptions{Roots: roots, Intermediates: x509.NewCertPool(),
				KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
			for _, c := range cs.PeerCertificates[1:] {
				opts.Intermediates.AddCert(c)
			}
			_, err := cs.PeerCertificates[0].Verify(opts)
			return err
		}
	}
	return cfg, nil
}

// serverConfig is the full server configuration of one generation of
// stores.
func serverConfig(t *config.TLS) (*tls.Config, error) {
	if t == nil {
		return nil, &config.ConfigError{Key: "ssl.keystore.location", Message: "no TLS settings"}
	}
	cfg, err := common(t)
	if err != nil {
		return nil, err
	}
	cert, err := loadKeystore(t)
	if err != nil {
		return nil, err
	}
	if cert == nil {
		k := t.Key("ssl.keystore.location")
		return nil, &config.ConfigError{Key: k, Message: "An SSL listener needs a key store: " + k +
			" (or ssl.keystore.key and ssl.keystore.certificate.chain with ssl.keystore.type=PEM) is not set"}
	}
	cfg.Certificates = []tls.Certificate{*cert}
	if cfg.ClientCAs, err = loadTruststore(t); err != nil {
		return nil, err
	}
	switch t.ClientAuth {
	case "required":
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	case "requested":
		cfg.ClientAuth = tls.VerifyClientCertIfGiven
	case "none", "":
		cfg.ClientAuth = tls.NoClientCert
	default:
		k := t.Key("ssl.client.auth")
		return nil, &config.ConfigError{Key: k, Message: "Invalid value " + t.ClientAuth + " for configuration " + k +
			": String must be one of: required, requested, none"}
	}
	// Each handshake checks the client certificate against the current
	// trust store: a resumed session would skip that after a Reload.
	cfg.SessionTicketsDisabled = true
	return cfg, nil
}

// common is what servers and clients share: protocol versions and cipher
// suites.
func common(t *config.TLS) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, MaxVersion: tls.VersionTLS13}
	if len(t.EnabledProtocols) > 0 {
		cfg.MinVersion, cfg.MaxVersion = 0, 0
		for _, p := range t.EnabledProtocols {
			var v uint16
			switch p {
			case "TLSv1.2":
				v = tls.VersionTLS12
			case "TLSv1.3":
				v = tls.VersionTLS13
			default:
				k := t.Key("ssl.enabled.protocols")
				return nil, &config.ConfigError{Key: k, Message: "Invalid value " + p + " for configuration " + k +
					": Unsupported protocol " + p + " (Strait supports TLSv1.2, TLSv1.3)"}
			}
			if cfg.MinVersion == 0 || v < cfg.MinVersion {
				cfg.MinVersion = v
			}
			if v > cfg.MaxVersion {
				cfg.MaxVersion = v
			}
		}
	}
	if len(t.CipherSuites) == 0 {
		return cfg, nil
	}
	k := t.Key("ssl.cipher.suites")
	var tls12, tls13 bool
	for _, name := range t.CipherSuites {
		id, err := config.CipherSuiteID(name)
		if err != nil {
			return nil, &config.ConfigError{Key: k, Message: "Invalid value " + name + " for configuration " + k + ": " + err.Error()}
		}
		if id == 0 {
			continue
		}
		for _, s := range tls.CipherSuites() {
			if s.ID != id {
				continue
			}
			if slices.Contains(s.SupportedVersions, tls.VersionTLS13) {
				tls13 = true // Go always enables its TLS 1.3 suites
			} else {
				tls12 = true
				cfg.CipherSuites = append(cfg.CipherSuites, id)
			}
		}
	}
	// As in Java, a version none of the listed suites serves is not
	// negotiated.
	if !tls13 && cfg.MaxVersion == tls.VersionTLS13 {
		cfg.MaxVersion = tls.VersionTLS12
	}
	if !tls12 && cfg.MinVersion == tls.VersionTLS12 {
		cfg.MinVersion = tls.VersionTLS13
	}
	if cfg.MinVersion > cfg.MaxVersion || (!tls12 && !tls13) {
		return nil, &config.ConfigError{Key: k, Message: "Invalid value " + joinNames(t.CipherSuites) + " for configuration " + k +
			": no cipher suite is usable with the protocols of ssl.enabled.protocols"}
	}
	return cfg, nil
}

func joinNames(s []string) string { return strings.Join(s, ",") }
