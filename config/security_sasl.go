package config

// SASL: the sasl.* settings of a listener, read as Kafka's SaslChannelBuilder
// and JaasContext.loadServerContext read them.

import (
	"fmt"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The SASL mechanisms Strait can serve (GSSAPI needs Kerberos, which it has not).
var saslMechanisms = []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"}

// The login module each mechanism's JAAS config must name.
var saslLoginModules = map[string]string{
	"PLAIN":         "org.apache.kafka.common.security.plain.PlainLoginModule",
	"SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
	"SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
	"OAUTHBEARER":   "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule",
}

// OAuthBearerJWTValidator is the callback handler class that validates
// OAUTHBEARER tokens as JWTs against a JWKS.
const OAuthBearerJWTValidator = "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"

// SASL is a listener's sasl.* settings.
type SASL struct {
	// EnabledMechanisms is sasl.enabled.mechanisms (Kafka's default GSSAPI).
	EnabledMechanisms []string
	// JAAS is each enabled mechanism's JAAS configuration, by mechanism
	// (listener.name.<l>.<mechanism>.sasl.jaas.config).
	JAAS map[string]JAAS
	// MaxReauth is connections.max.reauth.ms (0: no re-authentication).
	MaxReauth time.Duration
	// MechanismMaxReauth are the mechanisms whose own
	// listener.name.<l>.<mechanism>.connections.max.reauth.ms overrides
	// MaxReauth; ReauthFor picks.
	MechanismMaxReauth map[string]time.Duration
	// MaxReceiveSize is sasl.server.max.receive.size: the largest frame
	// read before the client has authenticated.
	MaxReceiveSize int32
	// OAuth is the OAUTHBEARER validation settings (sasl.oauthbearer.*).
	OAuth OAuthBearer
}

// ReauthFor is connections.max.reauth.ms for mechanism (0: off).
func (s *SASL) ReauthFor(mechanism string) time.Duration {
	if d, ok := s.MechanismMaxReauth[mechanism]; ok {
		return d
	}
	return s.MaxReauth
}

// JAAS is one parsed JAAS configuration entry:
// LoginModule flag key="value" ...;
type JAAS struct {
	LoginModule string
	Flag        string
	Options     map[string]Password // values are secrets (passwords, user_<name>)
}

// OAuthBearer is how OAUTHBEARER tokens are validated.
type OAuthBearer struct {
	// Unsecured is Kafka's OAuthBearerUnsecuredValidatorCallbackHandler
	// (the default, for development); otherwise tokens are JWTs checked
	// against JWKSURL.
	Unsecured bool
	JWKSURL   string // sasl.oauthbearer.jwks.endpoint.url
	// The claims checked (sasl.oauthbearer.expected.audience, ...issuer,
	// ...scope.claim.name, ...sub.claim.name, ...clock.skew.seconds).
	ExpectedAudience []string
	ExpectedIssuer   string
	ScopeClaimName   string
	SubClaimName     string
	ClockSkew        time.Duration
}

// parseSASL reads listener's sasl.* settings.
func parseSASL(p *props, listener string) (*SASL, error) {
	s := &SASL{JAAS: map[string]JAAS{}, MechanismMaxReauth: map[string]time.Duration{}}
	prefix := listenerPrefix(listener)

	mechKey := p.listenerKey(listener, "sasl.enabled.mechanisms")
	raw := p.str(mechKey)
	s.EnabledMechanisms = parseCsvList(raw)
	if len(s.EnabledMechanisms) == 0 {
		return nil, invalidValue(mechKey, raw, "SASL listener "+listener+" has no SASL mechanism enabled")
	}
	for _, m := range s.EnabledMechanisms {
		if !slices.Contains(saslMechanisms, m) {
			return nil, invalidValue(mechKey, raw, "Strait supports only the SASL mechanisms "+
				strings.Join(saslMechanisms, ", ")+"; "+m+" cannot be enabled")
		}
	}

	reauthKey := p.listenerKey(listener, "connections.max.reauth.ms")
	s.MaxReauth = reauthDuration(p.long(reauthKey))
	s.MaxReceiveSize = p.intAtLeast(p.listenerKey(listener, "sasl.server.max.receive.size"), 1)

	for _, m := range s.EnabledMechanisms {
		lower := strings.ToLower(m)
		if k := prefix + lower + ".connections.max.reauth.ms"; p.has(k) {
			s.MechanismMaxReauth[m] = reauthDuration(p.long(k))
		}
		j, err := parseMechanismJAAS(p, listener, m)
		if err != nil {
			return nil, err
		}
		s.JAAS[m] = j
		handlerKey := prefix + lower + ".sasl.server.callback.handler.class"
		handler := ""
		if p.has(handlerKey) {
			handler = p.str(handlerKey)
		}
		if m == "OAUTHBEARER" {
			if handler != "" && handler != OAuthBearerJWTValidator {
				return nil, invalidValue(handlerKey, handler, "Strait cannot load classes: the OAUTHBEARER validator is either the default unsecured one or "+OAuthBearerJWTValidator)
			}
			o, err := parseOAuthBearer(p, listener, handler == "")
			if err != nil {
				return nil, err
			}
			// Kafka reads this option at each validation; a bad one fails every login.
			if skew := strings.TrimSpace(j.Options["unsecuredValidatorAllowableClockSkewMs"].Reveal()); o.Unsecured && skew != "" {
				if n, err := strconv.Atoi(skew); err != nil || n < 0 {
					key := prefix + lower + ".sasl.jaas.config"
					return nil, &ConfigError{Key: key, Message: "Invalid value [hidden] for configuration " + key +
						": Allowable clock skew millis must not be negative: unsecuredValidatorAllowableClockSkewMs=" + skew}
				}
			}
			s.OAuth = o
		} else if handler != "" {
			return nil, invalidValue(handlerKey, handler, "Strait cannot load classes: "+m+" uses its built-in server callback handler")
		}
	}
	if p.err != nil {
		return nil, p.err
	}
	return s, nil
}

// reauthDuration is connections.max.reauth.ms: 0 or less is off.
func reauthDuration(ms int64) time.Duration {
	if ms <= 0 {
		return 0
	}
	return time.Duration(ms) * time.Millisecond
}

// parseMechanismJAAS reads listener.name.<l>.<mechanism>.sasl.jaas.config.
// Brokers read no other (JaasContext.loadServerContext ignores the
// broker-wide sasl.jaas.config), and JAAS files given by the JVM's
// java.security.auth.login.config have no equivalent in Strait.
func parseMechanismJAAS(p *props, listener, mechanism string) (JAAS, error) {
	key := listenerPrefix(listener) + strings.ToLower(mechanism) + ".sasl.jaas.config"
	if !p.has(key) {
		msg := "Could not find a 'KafkaServer' or '" + strings.ToLower(listener) + ".KafkaServer' entry in the JAAS configuration. " +
			"System property 'java.security.auth.login.config' is not set: Strait reads JAAS only from " + key
		if p.has("sasl.jaas.config") {
			msg += " (the broker-wide sasl.jaas.config is ignored: server configs must be prefixed with the listener and SASL mechanism name)"
		}
		return JAAS{}, &ConfigError{Key: key, Message: msg}
	}
	entries, err := ParseJAAS(p.raw(key))
	if err != nil {
		return JAAS{}, &ConfigError{Key: key, Message: "Invalid value [hidden] for configuration " + key + ": " + err.Error()}
	}
	switch {
	case len(entries) != 1:
		return JAAS{}, &ConfigError{Key: key, Message: "Invalid value [hidden] for configuration " + key +
			": JAAS config property contains " + strconv.Itoa(len(entries)) + " login modules, should be 1 module"}
	case entries[0].LoginModule != saslLoginModules[mechanism]:
		return JAAS{}, &ConfigError{Key: key, Message: "Invalid value [hidden] for configuration " + key +
			": login module " + entries[0].LoginModule + " is not " + saslLoginModules[mechanism] +
			" (Strait cannot load classes; " + mechanism + " needs that module)"}
	}
	return entries[0], nil
}

// parseOAuthBearer reads the sasl.oauthbearer.* server settings.
func parseOAuthBearer(p *props, listener string, unsecured bool) (OAuthBearer, error) {
	o := OAuthBearer{Unsecured: unsecured}
	lk := func(key string) string { return p.listenerKey(listener, key) }
	skewKey := lk("sasl.oauthbearer.clock.skew.seconds")
	o.ClockSkew = time.Duration(p.intAtLeast(skewKey, 0)) * time.Second
	o.ScopeClaimName = p.str(lk("sasl.oauthbearer.scope.claim.name"))
	o.SubClaimName = p.str(lk("sasl.oauthbearer.sub.claim.name"))
	o.ExpectedAudience = parseCsvList(p.str(lk("sasl.oauthbearer.expected.audience")))
	o.ExpectedIssuer = p.str(lk("sasl.oauthbearer.expected.issuer"))
	if p.err != nil || unsecured {
		return o, p.err
	}
	urlKey := lk("sasl.oauthbearer.jwks.endpoint.url")
	o.JWKSURL = p.str(urlKey)
	if o.JWKSURL == "" {
		return o, &ConfigError{Key: urlKey, Message: "The OAuth configuration option " + urlKey + " value must be non-null"}
	}
	u, err := url.Parse(o.JWKSURL)
	if err != nil {
		return o, &ConfigError{Key: urlKey, Message: "The OAuth configuration option " + urlKey + " contains a URL (" + o.JWKSURL + ") that is malformed: " + err.Error()}
	}
	switch strings.ToLower(u.Scheme) {
	case "http", "https":
	case "file":
		if _, err := os.Stat(u.Path); err != nil {
			return o, &ConfigError{Key: urlKey, Message: "The OAuth configuration option " + urlKey + " contains a file (" + u.Path + ") that doesn't exist"}
		}
	default:
		return o, &ConfigError{Key: urlKey, Message: fmt.Sprintf("The OAuth configuration option %s contains a URL (%s) that contains an invalid protocol (%s); only \"http\", \"https\", and \"file\" protocol are supported", urlKey, o.JWKSURL, u.Scheme)}
	}
	if audKey := lk("sasl.oauthbearer.allow.unverified.audience"); len(o.ExpectedAudience) == 0 && !p.bool(audKey) {
		return o, &ConfigError{Key: lk("sasl.oauthbearer.expected.audience"), Message: "The OAuth configuration option sasl.oauthbearer.expected.audience must be set when " + urlKey + " is configured, unless " + audKey + " is true"}
	}
	if issKey := lk("sasl.oauthbearer.allow.unverified.issuer"); o.ExpectedIssuer == "" && !p.bool(issKey) {
		return o, &ConfigError{Key: lk("sasl.oauthbearer.expected.issuer"), Message: "The OAuth configuration option sasl.oauthbearer.expected.issuer must be set when " + urlKey + " is configured, unless " + issKey + " is true"}
	}
	return o, p.err
}

// parseInterBrokerMechanism reads sasl.mechanism.inter.broker.protocol and,
// as KafkaConfig.validateValues does, requires it among the inter-broker
// listener's enabled mechanisms when that listener uses SASL.
func parseInterBrokerMechanism(p *props, interBroker ListenerSecurity, isListener bool) (string, error) {
	const key = "sasl.mechanism.inter.broker.protocol"
	m := p.str(key)
	if isListener && interBroker.UsesSASL() && !slices.Contains(interBroker.SASL.EnabledMechanisms, m) {
		return "", &ConfigError{Key: key, Message: "requirement failed: " + key +
			" must be included in sasl.enabled.mechanisms when SASL is used for inter-broker communication"}
	}
	return m, nil
}

// ParseJAAS parses a sasl.jaas.config value with Kafka's JaasConfig grammar
// (java.io.StreamTokenizer with // and /* */ comments, '-', '_' and '$'
// as word characters): entries of
//
//	LoginModule flag key=value ... ;
//
// where names and values are words or quoted strings ("..." or '...',
// with Java's escapes). Errors are Kafka's and never quote a value.
func ParseJAAS(s string) ([]JAAS, error) {
	t := &jaasTokenizer{s: s}
	var out []JAAS
	for {
		tok, err := t.next()
		if err != nil {
			return nil, err
		}
		if tok.kind == tokEOF {
			break
		}
		module := tok.word
		flagTok, err := t.next()
		if err != nil {
			return nil, err
		}
		if flagTok.kind == tokEOF {
			return nil, fmt.Errorf("Login module control flag not specified in JAAS config")
		}
		if !flagTok.isWord() {
			return nil, fmt.Errorf("Login module control flag is not available in the JAAS config")
		}
		flag := strings.ToUpper(flagTok.word)
		switch flag {
		case "REQUIRED", "REQUISITE", "SUFFICIENT", "OPTIONAL":
		default:
			return nil, fmt.Errorf("Invalid login module control flag '%s' in JAAS config", flagTok.word)
		}
		if !tok.isWord() {
			return nil, fmt.Errorf("Login module not specified in JAAS config")
		}
		j := JAAS{LoginModule: module, Flag: strings.ToLower(flag), Options: map[string]Password{}}
		for {
			k, err := t.next()
			if err != nil {
				return nil, err
			}
			if k.kind == tokEOF || (k.kind == tokChar && k.char == ';') {
				if k.kind == tokEOF {
					return nil, fmt.Errorf("JAAS config entry not terminated by semi-colon")
				}
				break
			}
			eq, err := t.next()
			if err != nil {
				return nil, err
			}
			v, err := t.next()
			if err != nil {
				return nil, err
			}
			if !k.isWord() || eq.kind != tokChar || eq.char != '=' || !v.isWord() {
				return nil, fmt.Errorf("Value not specified for key '%s' in JAAS config", k.word)
			}
			j.Options[k.word] = Password(v.word)
		}
		out = append(out, j)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("Login module not specified in JAAS config")
	}
	return out, nil
}

const (
	tokEOF = iota
	tokWord
	tokQuoted
	tokNumber
	tokChar
)

type jaasToken struct {
	kind int
	word string // tokWord, tokQuoted
	char byte   // tokChar
}

// isWord reports whether the token has a string value (StreamTokenizer's
// sval: a word or a quoted string; numbers have none).
func (t jaasToken) isWord() bool { return t.kind == tokWord || t.kind == tokQuoted }

type jaasTokenizer struct {
	s string
	i int
}

func jaasWordStart(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c == '$' || c >= 0xA0
}

func jaasWordPart(c byte) bool {
	return jaasWordStart(c) || c >= '0' && c <= '9' || c == '.' || c == '-' || c >= 0x80
}

func (t *jaasTokenizer) next() (jaasToken, error) {
	for t.i < len(t.s) {
		c := t.s[t.i]
		switch {
		case c <= ' ':
			t.i++
		case c == '/' && strings.HasPrefix(t.s[t.i:], "//"):
			end := strings.IndexAny(t.s[t.i:], "\n\r")
			if end < 0 {
				t.i = len(t.s)
			} else {
				t.i += end
			}
		case c == '/' && strings.HasPrefix(t.s[t.i:], "/*"):
			end := strings.Index(t.s[t.i+2:], "*/")
			if end < 0 {
				t.i = len(t.s)
			} else {
				t.i += 2 + end + 2
			}
		case c == '/': // StreamTokenizer's comment character: the rest of the line
			end := strings.IndexAny(t.s[t.i:], "\n\r")
			if end < 0 {
				t.i = len(t.s)
			} else {
				t.i += end
			}
		case jaasWordStart(c):
			start := t.i
			for t.i < len(t.s) && jaasWordPart(t.s[t.i]) {
				t.i++
			}
			return jaasToken{kind: tokWord, word: t.s[start:t.i]}, nil
		case c >= '0' && c <= '9' || c == '.' || c == '-':
			// A number: StreamTokenizer gives it no string value.
			start := t.i
			t.i++
			for t.i < len(t.s) && (t.s[t.i] >= '0' && t.s[t.i] <= '9' || t.s[t.i] == '.') {
				t.i++
			}
			if c == '-' && t.i == start+1 {
				return jaasToken{kind: tokChar, char: c}, nil
			}
			return jaasToken{kind: tokNumber}, nil
		case c == '"' || c == '\'':
			return t.quoted(c)
		default:
			t.i++
			return jaasToken{kind: tokChar, char: c}, nil
		}
	}
	return jaasToken{kind: tokEOF}, nil
}

// quoted reads a quoted string as StreamTokenizer does: it ends at the
// closing quote or the end of the line, with \b \t \n \f \r \a \v, octal
// \ooo and \x = x.
func (t *jaasTokenizer) quoted(q byte) (jaasToken, error) {
	t.i++
	var b strings.Builder
	for t.i < len(t.s) {
		c := t.s[t.i]
		if c == q {
			t.i++
			return jaasToken{kind: tokQuoted, word: b.String()}, nil
		}
		if c == '\n' || c == '\r' {
			break
		}
		t.i++
		if c != '\\' || t.i == len(t.s) {
			b.WriteByte(c)
			continue
		}
		e := t.s[t.i]
		t.i++
		switch e {
		case 'a':
			b.WriteByte(7)
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'v':
			b.WriteByte('\v')
		default:
			if e >= '0' && e <= '7' {
				n := int(e - '0')
				max := 2
				if e > '3' {
					max = 1
				}
				for k := 0; k < max && t.i < len(t.s) && t.s[t.i] >= '0' && t.s[t.i] <= '7'; k++ {
					n = n*8 + int(t.s[t.i]-'0')
					t.i++
				}
				b.WriteRune(rune(n))
			} else {
				b.WriteByte(e)
			}
		}
	}
	// StreamTokenizer ends an unterminated string at the line's end.
	return jaasToken{kind: tokQuoted, word: b.String()}, nil
}
