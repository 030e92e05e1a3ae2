package sasl

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/strait/strait/config"
	"github.com/strait/strait/security"
)

// The grammar of Kafka's OAuthBearerClientInitialResponse (RFC 7628).
var (
	oauthInitialRE = regexp.MustCompile(`^n,(?:a=((?:[\x01-\x2B\x2D-\x3C\x3E-\x7F]|=2C|=3D)+))?,\x01((?:[A-Za-z]+=[\x21-\x7E \t\r\n]+\x01)*)\x01$`)
	oauthAuthRE    = regexp.MustCompile(`^(\w+) +([-_~+/.a-zA-Z0-9]+=*)$`)
)

// oauthAuth is OAUTHBEARER as Kafka's OAuthBearerSaslServer: a token that
// fails validation is answered with a JSON error as a challenge; the
// client's %x01 acknowledgement then ends the exchange with that error.
type oauthAuth struct {
	v         *oauthValidator
	now       func() time.Time
	st        state
	errorJSON string // the challenge sent, awaiting the client's %x01
	principal security.Principal
	expiry    time.Time
}

func (a *oauthAuth) Step(token []byte) ([]byte, bool, error) {
	if a.st == stateDone || a.st == stateFailed {
		return nil, false, ErrIllegalState
	}
	if len(token) == 1 && token[0] == 1 && a.errorJSON != "" {
		a.st = stateFailed
		return nil, false, &AuthError{Message: a.errorJSON}
	}
	a.errorJSON = ""
	m := oauthInitialRE.FindSubmatch(token)
	if m == nil {
		a.st = stateFailed
		return nil, false, invalidCredentials(OAuthBearer)
	}
	authzid := string(m[1])
	var auth string
	var hasAuth bool
	for _, kv := range strings.Split(string(m[2]), "\x01") {
		if k, v, ok := strings.Cut(kv, "="); ok && k == "auth" {
			auth, hasAuth = v, true
		}
		// Other keys are extensions, which Kafka's validators accept as they are.
	}
	am := oauthAuthRE.FindStringSubmatch(auth)
	if !hasAuth || am == nil || !strings.EqualFold(am[1], "bearer") {
		a.st = stateFailed
		return nil, false, invalidCredentials(OAuthBearer)
	}
	tok, verr := a.v.validate(am[2], a.now())
	if verr != nil {
		a.errorJSON = verr.json()
		a.st = stateMid
		return []byte(a.errorJSON), false, nil
	}
	if authzid != "" && authzid != tok.principal {
		a.st = stateFailed
		return nil, false, &AuthError{Message: fmt.Sprintf("Authentication failed: Client requested an authorization id (%s) that is different from the token's principal name (%s)", authzid, tok.principal)}
	}
	a.principal = security.User(tok.principal)
	a.expiry = tok.expiry
	a.st = stateDone
	return []byte{}, true, nil
}

func (a *oauthAuth) Principal() security.Principal { return a.principal }
func (a *oauthAuth) Expiry() time.Time             { return a.expiry }

// validToken is what a validated token yields.
type validToken struct {
	principal string
	expiry    time.Time
}

// tokenError is a token refused: the JSON status of RFC 7628 section 3.2.2.
type tokenError struct {
	status string // invalid_token or insufficient_scope
	scope  string
	reason string // for debugging only; never sent
}

// json is Kafka's jsonErrorResponse.
func (e *tokenError) json() string {
	s := `{"status":"` + e.status + `"`
	if e.scope != "" {
		s += `, "scope":"` + e.scope + `"`
	}
	return s + "}"
}

func invalidToken(format string, args ...any) *tokenError {
	return &tokenError{status: "invalid_token", reason: fmt.Sprintf(format, args...)}
}

// oauthValidator checks OAUTHBEARER tokens: Kafka's unsecured validator
// (its unsecuredValidator* JAAS options), or a JWT against a JWKS.
type oauthValidator struct {
	unsecured bool
	// Unsecured.
	principalClaim string
	scopeClaim     string
	requiredScope  []string
	skew           time.Duration
	// JWT.
	cfg  config.OAuthBearer
	jwks *jwks
}

func newOAuthValidator(o config.OAuthBearer, jaas config.JAAS) (*oauthValidator, error) {
	v := &oauthValidator{unsecured: o.Unsecured, cfg: o, principalClaim: "sub", scopeClaim: "scope"}
	if !o.Unsecured {
		if v.cfg.SubClaimName == "" {
			v.cfg.SubClaimName = "sub"
		}
		if v.cfg.ScopeClaimName == "" {
			v.cfg.ScopeClaimName = "scope"
		}
		v.jwks = newJWKS(o.JWKSURL)
		// Kafka reads a file JWKS when the listener starts: a bad one stops the broker.
		if strings.HasPrefix(o.JWKSURL, "file:") {
			if err := v.jwks.load(time.Now()); err != nil {
				return nil, &config.ConfigError{Key: "sasl.oauthbearer.jwks.endpoint.url",
					Message: "The OAuth configuration option sasl.oauthbearer.jwks.endpoint.url: cannot load the JWKS at " + o.JWKSURL + ": " + err.Error()}
			}
		}
		return v, nil
	}
	opt := func(k string) string { return strings.TrimSpace(jaas.Options[k].Reveal()) }
	if s := opt("unsecuredValidatorPrincipalClaimName"); s != "" {
		v.principalClaim = s
	}
	if s := opt("unsecuredValidatorScopeClaimName"); s != "" {
		v.scopeClaim = s
	}
	if s := opt("unsecuredValidatorRequiredScope"); s != "" {
		v.requiredScope = strings.Fields(s)
	}
	if s := opt("unsecuredValidatorAllowableClockSkewMs"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return nil, &config.ConfigError{Key: "sasl.jaas.config",
				Message: "Allowable clock skew millis must not be negative: unsecuredValidatorAllowableClockSkewMs=" + s}
		}
		v.skew = time.Duration(n) * time.Millisecond
	}
	return v, nil
}

// maxTokenClaims bounds what a token may make the validator decode.
const maxTokenLen = 64 << 10

func (v *oauthValidator) validate(token string, now time.Time) (validToken, *tokenError) {
	if len(token) > maxTokenLen {
		return validToken{}, invalidToken("token too long")
	}
	if v.unsecured {
		return v.validateUnsecured(token, now)
	}
	return v.validateJWT(token, now)
}

// validateUnsecured is OAuthBearerUnsecuredJws with the checks of
// OAuthBearerUnsecuredValidatorCallbackHandler.
func (v *oauthValidator) validateUnsecured(token string, now time.Time) (validToken, *tokenError) {
	if strings.Contains(token, "..") {
		return validToken{}, invalidToken("Malformed compact serialization contains '..'")
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return validToken{}, invalidToken("Unsecured JWS compact serializations must have 3 dot-separated Base64URL-encoded values")
	}
	header, err := decodeJSONPart(parts[0])
	if err != nil {
		return validToken{}, invalidToken("bad header: %v", err)
	}
	claims, err := decodeJSONPart(parts[1])
	if err != nil {
		return validToken{}, invalidToken("bad claims: %v", err)
	}
	if alg, _ := header["alg"].(string); alg != "none" {
		return validToken{}, invalidToken("Unsecured JWS must have 'none' for an algorithm")
	}
	if parts[2] != "" {
		return validToken{}, invalidToken("Unsecured JWS must not contain a digital signature")
	}
	scope, ok := claimScope(claims[v.scopeClaim])
	if !ok {
		return validToken{}, invalidToken("The '%s' claim was not of type List", v.scopeClaim)
	}
	exp, ok := claimNumber(claims["exp"])
	if !ok {
		return validToken{}, invalidToken("No expiration time in JWT")
	}
	principal, _ := claims[v.principalClaim].(string)
	if strings.TrimSpace(principal) == "" {
		return validToken{}, invalidToken("No principal name in JWT claim: %s", v.principalClaim)
	}
	nowMs := float64(now.UnixMilli())
	skewMs := float64(v.skew.Milliseconds())
	iat, hasIat := claimNumber(claims["iat"])
	if _, present := claims["iat"]; present && !hasIat {
		return validToken{}, invalidToken("The iat claim had the incorrect type")
	}
	if hasIat && 1000*iat > nowMs+skewMs {
		return validToken{}, invalidToken("The Issued At value was after the indicated time plus allowable clock skew")
	}
	if nowMs-skewMs >= 1000*exp {
		return validToken{}, invalidToken("The indicated time minus allowable clock skew was on or after the Expiration Time value")
	}
	if hasIat && exp <= iat {
		return validToken{}, invalidToken("The Expiration Time time was not after the Issued At time")
	}
	for _, r := range v.requiredScope {
		if !containsString(scope, r) {
			return validToken{}, &tokenError{status: "insufficient_scope", scope: "[" + strings.Join(v.requiredScope, ", ") + "]",
				reason: "missing a required scope"}
		}
	}
	return validToken{principal: principal, expiry: time.UnixMilli(int64(math.Round(exp * 1000)))}, nil
}

func containsString(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

// decodeJSONPart decodes one base64url part of a compact JWS into a JSON object.
func decodeJSONPart(part string) (map[string]any, error) {
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(part, "="))
	if err != nil {
		return nil, err
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		return nil, err
	}
	if m == nil {
		return nil, errors.New("not a JSON object")
	}
	return m, nil
}

func claimNumber(v any) (float64, bool) {
	switch n := v.(type) {
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	case float64:
		return n, true
	}
	return 0, false
}

// claimScope is a scope claim: a string (one scope, as Kafka takes it) or a
// list of strings; absent is no scope.
func claimScope(v any) ([]string, bool) {
	switch s := v.(type) {
	case nil:
		return nil, true
	case string:
		if strings.TrimSpace(s) == "" {
			return nil, true
		}
		return []string{strings.TrimSpace(s)}, true
	case []any:
		out := make([]string, 0, len(s))
		for _, e := range s {
			if str, ok := e.(string); ok {
				out = append(out, str)
			}
		}
		return out, true
	}
	return nil, false
}

// jwtAlgs are the signature algorithms accepted (never none nor HMAC: the
// keys are public).
var jwtAlgs = []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512"}

// validateJWT is Kafka's BrokerJwtValidator: the signature by a key of the
// JWKS, exp and iat required, nbf respected, with the clock skew; the
// issuer and audience when configured; the sub claim is the principal.
func (v *oauthValidator) validateJWT(token string, now time.Time) (validToken, *tokenError) {
	opts := []jwt.ParserOption{
		jwt.WithValidMethods(jwtAlgs),
		jwt.WithLeeway(v.cfg.ClockSkew),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
		jwt.WithTimeFunc(func() time.Time { return now }),
		jwt.WithJSONNumber(),
	}
	if v.cfg.ExpectedIssuer != "" {
		opts = append(opts, jwt.WithIssuer(v.cfg.ExpectedIssuer))
	}
	if len(v.cfg.ExpectedAudience) > 0 {
		opts = append(opts, jwt.WithAudience(v.cfg.ExpectedAudience...))
	}
	claims := jwt.MapClaims{}
	_, err := jwt.NewParser(opts...).ParseWithClaims(token, claims, func(t *jwt.Token) (any, error) {
		kid, _ := t.Header["kid"].(string)
		alg, _ := t.Header["alg"].(string)
		return v.jwks.keysFor(kid, alg, now)
	})
	if err != nil {
		return validToken{}, invalidToken("%v", err)
	}
	sub, _ := claims[v.cfg.SubClaimName].(string)
	if strings.TrimSpace(sub) == "" {
		return validToken{}, invalidToken("The %s claim is required", v.cfg.SubClaimName)
	}
	exp, err := claims.GetExpirationTime()
	if err != nil || exp == nil {
		return validToken{}, invalidToken("no exp")
	}
	// Kafka's validator requires iat too (jose4j setRequireIssuedAt).
	if iat, err := claims.GetIssuedAt(); err != nil || iat == nil {
		return validToken{}, invalidToken("no iat")
	}
	return validToken{principal: strings.TrimSpace(sub), expiry: exp.Time}, nil
}
