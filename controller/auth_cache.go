package controller

// The authentication records in etcd and their place in the watch cache:
// SCRAM credentials (credentials.go) and delegation tokens (tokens.go).
//
//	<prefix>/scram/<user>/<mechanism>        {"salt","storedKey","serverKey","iterations"} (bytes as base64):
//	                                         Kafka's UserScramCredentialRecord, never the password
//	<prefix>/delegation_tokens/<token id>    {"tokenId","owner":{"type","name"},"requester":{...},
//	                                          "renewers":[{...}],"issueTimestampMs","expiryTimestampMs",
//	                                          "maxTimestampMs"}: Kafka's DelegationTokenRecord
//
// A user name may contain '/': the mechanism is the last segment. As in
// Kafka's metadata log, a token's HMAC (the password a client authenticates
// with) is not stored: each broker computes it from the token id and
// delegation.token.secret.key when its cache loads the token, so reading etcd
// yields no usable secret.
//
// ACLs (acls.go) are kept beside them, as an indexed acl.Set rebuilt when
// they change.
//
// The cache keeps them in every snapshot: a SASL exchange looks its user or
// token up without an etcd round trip, and sees a change as soon as the watch
// applies it.

import (
	"crypto/hmac"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"

	"github.com/strait/strait/security"
	"github.com/strait/strait/security/acl"
)

const (
	scramSegment  = "scram/"
	tokensSegment = "delegation_tokens/"
)

func (k keyspace) scramUsers() string { return k.root() + scramSegment }
func (k keyspace) scram(user, mechanism string) string {
	return k.scramUsers() + user + "/" + mechanism
}
func (k keyspace) tokens() string         { return k.root() + tokensSegment }
func (k keyspace) token(id string) string { return k.tokens() + id }

// parseAuthKey classifies rest (a key without the root) under scram/ or
// delegation_tokens/.
func parseAuthKey(rest string) parsedKey {
	if r, ok := strings.CutPrefix(rest, scramSegment); ok {
		i := strings.LastIndexByte(r, '/')
		if i <= 0 || security.ScramHash(r[i+1:]) == nil {
			return parsedKey{}
		}
		return parsedKey{kind: keyScram, user: r[:i], mechanism: r[i+1:]}
	}
	if id, ok := strings.CutPrefix(rest, tokensSegment); ok && id != "" && !strings.Contains(id, "/") {
		return parsedKey{kind: keyToken, tokenID: id}
	}
	return parsedKey{}
}

// scramRecord is the JSON value of a scram/<user>/<mechanism> key.
type scramRecord struct {
	Salt       []byte `json:"salt"`
	StoredKey  []byte `json:"storedKey"`
	ServerKey  []byte `json:"serverKey"`
	Iterations int32  `json:"iterations"`
}

// principalRecord is a principal in a token record.
type principalRecord struct {
	Type string `json:"type"`
	Name string `json:"name"`
}

func toPrincipalRecord(p security.Principal) principalRecord {
	return principalRecord{Type: p.Type, Name: p.Name}
}

func (p principalRecord) principal() security.Principal {
	return security.Principal{Type: p.Type, Name: p.Name}
}

// tokenRecord is the JSON value of a delegation_tokens/<id> key.
type tokenRecord struct {
	TokenID   string            `json:"tokenId"`
	Owner     principalRecord   `json:"owner"`
	Requester principalRecord   `json:"requester"`
	Renewers  []principalRecord `json:"renewers"`
	IssueMs   int64             `json:"issueTimestampMs"`
	ExpiryMs  int64             `json:"expiryTimestampMs"`
	MaxMs     int64             `json:"maxTimestampMs"`
}

// cachedToken is a token as the cache holds it.
type cachedToken struct {
	rec    tokenRecord
	hmac   []byte // nil when delegation tokens are disabled (no secret)
	modRev int64
}

func (t *cachedToken) token() security.DelegationToken {
	out := security.DelegationToken{
		TokenID:    t.rec.TokenID,
		HMAC:       append([]byte(nil), t.hmac...),
		Owner:      t.rec.Owner.principal(),
		Requester:  t.rec.Requester.principal(),
		IssueTime:  time.UnixMilli(t.rec.IssueMs),
		ExpiryTime: time.UnixMilli(t.rec.ExpiryMs),
		MaxTime:    time.UnixMilli(t.rec.MaxMs),
	}
	for _, r := range t.rec.Renewers {
		out.Renewers = append(out.Renewers, r.principal())
	}
	return out
}

// ownerOrRenewer is Kafka's TokenInformation.ownerOrRenewer.
func (r tokenRecord) ownerOrRenewer(p security.Principal) bool {
	if r.Owner.principal() == plainPrincipal(p) {
		return true
	}
	for _, rn := range r.Renewers {
		if rn.principal() == plainPrincipal(p) {
			return true
		}
	}
	return false
}

// plainPrincipal is p without the token-authenticated mark: Kafka's
// KafkaPrincipal.equals compares type and name only.
func plainPrincipal(p security.Principal) security.Principal {
	return security.Principal{Type: p.Type, Name: p.Name}
}

// tokenHMAC is Kafka's DelegationTokenManager.createHmac: HmacSHA512 keyed
// with the secret's UTF-8 bytes over the token id's.
func tokenHMAC(secret []byte, tokenID string) []byte {
	m := hmac.New(sha512.New, secret)
	m.Write([]byte(tokenID))
	return m.Sum(nil)
}

// authSnapshot is the immutable view of the records in one metadataSnapshot.
type authSnapshot struct {
	scram  map[string]map[string]security.ScramCredential // user -> mechanism -> credential
	tokens map[string]*cachedToken                        // by token id
	byHMAC map[string]*cachedToken                        // by the base64 of the HMAC
	acls   *acl.Set
}

var emptyAuthSnapshot = &authSnapshot{
	scram:  map[string]map[string]security.ScramCredential{},
	tokens: map[string]*cachedToken{},
	byHMAC: map[string]*cachedToken{},
	acls:   acl.EmptySet,
}

// authState is the applier's mutable copy; snapshot copies it when dirty.
type authState struct {
	secret []byte // delegation.token.secret.key, set once before Start
	scram  map[string]map[string]security.ScramCredential
	tokens map[string]*cachedToken
	acls   map[string]acl.Binding // by id
	dirty  bool
	// aclsDirty: the ACLs changed, so the next snapshot re-indexes them
	// (credentials changing alone do not).
	aclsDirty bool
	aclSet    *acl.Set
}

func newAuthState() authState {
	return authState{scram: map[string]map[string]security.ScramCredential{}, tokens: map[string]*cachedToken{},
		acls: map[string]acl.Binding{}, aclSet: acl.EmptySet}
}

func (a *authState) reset() {
	a.scram = map[string]map[string]security.ScramCredential{}
	a.tokens = map[string]*cachedToken{}
	a.acls = map[string]acl.Binding{}
	a.dirty, a.aclsDirty = true, true
}

func (a *authState) put(pk parsedKey, kv *mvccpb.KeyValue, log *slog.Logger) {
	switch pk.kind {
	case keyScram:
		var r scramRecord
		if err := json.Unmarshal(kv.Value, &r); err != nil {
			log.Warn("ignoring undecodable SCRAM credential", "user", pk.user, "mechanism", pk.mechanism, "err", err)
			return
		}
		if a.scram[pk.user] == nil {
			a.scram[pk.user] = map[string]security.ScramCredential{}
		}
		a.scram[pk.user][pk.mechanism] = security.ScramCredential{Mechanism: pk.mechanism, Salt: r.Salt,
			StoredKey: r.StoredKey, ServerKey: r.ServerKey, Iterations: r.Iterations}
	case keyToken:
		var r tokenRecord
		if err := json.Unmarshal(kv.Value, &r); err != nil || r.TokenID != pk.tokenID {
			log.Warn("ignoring undecodable delegation token", "token.id", pk.tokenID, "err", err)
			return
		}
		t := &cachedToken{rec: r, modRev: kv.ModRevision}
		if len(a.secret) > 0 {
			t.hmac = tokenHMAC(a.secret, r.TokenID)
		}
		a.tokens[pk.tokenID] = t
	case keyACL:
		b, err := decodeACL(kv.Value)
		if err != nil {
			log.Warn("ignoring undecodable ACL", "acl.id", pk.aclID, "err", err)
			return
		}
		a.acls[pk.aclID] = b
		a.aclsDirty = true
	}
	a.dirty = true
}

func (a *authState) delete(pk parsedKey) {
	switch pk.kind {
	case keyScram:
		if m := a.scram[pk.user]; m != nil {
			delete(m, pk.mechanism)
			if len(m) == 0 {
				delete(a.scram, pk.user)
			}
		}
	case keyToken:
		delete(a.tokens, pk.tokenID)
	case keyACL:
		delete(a.acls, pk.aclID)
		a.aclsDirty = true
	}
	a.dirty = true
}

// snapshot copies the state (the credentials and tokens themselves are never
// modified once cached, so they are shared) and clears dirty.
func (a *authState) snapshot() *authSnapshot {
	s := &authSnapshot{
		scram:  make(map[string]map[string]security.ScramCredential, len(a.scram)),
		tokens: maps.Clone(a.tokens),
		byHMAC: make(map[string]*cachedToken, len(a.tokens)),
	}
	if a.aclsDirty {
		a.aclSet = acl.NewSet(slices.Collect(maps.Values(a.acls)))
		a.aclsDirty = false
	}
	s.acls = a.aclSet
	for user, m := range a.scram {
		s.scram[user] = maps.Clone(m)
	}
	for _, t := range a.tokens {
		if t.hmac != nil {
			s.byHMAC[base64.StdEncoding.EncodeToString(t.hmac)] = t
		}
	}
	a.dirty = false
	return s
}

// ScramCredential implements security.Credentials from the cache.
func (c *Controller) ScramCredential(mechanism, user string) (security.ScramCredential, bool) {
	cred, ok := c.cache.snapshot().auth.scram[user][mechanism]
	if !ok {
		return security.ScramCredential{}, false
	}
	return cred, true
}

// DelegationToken implements security.Credentials from the cache: the token
// with its HMAC, expired or not (the mechanism checks the expiry). With
// delegation tokens disabled (no delegation.token.secret.key) there is none.
func (c *Controller) DelegationToken(tokenID string) (security.DelegationToken, bool) {
	t := c.cache.snapshot().auth.tokens[tokenID]
	if t == nil || t.hmac == nil {
		return security.DelegationToken{}, false
	}
	return t.token(), true
}

var _ security.Credentials = (*Controller)(nil)

// jsonValue encodes a record of plain fields (which cannot fail).
func jsonValue(v any) (string, error) {
	out, err := json.Marshal(v)
	return string(out), err
}
