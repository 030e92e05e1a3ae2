package config

// Security: how each broker listener authenticates its connections, read
// as Kafka's ChannelBuilders read it: a listener's own value
// (listener.name.<listener, lower case>.<key>) before the broker-wide key,
// and for SASL a mechanism's own (listener.name.<l>.<mechanism, lower
// case>.<key>, e.g. the JAAS config of each mechanism).

import (
	"log/slog"
	"strings"
	"time"
)

// Password is a secret setting (Kafka's PASSWORD type): it prints as
// [hidden], as Kafka's Password does, so it cannot reach a log line by
// accident; Reveal gives the value to the code that needs it.
type Password string

func (p Password) String() string {
	if p == "" {
		return ""
	}
	return "[hidden]"
}

// LogValue keeps a Password out of slog output however it is logged.
func (p Password) LogValue() slog.Value { return slog.StringValue(p.String()) }

// Reveal is the secret itself.
func (p Password) Reveal() string { return string(p) }

// Security is every listener's authentication settings and the
// broker-wide ones.
type Security struct {
	// Listeners holds the settings of each broker listener, by its name
	// (upper case, as Network.Listeners names it).
	Listeners map[string]ListenerSecurity
	// InterBrokerMechanism is sasl.mechanism.inter.broker.protocol: the
	// mechanism this broker uses on a SASL inter-broker listener.
	InterBrokerMechanism string
	// DelegationTokens are the delegation.token.* settings.
	DelegationTokens DelegationTokens
	// Authorizer is authorizer.class.name, super.users and
	// allow.everyone.if.no.acl.found (authorizer.go).
	Authorizer Authorizer
}

// ListenerSecurity is how one listener authenticates.
type ListenerSecurity struct {
	Protocol string // PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL
	TLS      *TLS   // SSL and SASL_SSL; nil otherwise
	SASL     *SASL  // SASL_PLAINTEXT and SASL_SSL; nil otherwise
}

// UsesTLS reports whether the listener's connections start with a TLS handshake.
func (l ListenerSecurity) UsesTLS() bool { return l.Protocol == "SSL" || l.Protocol == "SASL_SSL" }

// UsesSASL reports whether the listener's connections authenticate with SASL.
func (l ListenerSecurity) UsesSASL() bool {
	return l.Protocol == "SASL_PLAINTEXT" || l.Protocol == "SASL_SSL"
}

// DelegationTokens are the delegation.token.* settings (DelegationTokenManagerConfigs).
type DelegationTokens struct {
	// SecretKey is delegation.token.secret.key: tokens are enabled only
	// when it is set, and every broker must have the same.
	SecretKey           Password
	MaxLifetime         time.Duration // delegation.token.max.lifetime.ms (7 days)
	ExpiryTime          time.Duration // delegation.token.expiry.time.ms (1 day)
	ExpiryCheckInterval time.Duration // delegation.token.expiry.check.interval.ms (1 hour)
}

// Enabled reports whether delegation tokens can be created.
func (d DelegationTokens) Enabled() bool { return d.SecretKey != "" }

// parseSecurity fills c.Security for every broker listener.
func (c *Config) parseSecurity(p *props) error {
	c.Security.Listeners = make(map[string]ListenerSecurity, len(c.Network.Listeners))
	for _, l := range c.Network.Listeners {
		ls := ListenerSecurity{Protocol: l.SecurityProtocol}
		if ls.UsesTLS() {
			t, err := parseTLS(p, l.Name, l.SecurityProtocol)
			if err != nil {
				return err
			}
			ls.TLS = t
		}
		if ls.UsesSASL() {
			s, err := parseSASL(p, l.Name)
			if err != nil {
				return err
			}
			ls.SASL = s
		}
		c.Security.Listeners[l.Name] = ls
	}
	ib, isListener := c.Security.Listeners[c.Network.InterBrokerListenerName]
	m, err := parseInterBrokerMechanism(p, ib, isListener)
	if err != nil {
		return err
	}
	c.Security.InterBrokerMechanism = m
	d, err := parseDelegationTokens(p)
	if err != nil {
		return err
	}
	c.Security.DelegationTokens = d
	if c.Security.Authorizer, err = parseAuthorizer(p); err != nil {
		return err
	}
	return p.err
}

// listenerPrefix is Kafka's ListenerName.configPrefix.
func listenerPrefix(listener string) string {
	return "listener.name." + strings.ToLower(listener) + "."
}

// listenerKey is the key a listener's value of key was read from: its own
// (listener.name.<l>.<key>) when given, else the broker-wide key.
func (p *props) listenerKey(listener, key string) string {
	if own := listenerPrefix(listener) + key; p.has(own) {
		return own
	}
	return key
}

// listenerStr is key's value for listener: its own, else the broker-wide
// value or its default.
func (p *props) listenerStr(listener, key string) string {
	return p.str(p.listenerKey(listener, key))
}
