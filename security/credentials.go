package security

import "time"

// ScramCredential is a user's SCRAM credential for one mechanism (RFC 5802:
// the salt, the iteration count, StoredKey and ServerKey; never the
// password), as AlterUserScramCredentials stores it.
type ScramCredential struct {
	Mechanism  string // SCRAM-SHA-256 or SCRAM-SHA-512
	Salt       []byte
	StoredKey  []byte
	ServerKey  []byte
	Iterations int32
}

// DelegationToken is a delegation token's record (Kafka's TokenInformation
// with its HMAC).
type DelegationToken struct {
	TokenID    string
	HMAC       []byte
	Owner      Principal
	Requester  Principal
	Renewers   []Principal
	IssueTime  time.Time
	ExpiryTime time.Time
	MaxTime    time.Time
}

// Credentials are where SASL mechanisms look up what a client must prove:
// the controller implements them from its etcd watch cache.
type Credentials interface {
	// ScramCredential is user's credential for mechanism, if any.
	ScramCredential(mechanism, user string) (ScramCredential, bool)
	// DelegationToken is the token with id tokenID, if any (expired ones
	// included: the mechanism checks the expiry).
	DelegationToken(tokenID string) (DelegationToken, bool)
}
