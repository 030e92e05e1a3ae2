package sasl

import (
	"bytes"
	"crypto/subtle"
	"strconv"
	"time"

	"github.com/strait/strait/config"
	"github.com/strait/strait/security"
)

// plainAuth is PLAIN (RFC 4616) as Kafka's PlainSaslServer with
// PlainServerCallbackHandler: users and passwords from the JAAS config.
type plainAuth struct {
	users     map[string]config.Password
	st        state
	principal security.Principal
}

func (a *plainAuth) Step(token []byte) ([]byte, bool, error) {
	if a.st != stateStart {
		return nil, false, ErrIllegalState
	}
	a.st = stateFailed
	// [authzid] NUL authcid NUL passwd; Kafka splits on at most 4 NULs.
	parts := bytes.SplitN(token, []byte{0}, 4)
	if len(parts) != 3 {
		return nil, false, &AuthError{Message: "Invalid SASL/PLAIN response: expected 3 tokens, got " + strconv.Itoa(min(len(parts), 4))}
	}
	authzid, user, pass := string(parts[0]), string(parts[1]), parts[2]
	if user == "" {
		return nil, false, &AuthError{Message: "Authentication failed: username not specified"}
	}
	if len(pass) == 0 {
		return nil, false, &AuthError{Message: "Authentication failed: password not specified"}
	}
	want, ok := a.users[user]
	// Compare even for an unknown user, so that timing does not tell.
	expected := []byte(want.Reveal())
	if !ok {
		expected = pass
	}
	match := subtle.ConstantTimeCompare(expected, pass) == 1
	if !ok || !match {
		return nil, false, &AuthError{Message: "Authentication failed: Invalid username or password"}
	}
	if authzid != "" && authzid != user {
		return nil, false, &AuthError{Message: "Authentication failed: Client requested an authorization id that is different from username"}
	}
	a.principal = security.User(user)
	a.st = stateDone
	return []byte{}, true, nil
}

func (a *plainAuth) Principal() security.Principal { return a.principal }
func (a *plainAuth) Expiry() time.Time             { return time.Time{} }
