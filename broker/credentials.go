package broker

import "github.com/strait/strait/security"

// credentials are what the SASL mechanisms check clients against: SCRAM
// credentials and delegation tokens from the controller's cache.
// TODO(ctrl): from the controller.
func (s *Server) credentials() security.Credentials { return noCredentials{} }

type noCredentials struct{}

func (noCredentials) ScramCredential(string, string) (security.ScramCredential, bool) {
	return security.ScramCredential{}, false
}
func (noCredentials) DelegationToken(string) (security.DelegationToken, bool) {
	return security.DelegationToken{}, false
}
