package controller

// TLS and authentication towards etcd. Who can reach etcd can change every
// piece of cluster metadata (topics, leaders, SCRAM credentials, delegation
// tokens), so:
//
//   - the embedded etcd opens no client listener unless
//     etcd.listen.client.urls names one: the broker talks to it in process
//     (v3client, no socket at all), and only tools or brokers using
//     etcd.endpoints need a URL. Its TLS settings are etcd's own flags with
//     an "etcd." prefix: etcd.cert.file, etcd.key.file, etcd.trusted.ca.file,
//     etcd.client.cert.auth for client URLs (https:// then), and
//     etcd.peer.cert.file, etcd.peer.key.file, etcd.peer.trusted.ca.file,
//     etcd.peer.client.cert.auth for peer URLs;
//   - a client of an external etcd (etcd.endpoints, https:// URLs) presents
//     etcd.client.cert.file and etcd.client.key.file, trusts
//     etcd.client.trusted.ca.file (else the system roots), and logs in with
//     etcd.username and etcd.password when etcd's auth is enabled.

import (
	"crypto/tls"
	"fmt"
	"log/slog"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	"go.etcd.io/etcd/server/v3/embed"
)

// EtcdSecurity is TLS and authentication towards etcd; the fields are named
// after their keys.
type EtcdSecurity struct {
	// The embedded member's client URLs (etcd's --cert-file, --key-file,
	// --trusted-ca-file, --client-cert-auth).
	CertFile, KeyFile, TrustedCAFile string
	ClientCertAuth                   bool
	// The embedded member's peer URLs (--peer-cert-file, ...).
	PeerCertFile, PeerKeyFile, PeerTrustedCAFile string
	PeerClientCertAuth                           bool

	// A client of an external etcd (etcd.endpoints).
	ClientCertFile, ClientKeyFile, ClientTrustedCAFile string
	Username                                           string
	Password                                           string // secret: never logged
}

// validate checks the settings fit the etcd in use (external or embedded);
// config.Parse checks the same with Kafka-style messages, and that the files
// load.
func (s EtcdSecurity) validate(external bool) error {
	embeddedKeys := map[string]string{
		"etcd.cert.file": s.CertFile, "etcd.key.file": s.KeyFile, "etcd.trusted.ca.file": s.TrustedCAFile,
		"etcd.peer.cert.file": s.PeerCertFile, "etcd.peer.key.file": s.PeerKeyFile, "etcd.peer.trusted.ca.file": s.PeerTrustedCAFile,
	}
	externalKeys := map[string]string{
		"etcd.client.cert.file": s.ClientCertFile, "etcd.client.key.file": s.ClientKeyFile,
		"etcd.client.trusted.ca.file": s.ClientTrustedCAFile, "etcd.username": s.Username,
	}
	check := func(keys map[string]string, what string) error {
		for k, v := range keys {
			if v != "" {
				return fmt.Errorf("controller: %s applies only %s", k, what)
			}
		}
		return nil
	}
	if external {
		if err := check(embeddedKeys, "to the embedded etcd, not with etcd.endpoints"); err != nil {
			return err
		}
		if s.ClientCertAuth || s.PeerClientCertAuth {
			return fmt.Errorf("controller: etcd.client.cert.auth and etcd.peer.client.cert.auth apply only to the embedded etcd")
		}
	} else if err := check(externalKeys, "with etcd.endpoints (an external etcd)"); err != nil {
		return err
	}
	if (s.CertFile == "") != (s.KeyFile == "") {
		return fmt.Errorf("controller: etcd.cert.file and etcd.key.file go together")
	}
	if (s.PeerCertFile == "") != (s.PeerKeyFile == "") {
		return fmt.Errorf("controller: etcd.peer.cert.file and etcd.peer.key.file go together")
	}
	if (s.ClientCertFile == "") != (s.ClientKeyFile == "") {
		return fmt.Errorf("controller: etcd.client.cert.file and etcd.client.key.file go together")
	}
	if s.ClientCertAuth && s.TrustedCAFile == "" {
		return fmt.Errorf("controller: etcd.client.cert.auth needs etcd.trusted.ca.file")
	}
	if s.PeerClientCertAuth && s.PeerTrustedCAFile == "" {
		return fmt.Errorf("controller: etcd.peer.client.cert.auth needs etcd.peer.trusted.ca.file")
	}
	if s.Password != "" && s.Username == "" {
		return fmt.Errorf("controller: etcd.password needs etcd.username")
	}
	return nil
}

// serverTLS is the embedded member's client-side TLS.
func (s EtcdSecurity) serverTLS() transport.TLSInfo {
	return transport.TLSInfo{CertFile: s.CertFile, KeyFile: s.KeyFile, TrustedCAFile: s.TrustedCAFile,
		ClientCertAuth: s.ClientCertAuth}
}

// peerTLS is the embedded member's peer TLS.
func (s EtcdSecurity) peerTLS() transport.TLSInfo {
	return transport.TLSInfo{CertFile: s.PeerCertFile, KeyFile: s.PeerKeyFile, TrustedCAFile: s.PeerTrustedCAFile,
		ClientCertAuth: s.PeerClientCertAuth}
}

// applyEmbedded sets the member's TLS on an embed.Config.
func (s EtcdSecurity) applyEmbedded(cfg *embed.Config) {
	cfg.ClientTLSInfo = s.serverTLS()
	cfg.PeerTLSInfo = s.peerTLS()
}

// clientTLS is the TLS configuration of a client of an external etcd, nil
// without any client TLS setting (the endpoints then must be http://).
func (s EtcdSecurity) clientTLS() (*tls.Config, error) {
	if s.ClientCertFile == "" && s.ClientTrustedCAFile == "" {
		return nil, nil
	}
	// Without a certificate it presents none and only trusts the CA.
	info := transport.TLSInfo{CertFile: s.ClientCertFile, KeyFile: s.ClientKeyFile, TrustedCAFile: s.ClientTrustedCAFile}
	cfg, err := info.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("controller: etcd.client.cert.file / etcd.client.key.file / etcd.client.trusted.ca.file: %w", err)
	}
	return cfg, nil
}

// String keeps the password out of anything that prints the settings.
func (s EtcdSecurity) String() string {
	hidden := ""
	if s.Password != "" {
		hidden = "[hidden]"
	}
	return fmt.Sprintf("{cert=%q key=%q ca=%q clientCertAuth=%v peerCert=%q peerKey=%q peerCA=%q peerClientCertAuth=%v "+
		"clientCert=%q clientKey=%q clientCA=%q user=%q password=%s}", s.CertFile, s.KeyFile, s.TrustedCAFile, s.ClientCertAuth,
		s.PeerCertFile, s.PeerKeyFile, s.PeerTrustedCAFile, s.PeerClientCertAuth, s.ClientCertFile, s.ClientKeyFile,
		s.ClientTrustedCAFile, s.Username, hidden)
}

// LogValue keeps the password out of slog output.
func (s EtcdSecurity) LogValue() slog.Value { return slog.StringValue(s.String()) }
