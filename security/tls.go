package security

import (
	"crypto/tls"
	"errors"

	"github.com/strait/strait/config"
)

// ServerTLS is a listener's TLS server configuration. Reload swaps the
// keystore and truststore in place (a dynamic ssl.* update), and new
// handshakes take the new ones (Config's GetConfigForClient).
// TODO(tls): all of it.
type ServerTLS struct{}

// NewServerTLS builds a listener's TLS configuration from its settings,
// loading the keystore and truststore. The error is a *config.ConfigError
// naming the key at fault.
func NewServerTLS(t *config.TLS) (*ServerTLS, error) {
	return nil, errors.New("TLS is not implemented yet")
}

// Config is the *tls.Config to give tls.Server.
func (s *ServerTLS) Config() *tls.Config { return nil }

// Reload loads t's keystore and truststore and uses them for new
// connections; on error nothing changes.
func (s *ServerTLS) Reload(t *config.TLS) error { return errors.New("TLS is not implemented yet") }

// Principal is the principal of a connection whose handshake gave state:
// the client certificate's subject mapped by ssl.principal.mapping.rules,
// or Anonymous without a client certificate.
func (s *ServerTLS) Principal(state tls.ConnectionState) Principal { return Anonymous }

// ClientTLS is the *tls.Config this broker uses to reach another broker's
// listener with settings t (its truststore, and its keystore for mTLS).
func ClientTLS(t *config.TLS, serverName string) (*tls.Config, error) {
	return nil, errors.New("TLS is not implemented yet")
}
