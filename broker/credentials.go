package broker

import (
	"github.com/strait/strait/config"
	"github.com/strait/strait/controller"
	"github.com/strait/strait/security"
)

// credentials are what the SASL mechanisms check clients against: SCRAM
// credentials and delegation tokens from the controller's watch cache (no
// etcd round trip per authentication). Before the controller exists there
// are none.
func (s *Server) credentials() security.Credentials {
	if s.ctrl == nil {
		return noCredentials{}
	}
	return s.ctrl
}

type noCredentials struct{}

func (noCredentials) ScramCredential(string, string) (security.ScramCredential, bool) {
	return security.ScramCredential{}, false
}
func (noCredentials) DelegationToken(string) (security.DelegationToken, bool) {
	return security.DelegationToken{}, false
}

// controllerTokenConfig is the controller's view of delegation.token.*.
func controllerTokenConfig(d config.DelegationTokens) controller.TokenConfig {
	return controller.TokenConfig{SecretKey: d.SecretKey.Reveal(), MaxLifetime: d.MaxLifetime,
		ExpiryTime: d.ExpiryTime, ExpiryCheckInterval: d.ExpiryCheckInterval}
}

// controllerEtcdSecurity is the controller's view of the etcd TLS and
// authentication keys.
func controllerEtcdSecurity(e config.EtcdSecurity) controller.EtcdSecurity {
	return controller.EtcdSecurity{
		CertFile: e.CertFile, KeyFile: e.KeyFile, TrustedCAFile: e.TrustedCAFile, ClientCertAuth: e.ClientCertAuth,
		PeerCertFile: e.PeerCertFile, PeerKeyFile: e.PeerKeyFile, PeerTrustedCAFile: e.PeerTrustedCAFile,
		PeerClientCertAuth: e.PeerClientCertAuth,
		ClientCertFile:     e.ClientCertFile, ClientKeyFile: e.ClientKeyFile, ClientTrustedCAFile: e.ClientTrustedCAFile,
		Username: e.Username, Password: e.Password.Reveal(),
	}
}

// allowTokenRequests is Kafka's KafkaApis.allowTokenRequests: delegation
// token requests need a connection authenticated by SASL or by a client
// certificate, and not by a delegation token (a token cannot beget,
// renew, expire or list tokens).
func allowTokenRequests(c *conn) bool {
	p, proto := c.principal(), c.securityProtocol()
	anonymous := p.Type == security.Anonymous.Type && p.Name == security.Anonymous.Name
	return !p.TokenAuthenticated && proto != "PLAINTEXT" && !(proto == "SSL" && anonymous)
}
