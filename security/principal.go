package security

// Principal is an authenticated identity, Kafka's KafkaPrincipal: a type
// (User) and a name.
type Principal struct {
	Type string // "User"
	Name string
	// TokenAuthenticated is set when the connection authenticated with a
	// delegation token (Kafka's KafkaPrincipal.tokenAuthenticated): such a
	// principal may not create or renew tokens.
	TokenAuthenticated bool
}

// Anonymous is the principal of a PLAINTEXT connection, and of a TLS one
// without a client certificate (Kafka's KafkaPrincipal.ANONYMOUS).
var Anonymous = Principal{Type: "User", Name: "ANONYMOUS"}

// User is the principal User:name.
func User(name string) Principal { return Principal{Type: "User", Name: name} }

// String is the principal as Kafka writes it: User:alice.
func (p Principal) String() string { return p.Type + ":" + p.Name }
