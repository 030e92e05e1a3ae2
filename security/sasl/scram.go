package sasl

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/strait/strait/security"
)

// The grammar of Kafka's ScramMessages (Java's [a&&[^b]] spelled out for RE2,
// which also keeps matching linear in the input).
const (
	scramValue     = `[\x01-\x2B\x2D-\x7F]+`
	scramPrintable = `[\x21-\x2B\x2D-\x7E]+`
	scramSaslName  = `(?:[\x01-\x2B\x2D-\x3C\x3E-\x7F]|=2C|=3D)+`
	scramBase64    = `(?:[a-zA-Z0-9/+]{4})*(?:[a-zA-Z0-9/+]{3}=|[a-zA-Z0-9/+]{2}==)?`
	scramExtension = `(?:,[A-Za-z]+=` + scramValue + `)*`
)

var (
	// Only the gs2 header "n" (no channel binding) is accepted, as Kafka.
	clientFirstRE = regexp.MustCompile(`^n,(?:a=(` + scramSaslName + `))?,((?:m=` + scramValue + `,)?n=(` + scramSaslName +
		`),r=(` + scramPrintable + `)(` + scramExtension + `))$`)
	clientFinalRE = regexp.MustCompile(`^(c=(` + scramBase64 + `),r=(` + scramPrintable + `)` + scramExtension + `),p=(` + scramBase64 + `)$`)
)

// scramAuth is SCRAM-SHA-256/512 as Kafka's ScramSaslServer.
type scramAuth struct {
	srv       *Server
	mechanism string
	st        state

	cred            security.ScramCredential
	known           bool // cred is a real credential (not the stand-in for an unknown user)
	gs2Header       string
	clientFirstBare string
	serverFirst     string
	nonce           string // client nonce + server nonce
	principal       security.Principal
	expiry          time.Time
}

func (a *scramAuth) fail(err *AuthError) ([]byte, bool, error) {
	a.st = stateFailed
	a.cred = security.ScramCredential{}
	return nil, false, err
}

func (a *scramAuth) Step(token []byte) ([]byte, bool, error) {
	switch a.st {
	case stateStart:
		return a.clientFirst(string(token))
	case stateMid:
		return a.clientFinal(string(token))
	}
	return nil, false, ErrIllegalState
}

func (a *scramAuth) clientFirst(msg string) ([]byte, bool, error) {
	m := clientFirstRE.FindStringSubmatch(msg)
	if m == nil {
		return a.fail(invalidCredentials(a.mechanism))
	}
	authzid, bare, saslName, clientNonce, exts := m[1], m[2], m[3], m[4], m[5]
	a.gs2Header = "n," + optA(authzid) + ","
	a.clientFirstBare = bare
	username, ok := scramUsername(saslName)
	if !ok {
		return a.fail(invalidCredentials(a.mechanism))
	}
	now := a.srv.now()
	if tokenAuth(exts) {
		tok, found := a.srv.creds.DelegationToken(username)
		if found && tok.Owner.Name != "" && now.Before(tok.ExpiryTime) {
			// Kafka's DelegationTokenManager: the token's password is its
			// HMAC in base64, salted afresh, at the mechanism's minimum iterations.
			salt := make([]byte, 32)
			rand.Read(salt)
			pw := base64.StdEncoding.EncodeToString(tok.HMAC)
			salted, err := security.SaltedPassword(a.mechanism, []byte(pw), salt, security.ScramMinIterations)
			if err == nil {
				a.cred, err = security.NewScramCredential(a.mechanism, salt, salted, security.ScramMinIterations)
			}
			if err == nil {
				a.known = true
				a.principal = security.Principal{Type: tok.Owner.Type, Name: tok.Owner.Name, TokenAuthenticated: true}
				if a.principal.Type == "" {
					a.principal.Type = "User"
				}
				a.expiry = tok.ExpiryTime
			}
		}
	} else if c, found := a.srv.creds.ScramCredential(a.mechanism, username); found && c.Iterations >= security.ScramMinIterations {
		a.cred, a.known = c, true
		a.principal = security.User(username)
	}
	if a.known && authzid != "" && authzid != username {
		return a.fail(&AuthError{Message: "Authentication failed: Client requested an authorization id that is different from username"})
	}
	if !a.known {
		// An unknown user gets a plausible challenge and then the same
		// failure as a wrong password, so a client cannot tell them apart.
		mac := hmac.New(security.ScramHash(a.mechanism), a.srv.fakeKey)
		mac.Write([]byte(username))
		a.cred = security.ScramCredential{Mechanism: a.mechanism, Salt: mac.Sum(nil)[:16], Iterations: security.ScramMinIterations}
	}
	a.nonce = clientNonce + a.srv.serverNonce()
	a.serverFirst = "r=" + a.nonce + ",s=" + base64.StdEncoding.EncodeToString(a.cred.Salt) + ",i=" + strconv.Itoa(int(a.cred.Iterations))
	a.st = stateMid
	return []byte(a.serverFirst), false, nil
}

// serverNonce is the server's part of the nonce: random, printable, no ','.
func (s *Server) serverNonce() string {
	if s.testNonce != "" {
		return s.testNonce
	}
	b := make([]byte, 24)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

func optA(authzid string) string {
	if authzid == "" {
		return ""
	}
	return "a=" + authzid
}

// tokenAuth reports whether the client-first extensions carry
// tokenauth=true (Kafka's ScramExtensions: Boolean.parseBoolean).
func tokenAuth(exts string) bool {
	for _, e := range strings.Split(exts, ",") {
		if k, v, ok := strings.Cut(e, "="); ok && k == "tokenauth" {
			return strings.EqualFold(v, "true")
		}
	}
	return false
}

// scramUsername undoes RFC 5802's saslname escaping (=2C is ',', =3D is
// '='); any other '=' is invalid.
func scramUsername(saslName string) (string, bool) {
	u := strings.ReplaceAll(saslName, "=2C", ",")
	if strings.Contains(strings.ReplaceAll(u, "=3D", ""), "=") {
		return "", false
	}
	return strings.ReplaceAll(u, "=3D", "="), true
}

func (a *scramAuth) clientFinal(msg string) ([]byte, bool, error) {
	m := clientFinalRE.FindStringSubmatch(msg)
	if m == nil {
		return a.fail(invalidCredentials(a.mechanism))
	}
	withoutProof, channel, nonce, proofB64 := m[1], m[2], m[3], m[4]
	cb, err1 := base64.StdEncoding.DecodeString(channel)
	proof, err2 := base64.StdEncoding.DecodeString(proofB64)
	if err1 != nil || err2 != nil || string(cb) != a.gs2Header || nonce != a.nonce || !a.known {
		return a.fail(invalidCredentials(a.mechanism))
	}
	h := security.ScramHash(a.mechanism)
	authMessage := a.clientFirstBare + "," + a.serverFirst + "," + withoutProof
	mac := func(key []byte) []byte {
		m := hmac.New(h, key)
		m.Write([]byte(authMessage))
		return m.Sum(nil)
	}
	clientSig := mac(a.cred.StoredKey)
	if len(proof) != len(clientSig) {
		return a.fail(invalidCredentials(a.mechanism))
	}
	clientKey := make([]byte, len(proof))
	subtle.XORBytes(clientKey, proof, clientSig)
	sum := h()
	sum.Write(clientKey)
	if subtle.ConstantTimeCompare(sum.Sum(nil), a.cred.StoredKey) != 1 {
		return a.fail(invalidCredentials(a.mechanism))
	}
	serverSig := mac(a.cred.ServerKey)
	a.cred = security.ScramCredential{}
	a.st = stateDone
	return []byte("v=" + base64.StdEncoding.EncodeToString(serverSig)), true, nil
}

func (a *scramAuth) Principal() security.Principal { return a.principal }
func (a *scramAuth) Expiry() time.Time             { return a.expiry }
