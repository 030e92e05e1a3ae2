package config

// SASL: the sasl.* settings of a listener.

import "time"

// SASL is a listener's sasl.* settings.
type SASL struct {
	// EnabledMechanisms is sasl.enabled.mechanisms (Kafka's default GSSAPI).
	EnabledMechanisms []string
	// JAAS is each enabled mechanism's JAAS configuration, by mechanism
	// (listener.name.<l>.<mechanism>.sasl.jaas.config).
	JAAS map[string]JAAS
	// MaxReauth is connections.max.reauth.ms (0: no re-authentication).
	MaxReauth time.Duration
	// MaxReceiveSize is sasl.server.max.receive.size: the largest frame
	// read before the client has authenticated.
	MaxReceiveSize int32
	// OAuth is the OAUTHBEARER validation settings (sasl.oauthbearer.*).
	OAuth OAuthBearer
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

// parseSASL reads listener's sasl.* settings. TODO(sasl): all of it.
func parseSASL(p *props, listener string) (*SASL, error) {
	return &SASL{}, nil
}

// parseInterBrokerMechanism reads sasl.mechanism.inter.broker.protocol.
// TODO(sasl).
func parseInterBrokerMechanism(p *props) string { return "" }
