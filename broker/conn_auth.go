package broker

// Who a connection is: the TLS handshake of an SSL or SASL_SSL listener
// (Kafka's SslTransportLayer) and the SASL exchange of a SASL_* listener
// (Kafka's SaslServerAuthenticator, with KIP-368 re-authentication). A
// PLAINTEXT connection has none of it: its conn holds nil pointers here, and
// a request costs one nil check.

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strait/strait/config"
	"github.com/strait/strait/protocol"
	"github.com/strait/strait/security"
	"github.com/strait/strait/security/sasl"
)

// tlsServer is what a connection needs of a listener's TLS configuration
// (*security.ServerTLS; an interface so that the package's tests can use
// their own).
type tlsServer interface {
	Config() *tls.Config
	Principal(tls.ConnectionState) (security.Principal, error)
}

// saslServer is what a connection needs of a listener's SASL mechanisms
// (*sasl.Server).
type saslServer interface {
	Mechanisms() []string
	Start(mechanism string) (sasl.Authenticator, error)
}

// newServerTLS and newSASLServer build a listener's TLS and SASL servers;
// variables for the package's tests.
var (
	newServerTLS = func(t *config.TLS) (tlsServer, error) {
		st, err := security.NewServerTLS(t)
		if err != nil {
			return nil, err
		}
		return st, nil
	}
	newSASLServer = func(c *config.SASL, creds security.Credentials) (saslServer, error) {
		ss, err := sasl.NewServer(c, creds)
		if err != nil {
			return nil, err
		}
		return ss, nil
	}
)

// defaultSASLMaxReceiveSize is sasl.server.max.receive.size's default
// (BrokerSecurityConfigs.DEFAULT_SASL_SERVER_MAX_RECEIVE_SIZE).
const defaultSASLMaxReceiveSize = 524288

// tlsHandshakeTimeout bounds a TLS handshake: a client that connects and
// sends nothing (or a plaintext client waiting for an answer) is closed
// after it.
var tlsHandshakeTimeout = 10 * time.Second

// listenerSecurity is how one listener's connections authenticate; nil
// for a PLAINTEXT listener.
type listenerSecurity struct {
	protocol string
	tls      tlsServer  // SSL and SASL_SSL
	sasl     saslServer // SASL_PLAINTEXT and SASL_SSL
	// maxReceive is sasl.server.max.receive.size: the largest frame read
	// before the client has authenticated.
	maxReceive int32
	// saslCfg gives connections.max.reauth.ms by mechanism (0: sessions
	// do not expire unless the credential does).
	saslCfg *config.SASL
}

// buildListenerSecurity builds every listener's TLS and SASL servers; an
// error is the one the builder returned (a *config.ConfigError naming the
// key).
func (s *Server) buildListenerSecurity() error {
	s.tlsHandshakeTimeout = tlsHandshakeTimeout
	s.security = make(map[string]*listenerSecurity)
	for _, l := range s.cfg.Network.Listeners {
		ls, ok := s.cfg.Security.Listeners[l.Name]
		proto := l.SecurityProtocol
		if ok && ls.Protocol != "" {
			proto = ls.Protocol
		}
		switch proto {
		case "PLAINTEXT":
			continue
		case "SSL", "SASL_PLAINTEXT", "SASL_SSL":
		default:
			return &config.ConfigError{Key: "listeners", Message: "Listener " + l.String() +
				" has security protocol " + proto + ", which Strait does not serve."}
		}
		sec := &listenerSecurity{protocol: proto}
		if proto == "SSL" || proto == "SASL_SSL" {
			if ls.TLS == nil {
				return &config.ConfigError{Key: "listeners", Message: "Listener " + l.String() + " has no ssl.* settings."}
			}
			t, err := newServerTLS(ls.TLS)
			if err != nil {
				return err
			}
			sec.tls = t
		}
		if proto == "SASL_PLAINTEXT" || proto == "SASL_SSL" {
			if ls.SASL == nil {
				return &config.ConfigError{Key: "listeners", Message: "Listener " + l.String() + " has no sasl.* settings."}
			}
			ss, err := newSASLServer(ls.SASL, lazyCredentials{s})
			if err != nil {
				return err
			}
			// Token and OAUTHBEARER expiry are read on the broker's clock.
			if cs, ok := ss.(interface{ SetClock(func() time.Time) }); ok {
				cs.SetClock(s.clock.Now)
			}
			sec.sasl = ss
			sec.maxReceive = ls.SASL.MaxReceiveSize
			if sec.maxReceive <= 0 {
				sec.maxReceive = defaultSASLMaxReceiveSize
			}
			sec.saslCfg = ls.SASL
		}
		s.security[l.Name] = sec
	}
	return nil
}

// listenerTLS is the TLS configuration of listener (nil when it has none,
// or a test's stand-in), for a dynamic ssl.* update to Reload.
func (s *Server) listenerTLS(listener string) *security.ServerTLS {
	if sec := s.security[listener]; sec != nil {
		st, _ := sec.tls.(*security.ServerTLS)
		return st
	}
	return nil
}

// lazyCredentials asks s.credentials() at each lookup: the mechanisms are
// built in New, before the controller whose cache holds the credentials
// has started.
type lazyCredentials struct{ s *Server }

func (l lazyCredentials) ScramCredential(mechanism, user string) (security.ScramCredential, bool) {
	return l.s.credentials().ScramCredential(mechanism, user)
}

func (l lazyCredentials) DelegationToken(tokenID string) (security.DelegationToken, bool) {
	return l.s.credentials().DelegationToken(tokenID)
}

// principal is who the connection authenticated as: the SASL user, the
// TLS client certificate's name on an SSL listener, else ANONYMOUS.
func (c *conn) principal() security.Principal {
	if p := c.princ.Load(); p != nil {
		return *p
	}
	return security.Anonymous
}

// securityProtocol is the security protocol of the connection's listener.
func (c *conn) securityProtocol() string {
	if c.sec == nil {
		return "PLAINTEXT"
	}
	return c.sec.protocol
}

// handshakeTLS runs the TLS handshake of a connection to an SSL or SASL_SSL
// listener, bounded by tlsHandshakeTimeout and Close; a client that fails
// it (a plaintext client, an untrusted or expired certificate) is logged,
// at most once a second, and false says to close the connection.
func (c *conn) handshakeTLS(tc *tls.Conn) bool {
	ctx, cancel := context.WithTimeout(c.srv.ctx, c.srv.tlsHandshakeTimeout)
	defer cancel()
	if err := tc.HandshakeContext(ctx); err != nil {
		c.logRefused("TLS handshake failed", err)
		c.srv.metrics.FailedAuthentication(c.listener)
		return false
	}
	if c.sec.sasl == nil {
		p, err := c.sec.tls.Principal(tc.ConnectionState())
		if err != nil {
			c.logRefused("TLS client certificate maps to no principal", err)
			return false
		}
		c.princ.Store(&p)
	}
	return true
}

// logRefused logs a connection refused for bad input (a failed handshake
// or authentication, a request out of place), at most once a second per
// broker: a misconfigured client fleet reconnecting in a loop must not
// flood the log.
func (c *conn) logRefused(msg string, err error) { c.logRefusedAt(slog.LevelInfo, msg, err) }

func (c *conn) logRefusedAt(level slog.Level, msg string, err error) {
	if n, ok := c.srv.refusedLog.Allow(time.Now()); ok {
		args := []any{"err", err}
		if n > 0 {
			args = append(args, "suppressed", n)
		}
		c.logger().Log(context.Background(), level, "closing connection: "+msg, args...)
	}
}

// SASL phases, as SaslServerAuthenticator's states.
type saslPhase uint8

const (
	saslHandshakeOrVersions saslPhase = iota // HANDSHAKE_OR_VERSIONS_REQUEST: ApiVersions or SaslHandshake
	saslHandshake                            // HANDSHAKE_REQUEST: after ApiVersions
	saslAuthenticate                         // AUTHENTICATE: SaslAuthenticate requests (raw tokens after a v0 handshake)
	saslReauthBadMechanism                   // REAUTH_BAD_MECHANISM: the next request fails the re-authentication
	saslComplete                             // COMPLETE: authenticated, requests are served
	saslReauthHandshake                      // REAUTH_PROCESS_HANDSHAKE: a re-authentication's SaslHandshake
)

// saslConn is a SASL connection's exchange state, used by the read
// goroutine only.
type saslConn struct {
	phase saslPhase
	// raw: the handshake was v0, so the tokens come as bare size-prefixed
	// frames, not SaslAuthenticate requests.
	raw   bool
	mech  string
	authn sasl.Authenticator
	// reauth: this exchange re-authenticates an authenticated connection;
	// badMech is why it fails (a different mechanism).
	reauth  bool
	badMech string
	// supportsReauth: the client sent SaslAuthenticate v1+, so it knows
	// session lifetimes and can re-authenticate (KIP-368).
	supportsReauth bool
	// expiry is when the session ends (zero: never); a request after it
	// closes the connection. lastReauth is when the last re-authentication
	// began (at most one a second is served).
	expiry     time.Time
	lastReauth time.Time
}

// errTooLargeBeforeAuth wraps a frame refused before authentication.
var errTooLargeBeforeAuth = errors.New("frame larger than sasl.server.max.receive.size before authentication")

// authFrame handles a frame read before the connection authenticated (or
// while it re-authenticates). It returns false to close the connection.
func (c *conn) authFrame(frame []byte) bool {
	a := c.sasl
	if a.phase == saslAuthenticate && a.raw {
		return c.saslRawToken(frame)
	}
	req, err := protocol.ParseRequest(frame, c.srv.versions, &c.clientIDs)
	if err != nil {
		c.logRefused("bad request during SASL authentication", err)
		return false
	}
	return c.authRequest(req)
}

// authRequest serves req in the connection's current SASL phase: only
// ApiVersions, SaslHandshake and SaslAuthenticate, each in its turn; any
// other request closes the connection, as Kafka's authenticator does.
func (c *conn) authRequest(req *protocol.Request) bool {
	a := c.sasl
	key := kmsg.Key(req.Key)
	switch a.phase {
	case saslHandshakeOrVersions, saslHandshake, saslReauthHandshake:
		switch {
		case key == kmsg.ApiVersions && a.phase == saslHandshakeOrVersions:
			x := &exchange{c: c, req: req}
			if !c.enqueue(x) {
				return false
			}
			handleApiVersions(c, x)
			if !req.UnsupportedVersion {
				a.phase = saslHandshake
			}
			return true
		case key == kmsg.SASLHandshake:
			return c.saslHandshake(req)
		}
		c.logRefused("unexpected request during SASL handshake", fmt.Errorf("request %s v%d", key.Name(), req.Version))
		return false
	case saslAuthenticate:
		if key != kmsg.SASLAuthenticate {
			// Kafka answers with the request's error response
			// (ILLEGAL_SASL_STATE) before it closes: done here for the
			// requests a client of the exchange could send, the others
			// are closed on.
			c.logRefused("unexpected request during SASL authentication", fmt.Errorf("request %s v%d", key.Name(), req.Version))
			var resp kmsg.Response
			switch body := req.Body.(type) {
			case *kmsg.SASLHandshakeRequest:
				r := body.ResponseKind().(*kmsg.SASLHandshakeResponse)
				r.ErrorCode = kerr.IllegalSaslState.Code
				resp = r
			case *kmsg.ApiVersionsRequest:
				if !req.UnsupportedVersion {
					r := body.ResponseKind().(*kmsg.ApiVersionsResponse)
					r.ErrorCode = kerr.IllegalSaslState.Code
					resp = r
				}
			}
			if resp != nil {
				x := &exchange{c: c, req: req, closeConn: true}
				if c.enqueue(x) {
					x.respond(resp)
				}
			}
			return false
		}
		return c.saslAuthenticate(req)
	case saslReauthBadMechanism:
		c.logRefused("re-authentication failed", errors.New(a.badMech))
		return false
	}
	return false
}

// saslHandshake answers a SaslHandshake: the mechanism is enabled (the
// exchange starts) or UNSUPPORTED_SASL_MECHANISM with the enabled ones,
// and the connection closes. A re-authentication must keep its mechanism.
func (c *conn) saslHandshake(req *protocol.Request) bool {
	a := c.sasl
	body := req.Body.(*kmsg.SASLHandshakeRequest)
	resp := body.ResponseKind().(*kmsg.SASLHandshakeResponse)
	resp.SupportedMechanisms = c.sec.sasl.Mechanisms()
	x := &exchange{c: c, req: req}
	if !c.enqueue(x) {
		return false
	}
	var authn sasl.Authenticator
	err := sasl.ErrUnsupportedMechanism
	if slices.Contains(resp.SupportedMechanisms, body.Mechanism) {
		authn, err = c.sec.sasl.Start(body.Mechanism)
	}
	if err != nil {
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		x.closeConn = true
		x.respond(resp)
		c.logRefused("unsupported SASL mechanism", fmt.Errorf("client asked for %q", body.Mechanism))
		return false
	}
	a.raw = req.Version == 0
	if a.reauth && body.Mechanism != a.mech {
		a.badMech = fmt.Sprintf("SASL mechanism '%s' requested by client is not supported for re-authentication of mechanism '%s'", body.Mechanism, a.mech)
		a.phase = saslReauthBadMechanism
	} else {
		a.mech, a.authn, a.phase = body.Mechanism, authn, saslAuthenticate
	}
	x.respond(resp)
	return true
}

// saslAuthenticate steps the exchange with a SaslAuthenticate's token. A
// failure is SASL_AUTHENTICATION_FAILED with its message, and the
// connection closes once the response is written.
func (c *conn) saslAuthenticate(req *protocol.Request) bool {
	a := c.sasl
	body := req.Body.(*kmsg.SASLAuthenticateRequest)
	resp := body.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	x := &exchange{c: c, req: req}
	if !c.enqueue(x) {
		return false
	}
	if req.Version > 0 {
		a.supportsReauth = true
	}
	reply, lifetime, err := c.saslStep(body.SASLAuthBytes)
	if err != nil {
		msg := err.Error()
		resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
		c.srv.metrics.FailedAuthentication(c.listener)
		resp.ErrorMessage = &msg
		x.closeConn = true
		x.respond(resp)
		return false
	}
	if reply == nil {
		reply = []byte{}
	}
	resp.SASLAuthBytes = reply
	resp.SessionLifetimeMillis = lifetime.Milliseconds()
	x.respond(resp)
	return true
}

// saslRawToken steps the exchange with a bare token (after a v0
// SaslHandshake) and writes the reply as a bare size-prefixed frame; a
// failure closes the connection without a reply.
func (c *conn) saslRawToken(token []byte) bool {
	reply, _, err := c.saslStep(token)
	if err != nil {
		c.srv.metrics.FailedAuthentication(c.listener)
		return false
	}
	if reply == nil {
		return true // Kafka writes nothing for a null challenge
	}
	x := &exchange{c: c, req: &protocol.Request{Key: int16(kmsg.SASLAuthenticate)}}
	if !c.enqueue(x) {
		return false
	}
	frame := make([]byte, 4+len(reply))
	frame[0], frame[1], frame[2], frame[3] = byte(len(reply)>>24), byte(len(reply)>>16), byte(len(reply)>>8), byte(len(reply))
	copy(frame[4:], reply)
	x.frame = frame
	c.complete(x, true)
	return true
}

// saslStep steps the authenticator; once it is done, the connection is
// authenticated (a re-authentication must keep the principal) and its
// session lifetime starts. Failures are logged (at most once a second) and
// returned with the message for the client.
func (c *conn) saslStep(token []byte) (reply []byte, lifetime time.Duration, err error) {
	a := c.sasl
	what := "authentication"
	if a.reauth {
		what = "re-authentication"
	}
	reply, done, err := a.authn.Step(token)
	if err == nil && done && a.reauth {
		if old, p := c.principal(), a.authn.Principal(); old != p {
			err = &sasl.AuthError{Message: fmt.Sprintf("Cannot change principals during re-authentication from %s.%s: %s.%s",
				old.Type, old.Name, p.Type, p.Name)}
		}
	}
	if err != nil {
		var ae *sasl.AuthError
		if errors.As(err, &ae) {
			if a.reauth {
				err = ae.Reauthentication()
			}
		} else {
			// Not the mechanism's message for the client: it may say more
			// than a client should learn (whether the user exists).
			err = &sasl.AuthError{Message: "Authentication failed during " + what +
				" due to invalid credentials with SASL mechanism " + a.mech}
		}
		c.logRefused("SASL "+what+" failed", fmt.Errorf("mechanism %s: %w", a.mech, err))
		return nil, 0, err
	}
	if !done {
		return reply, 0, nil
	}
	now := c.srv.clock.Now()
	lifetime = c.sessionLifetime(now, a.authn.Expiry())
	if !a.reauth {
		p := a.authn.Principal()
		c.princ.Store(&p)
	}
	a.phase, a.reauth, a.authn, a.badMech = saslComplete, false, nil, ""
	a.expiry = time.Time{}
	if lifetime >= 0 {
		a.expiry = now.Add(lifetime)
	} else {
		lifetime = 0
	}
	return reply, lifetime, nil
}

// sessionLifetime is KIP-368's session lifetime: connections.max.reauth.ms
// or the credential's remaining life, whichever is shorter; -1 when neither
// bounds it.
func (c *conn) sessionLifetime(now, credExpiry time.Time) time.Duration {
	maxReauth := c.sec.saslCfg.ReauthFor(c.sasl.mech)
	switch {
	case credExpiry.IsZero() && maxReauth <= 0:
		return -1
	case credExpiry.IsZero():
		return maxReauth
	}
	left := max(credExpiry.Sub(now), 0)
	if maxReauth > 0 {
		left = min(left, maxReauth)
	}
	return left
}

// authenticatedRequest is the check of a request on an authenticated SASL
// connection: a SaslHandshake from a client that can re-authenticate
// begins a re-authentication (served here: handled true); any other
// request after the session expired closes the connection (ok false).
func (c *conn) authenticatedRequest(req *protocol.Request) (handled, ok bool) {
	a := c.sasl
	if req.Key == int16(kmsg.SASLHandshake) && a.supportsReauth {
		now := c.srv.clock.Now()
		// At most one re-authentication a second, as Kafka: a client
		// could otherwise keep the broker busy with them.
		if a.lastReauth.IsZero() || now.Sub(a.lastReauth) >= time.Second {
			a.lastReauth = now
			a.phase, a.reauth = saslReauthHandshake, true
			return true, c.authRequest(req)
		}
	}
	if !a.expiry.IsZero() && !c.srv.clock.Now().Before(a.expiry) {
		c.logRefused("SASL session expired", fmt.Errorf("principal %s, request %s", c.principal(), kmsg.Key(req.Key).Name()))
		return true, false
	}
	return false, true
}
