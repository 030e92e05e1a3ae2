// Package sasl is the broker's side of Kafka's SASL mechanisms: PLAIN
// (users from the listener's JAAS config), SCRAM-SHA-256 and SCRAM-SHA-512
// (RFC 5802/7677 with Kafka's tokenauth extension, credentials from
// security.Credentials), and OAUTHBEARER (RFC 7628: Kafka's unsecured
// validator, or JWTs checked against a JWKS). Each connection's exchange
// is an Authenticator; the broker's connection drives it with the tokens
// of SaslAuthenticate requests.
package sasl

import (
	"crypto/rand"
	"errors"
	"slices"
	"time"

	"github.com/strait/strait/config"
	"github.com/strait/strait/security"
)

// Mechanism names.
const (
	Plain       = "PLAIN"
	ScramSHA256 = security.ScramSHA256
	ScramSHA512 = security.ScramSHA512
	OAuthBearer = "OAUTHBEARER"
)

// Server holds a listener's enabled mechanisms.
type Server struct {
	mechanisms []string
	plainUsers map[string]config.Password // PLAIN: user_<name> options of the JAAS config
	creds      security.Credentials
	oauth      *oauthValidator
	fakeKey    []byte // SCRAM: salts answered for unknown users
	now        func() time.Time
	testNonce  string // tests: a fixed SCRAM server nonce (RFC 7677's vector)
}

// SetClock makes the mechanisms read the time (a delegation token's or an
// OAUTHBEARER token's expiry) from now instead of time.Now. Call it before
// the first Start.
func (s *Server) SetClock(now func() time.Time) { s.now = now }

// NewServer builds a listener's mechanisms from its settings. The error is
// a *config.ConfigError naming the key at fault (an unsupported mechanism,
// a JAAS config that is missing or does not parse).
func NewServer(cfg *config.SASL, creds security.Credentials) (*Server, error) {
	s := &Server{creds: creds, now: time.Now, fakeKey: make([]byte, 32)}
	rand.Read(s.fakeKey)
	for _, m := range cfg.EnabledMechanisms {
		jaas, ok := cfg.JAAS[m]
		if !ok {
			return nil, &config.ConfigError{Key: "sasl.jaas.config", Message: "no JAAS config for SASL mechanism " + m}
		}
		switch m {
		case Plain:
			s.plainUsers = map[string]config.Password{}
			for k, v := range jaas.Options {
				if name, ok := cutPrefix(k, "user_"); ok {
					s.plainUsers[name] = v
				}
			}
		case ScramSHA256, ScramSHA512:
			if creds == nil {
				return nil, errors.New("sasl: SCRAM needs a credentials store")
			}
		case OAuthBearer:
			v, err := newOAuthValidator(cfg.OAuth, jaas)
			if err != nil {
				return nil, err
			}
			s.oauth = v
		default:
			return nil, &config.ConfigError{Key: "sasl.enabled.mechanisms",
				Message: "Invalid value " + m + " for configuration sasl.enabled.mechanisms: Strait does not support this SASL mechanism"}
		}
		s.mechanisms = append(s.mechanisms, m)
	}
	return s, nil
}

func cutPrefix(s, prefix string) (string, bool) {
	if len(s) > len(prefix) && s[:len(prefix)] == prefix {
		return s[len(prefix):], true
	}
	return "", false
}

// Mechanisms are the enabled mechanisms, in sasl.enabled.mechanisms order
// (SaslHandshake's answer).
func (s *Server) Mechanisms() []string { return slices.Clone(s.mechanisms) }

// Start begins an exchange with mechanism; ErrUnsupportedMechanism when it
// is not enabled.
func (s *Server) Start(mechanism string) (Authenticator, error) {
	if !slices.Contains(s.mechanisms, mechanism) {
		return nil, ErrUnsupportedMechanism
	}
	switch mechanism {
	case Plain:
		return &plainAuth{users: s.plainUsers}, nil
	case ScramSHA256, ScramSHA512:
		return &scramAuth{srv: s, mechanism: mechanism}, nil
	case OAuthBearer:
		return &oauthAuth{v: s.oauth, now: s.now}, nil
	}
	return nil, ErrUnsupportedMechanism
}

// ErrUnsupportedMechanism is UNSUPPORTED_SASL_MECHANISM.
var ErrUnsupportedMechanism = errors.New("unsupported SASL mechanism")

// ErrIllegalState is a Step after the exchange completed or failed (the
// connection answers ILLEGAL_SASL_STATE).
var ErrIllegalState = errors.New("SASL exchange already completed or failed")

// AuthError is an authentication that failed: SASL_AUTHENTICATION_FAILED,
// with Message for the client (Kafka's wording, never a secret).
type AuthError struct {
	Message string
	// mechanism is set on Kafka's generic failure, whose wording names
	// the (re-)authentication.
	mechanism string
}

func (e *AuthError) Error() string { return e.Message }

// Reauthentication is the error as a failed re-authentication reports it
// (Kafka: "... during re-authentication ..." for the generic failure).
func (e *AuthError) Reauthentication() *AuthError {
	if e.mechanism == "" {
		return e
	}
	return &AuthError{Message: "Authentication failed during re-authentication due to invalid credentials with SASL mechanism " + e.mechanism, mechanism: e.mechanism}
}

// invalidCredentials is Kafka's answer to a failure whose cause it keeps
// from the client (a SaslException in SaslServerAuthenticator: unknown
// user, wrong password, malformed message).
func invalidCredentials(mechanism string) *AuthError {
	return &AuthError{Message: "Authentication failed during authentication due to invalid credentials with SASL mechanism " + mechanism, mechanism: mechanism}
}

// Authenticator is one connection's exchange with one mechanism.
type Authenticator interface {
	// Step takes the client's next token and returns the server's reply.
	// done is true once the client is authenticated; an *AuthError is a
	// failed authentication; ErrIllegalState a step after either.
	Step(token []byte) (reply []byte, done bool, err error)
	// Principal is who authenticated, once done.
	Principal() security.Principal
	// Expiry is when the credential used ends (an OAUTHBEARER token's exp,
	// a delegation token's expiry), or the zero time: the session ends no
	// later (KIP-368).
	Expiry() time.Time
}

// state is an exchange's progress.
type state int

const (
	stateStart state = iota
	stateMid
	stateDone
	stateFailed
)
