// Package sasl is the broker's side of Kafka's SASL mechanisms: PLAIN
// (users from the listener's JAAS config), SCRAM-SHA-256 and SCRAM-SHA-512
// (RFC 5802/7677 with Kafka's tokenauth extension, credentials from
// security.Credentials), and OAUTHBEARER (RFC 7628: Kafka's unsecured
// validator, or JWTs checked against a JWKS). Each connection's exchange
// is an Authenticator; the broker's connection drives it with the tokens
// of SaslAuthenticate requests.
package sasl

import (
	"errors"
	"time"

	"github.com/strait/strait/config"
	"github.com/strait/strait/security"
)

// Server holds a listener's enabled mechanisms.
// TODO(sasl): all of it.
type Server struct{}

// NewServer builds a listener's mechanisms from its settings. The error is
// a *config.ConfigError naming the key at fault (an unsupported mechanism,
// a JAAS config that is missing or does not parse).
func NewServer(cfg *config.SASL, creds security.Credentials) (*Server, error) {
	return nil, errors.New("SASL is not implemented yet")
}

// Mechanisms are the enabled mechanisms, in sasl.enabled.mechanisms order
// (SaslHandshake's answer).
func (s *Server) Mechanisms() []string { return nil }

// Start begins an exchange with mechanism; ErrUnsupportedMechanism when it
// is not enabled.
func (s *Server) Start(mechanism string) (Authenticator, error) {
	return nil, ErrUnsupportedMechanism
}

// ErrUnsupportedMechanism is UNSUPPORTED_SASL_MECHANISM.
var ErrUnsupportedMechanism = errors.New("unsupported SASL mechanism")

// AuthError is an authentication that failed: SASL_AUTHENTICATION_FAILED,
// with Message for the client (Kafka's wording, never a secret).
type AuthError struct{ Message string }

func (e *AuthError) Error() string { return e.Message }

// Authenticator is one connection's exchange with one mechanism.
type Authenticator interface {
	// Step takes the client's next token and returns the server's reply.
	// done is true once the client is authenticated; an *AuthError is a
	// failed authentication.
	Step(token []byte) (reply []byte, done bool, err error)
	// Principal is who authenticated, once done.
	Principal() security.Principal
	// Expiry is when the credential used ends (an OAUTHBEARER token's exp,
	// a delegation token's expiry), or the zero time: the session ends no
	// later (KIP-368).
	Expiry() time.Time
}
