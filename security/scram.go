package security

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/sha256"
	"crypto/sha512"
	"fmt"
	"hash"
)

// SCRAM mechanisms and their bounds on iterations (Kafka's ScramMechanism:
// a credential with fewer than 4096 or more than 16384 iterations is refused).
const (
	ScramSHA256 = "SCRAM-SHA-256"
	ScramSHA512 = "SCRAM-SHA-512"

	ScramMinIterations = 4096
	ScramMaxIterations = 16384
)

// ScramHash is mechanism's hash, or nil for a name that is not SCRAM.
func ScramHash(mechanism string) func() hash.Hash {
	switch mechanism {
	case ScramSHA256:
		return sha256.New
	case ScramSHA512:
		return sha512.New
	}
	return nil
}

// SaltedPassword is RFC 5802's Hi(password, salt, iterations): PBKDF2 with
// the mechanism's HMAC.
func SaltedPassword(mechanism string, password, salt []byte, iterations int32) ([]byte, error) {
	h := ScramHash(mechanism)
	if h == nil {
		return nil, fmt.Errorf("unknown SCRAM mechanism %q", mechanism)
	}
	return pbkdf2.Key(h, string(password), salt, int(iterations), h().Size())
}

// NewScramCredential is the credential stored for a salted password
// (AlterUserScramCredentials carries the salt and the salted password,
// computed by the client): StoredKey = H(HMAC(salted, "Client Key")),
// ServerKey = HMAC(salted, "Server Key").
func NewScramCredential(mechanism string, salt, saltedPassword []byte, iterations int32) (ScramCredential, error) {
	h := ScramHash(mechanism)
	if h == nil {
		return ScramCredential{}, fmt.Errorf("unknown SCRAM mechanism %q", mechanism)
	}
	mac := func(key []byte, msg string) []byte {
		m := hmac.New(h, key)
		m.Write([]byte(msg))
		return m.Sum(nil)
	}
	clientKey := mac(saltedPassword, "Client Key")
	sum := h()
	sum.Write(clientKey)
	return ScramCredential{
		Mechanism:  mechanism,
		Salt:       append([]byte(nil), salt...),
		StoredKey:  sum.Sum(nil),
		ServerKey:  mac(saltedPassword, "Server Key"),
		Iterations: iterations,
	}, nil
}
