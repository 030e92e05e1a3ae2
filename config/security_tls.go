package config

// TLS: the ssl.* settings of a listener.

import (
	"crypto/tls"
	"regexp"
	"strings"
)

// TLS is a listener's ssl.* settings, each the listener's own value or the
// broker-wide one.
type TLS struct {
	ClientAuth       string   // ssl.client.auth: none, requested, required
	Protocol         string   // ssl.protocol
	EnabledProtocols []string // ssl.enabled.protocols
	CipherSuites     []string // ssl.cipher.suites (empty: Go's defaults)

	KeystoreType             string   // ssl.keystore.type: JKS, PKCS12, PEM
	KeystoreLocation         string   // ssl.keystore.location
	KeystorePassword         Password // ssl.keystore.password
	KeyPassword              Password // ssl.key.password
	KeystoreKey              Password // ssl.keystore.key (PEM)
	KeystoreCertificateChain string   // ssl.keystore.certificate.chain (PEM)

	TruststoreType         string   // ssl.truststore.type
	TruststoreLocation     string   // ssl.truststore.location
	TruststorePassword     Password // ssl.truststore.password
	TruststoreCertificates string   // ssl.truststore.certificates (PEM)

	PrincipalMappingRules string // ssl.principal.mapping.rules
	// EndpointIdentificationAlgorithm is ssl.endpoint.identification.algorithm
	// (https): whether this broker, as a client of another, checks the
	// other's host name.
	EndpointIdentificationAlgorithm string

	// AllowDNChanges and AllowSANChanges are ssl.allow.dn.changes and
	// ssl.allow.san.changes: whether a reloaded key store may change the
	// certificate's subject, or drop subject alternative names.
	AllowDNChanges  bool
	AllowSANChanges bool

	// Keys maps each ssl.* key above to the key its value was read from
	// (listener.name.<l>.ssl.keystore.location, or ssl.keystore.location),
	// so that an error loading a store names the key to fix. A key absent
	// from it was read from itself (see Key).
	Keys map[string]string
}

// Key is the key the value of key (e.g. ssl.keystore.location) came from.
func (t *TLS) Key(key string) string {
	if k, ok := t.Keys[key]; ok {
		return k
	}
	return key
}

// The values Strait accepts; Kafka's are the JVM's, of which Go can honour
// these.
var (
	sslClientAuths = []string{"required", "requested", "none"} // SslClientAuth, as Utils.enumOptions lists it
	storeTypes     = []string{"JKS", "PKCS12", "PEM"}
	// tlsProtocols are the TLS versions Go implements and does not
	// consider broken: TLSv1 and TLSv1.1 are refused rather than silently
	// not offered.
	tlsProtocols = []string{"TLSv1.2", "TLSv1.3"}
)

// parseTLS reads listener's ssl.* settings, each its own value
// (listener.name.<l>.ssl.*) before the broker-wide one. protocol is the
// listener's security protocol: on a SASL_SSL listener the broker-wide
// ssl.client.auth does not apply, only the listener's own (KIP-684), as
// the client has SASL to authenticate.
func parseTLS(p *props, listener, protocol string) (*TLS, error) {
	t := &TLS{Keys: map[string]string{}}
	str := func(key string) string {
		k := p.listenerKey(listener, key)
		t.Keys[key] = k
		return p.str(k)
	}
	pw := func(key string) Password { return Password(str(key)) }

	if protocol == "SASL_SSL" {
		own := listenerPrefix(listener) + "ssl.client.auth"
		t.Keys["ssl.client.auth"] = own
		t.ClientAuth = "none"
		if p.has(own) {
			t.ClientAuth = p.str(own)
		}
	} else {
		t.ClientAuth = str("ssl.client.auth")
	}
	if err := validIn(t.Key("ssl.client.auth"), t.ClientAuth, sslClientAuths...); err != nil {
		return nil, err
	}

	t.Protocol = str("ssl.protocol")
	if err := checkSSLProtocol(t.Key("ssl.protocol"), t.Protocol); err != nil {
		return nil, err
	}
	t.EnabledProtocols = parseList(str("ssl.enabled.protocols"))
	for _, v := range t.EnabledProtocols {
		if !contains(tlsProtocols, v) {
			return nil, invalidValue(t.Key("ssl.enabled.protocols"), v, unsupportedProtocol(v))
		}
	}
	t.CipherSuites = parseList(str("ssl.cipher.suites"))
	for _, name := range t.CipherSuites {
		if _, err := CipherSuiteID(name); err != nil {
			return nil, invalidValue(t.Key("ssl.cipher.suites"), name, err.Error())
		}
	}

	var err error
	if t.KeystoreType, err = storeType(t.Key, "ssl.keystore.type", str("ssl.keystore.type")); err != nil {
		return nil, err
	}
	t.KeystoreLocation = str("ssl.keystore.location")
	t.KeystorePassword = pw("ssl.keystore.password")
	t.KeyPassword = pw("ssl.key.password")
	t.KeystoreKey = pw("ssl.keystore.key")
	t.KeystoreCertificateChain = str("ssl.keystore.certificate.chain")

	if t.TruststoreType, err = storeType(t.Key, "ssl.truststore.type", str("ssl.truststore.type")); err != nil {
		return nil, err
	}
	t.TruststoreLocation = str("ssl.truststore.location")
	t.TruststorePassword = pw("ssl.truststore.password")
	t.TruststoreCertificates = str("ssl.truststore.certificates")

	t.PrincipalMappingRules = str("ssl.principal.mapping.rules")
	if err := CheckPrincipalMappingRules(t.Key("ssl.principal.mapping.rules"), t.PrincipalMappingRules); err != nil {
		return nil, err
	}
	t.EndpointIdentificationAlgorithm = str("ssl.endpoint.identification.algorithm")
	if a := t.EndpointIdentificationAlgorithm; a != "" && !strings.EqualFold(a, "https") {
		return nil, invalidValue(t.Key("ssl.endpoint.identification.algorithm"), a,
			"Unknown identification algorithm (only https, or empty to disable host name verification)")
	}
	for _, b := range []struct {
		key string
		v   *bool
	}{{"ssl.allow.dn.changes", &t.AllowDNChanges}, {"ssl.allow.san.changes", &t.AllowSANChanges}} {
		k := p.listenerKey(listener, b.key)
		t.Keys[b.key] = k
		if err := checkType(k, p.raw(k), typeBoolean); err != nil {
			return nil, err
		}
		*b.v = p.bool(k)
	}
	return t, nil
}

func contains(list []string, v string) bool {
	for _, e := range list {
		if e == v {
			return true
		}
	}
	return false
}

// storeType is a key store type, upper case (Java's KeyStore.getInstance
// ignores case).
func storeType(keyOf func(string) string, key, v string) (string, error) {
	up := strings.ToUpper(v)
	if !contains(storeTypes, up) {
		return "", invalidValue(keyOf(key), v, "String must be one of: "+strings.Join(storeTypes, ", "))
	}
	return up, nil
}

// checkSSLProtocol: ssl.protocol names the SSLContext; TLS (any version)
// and the two Go implements are accepted.
func checkSSLProtocol(key, v string) error {
	switch v {
	case "TLS", "TLSv1.2", "TLSv1.3":
		return nil
	case "TLSv1", "TLSv1.1", "SSL", "SSLv3":
		return invalidValue(key, v, unsupportedProtocol(v))
	}
	return invalidValue(key, v, v+" SSLContext not available")
}

func unsupportedProtocol(v string) string {
	return "Unsupported protocol " + v + " (Strait supports " + strings.Join(tlsProtocols, ", ") + ")"
}

// CipherSuiteID is the crypto/tls ID of the cipher suite Java and IANA
// name name (they are the names Go uses). Java's signalling pseudo suite
// TLS_EMPTY_RENEGOTIATION_INFO_SCSV gives 0 (nothing to enable). Suites Go
// considers insecure are refused.
func CipherSuiteID(name string) (uint16, error) {
	if name == "TLS_EMPTY_RENEGOTIATION_INFO_SCSV" {
		return 0, nil
	}
	for _, s := range tls.CipherSuites() {
		if s.Name == name {
			return s.ID, nil
		}
	}
	for _, s := range tls.InsecureCipherSuites() {
		if s.Name == name {
			return 0, &ConfigError{Message: "Insecure CipherSuite: " + name + " is not supported"}
		}
	}
	return 0, &ConfigError{Message: "Unsupported CipherSuite: " + name}
}

// Kafka's SslPrincipalMapper rule grammar: DEFAULT, or
// RULE:pattern/replacement/[LU], separated by commas.
const principalRulePattern = `(DEFAULT)|RULE:((?:\\.|[^\\/])*)/((?:\\.|[^\\/])*)/([LU]?).*?|(.*?)`

var (
	principalRuleSplitter = regexp.MustCompile(`\s*(` + principalRulePattern + `)\s*(?:,\s*|$)`)
	principalRuleParser   = regexp.MustCompile(`^(?:` + principalRulePattern + `)`)
)

// PrincipalMappingRule is one parsed rule of ssl.principal.mapping.rules.
type PrincipalMappingRule struct {
	Default bool
	// Whole is Pattern anchored: a rule applies when it matches the whole
	// distinguished name; the replacement then applies to each match of
	// Pattern, as Java's String.replaceAll does.
	Pattern, Whole *regexp.Regexp
	Replacement    string // Java's replacement syntax ($1, \$)
	Lower          bool   // /L
	Upper          bool   // /U
}

// ParsePrincipalMappingRules parses ssl.principal.mapping.rules as
// Kafka's SslPrincipalMapper does; the error is a *ConfigError naming key.
func ParsePrincipalMappingRules(key, rules string) ([]PrincipalMappingRule, error) {
	var out []PrincipalMappingRule
	s := strings.TrimSpace(rules)
	for _, m := range principalRuleSplitter.FindAllStringSubmatch(s, -1) {
		rule := m[1]
		loc := principalRuleParser.FindStringSubmatchIndex(rule)
		if loc == nil {
			return nil, invalidValue(key, rules, "Invalid rule: "+rule)
		}
		if loc[1] != len(rule) {
			return nil, invalidValue(key, rules, "Invalid rule: `"+rule+"`, unmatched substring: `"+rule[loc[1]:]+"`")
		}
		group := func(i int) (string, bool) {
			if loc[2*i] < 0 {
				return "", false
			}
			return rule[loc[2*i]:loc[2*i+1]], true
		}
		if _, ok := group(1); ok {
			out = append(out, PrincipalMappingRule{Default: true})
			continue
		}
		pat, ok := group(2)
		if !ok {
			continue // empty rules are ignored
		}
		repl, _ := group(3)
		flag, _ := group(4)
		re, err := regexp.Compile(pat)
		if err != nil {
			return nil, invalidValue(key, rules, "Invalid rule: "+rule+": "+err.Error())
		}
		whole := regexp.MustCompile("^(?:" + pat + ")$")
		out = append(out, PrincipalMappingRule{Pattern: re, Whole: whole, Replacement: repl, Lower: flag == "L", Upper: flag == "U"})
	}
	return out, nil
}

// CheckPrincipalMappingRules reports whether rules parse.
func CheckPrincipalMappingRules(key, rules string) error {
	_, err := ParsePrincipalMappingRules(key, rules)
	return err
}

// String is the rule as Kafka's SslPrincipalMapper.Rule writes it.
func (r PrincipalMappingRule) String() string {
	if r.Default {
		return "DEFAULT"
	}
	s := "RULE:" + r.Pattern.String() + "/" + r.Replacement
	if r.Lower {
		s += "/L"
	} else if r.Upper {
		s += "/U"
	}
	return s
}
