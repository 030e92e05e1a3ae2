package broker

import "github.com/strait/strait/security"

// principal is who the connection authenticated as.
// TODO(conn): the TLS or SASL principal.
func (c *conn) principal() security.Principal { return security.Anonymous }

// securityProtocol is the security protocol of the connection's listener.
// TODO(conn).
func (c *conn) securityProtocol() string { return "PLAINTEXT" }
