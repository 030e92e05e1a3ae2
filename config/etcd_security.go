package config

// TLS and authentication towards etcd (Strait's etcd.* keys). Whoever
// reaches etcd can change all cluster metadata, so the embedded etcd opens
// no client listener unless etcd.listen.client.urls asks for one; these keys
// secure the listeners it does open, and the connection to an external one:
//
//	the embedded etcd (etcd's own flags):
//	  etcd.cert.file, etcd.key.file           --cert-file, --key-file: client URLs are https://
//	  etcd.trusted.ca.file                    --trusted-ca-file
//	  etcd.client.cert.auth                   --client-cert-auth: clients must present a certificate
//	  etcd.peer.cert.file, etcd.peer.key.file --peer-cert-file, --peer-key-file: peer URLs are https://
//	  etcd.peer.trusted.ca.file               --peer-trusted-ca-file
//	  etcd.peer.client.cert.auth              --peer-client-cert-auth
//	an external etcd (etcd.endpoints; etcdctl's --cert, --key, --cacert, --user):
//	  etcd.client.cert.file, etcd.client.key.file  this broker's client certificate
//	  etcd.client.trusted.ca.file                  the CA of the etcd servers (default: the system's)
//	  etcd.username, etcd.password                 etcd's auth (etcd.password is a PASSWORD)
//
// A key of one side given for the other, a TLS setting beside an http://
// URL (etcd itself would only warn and serve in the clear), an https:// URL
// without its certificate, or a file that does not load stop Parse with a
// ConfigError naming the key.

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/url"
	"os"
	"strings"
)

// EtcdSecurity are the etcd TLS and authentication settings above.
type EtcdSecurity struct {
	CertFile, KeyFile, TrustedCAFile             string // the embedded etcd's client URLs
	ClientCertAuth                               bool
	PeerCertFile, PeerKeyFile, PeerTrustedCAFile string // its peer URLs
	PeerClientCertAuth                           bool
	ClientCertFile, ClientKeyFile                string // a client of etcd.endpoints
	ClientTrustedCAFile                          string
	Username                                     string
	Password                                     Password
}

// parseEtcdSecurity reads and checks the keys above against e (the rest of
// the etcd.* keys, already parsed).
func parseEtcdSecurity(p *props, e Etcd) (EtcdSecurity, error) {
	flag := func(key string) bool { return p.has(key) && p.bool(key) } // absent: false
	s := EtcdSecurity{
		CertFile:            p.str("etcd.cert.file"),
		KeyFile:             p.str("etcd.key.file"),
		TrustedCAFile:       p.str("etcd.trusted.ca.file"),
		ClientCertAuth:      flag("etcd.client.cert.auth"),
		PeerCertFile:        p.str("etcd.peer.cert.file"),
		PeerKeyFile:         p.str("etcd.peer.key.file"),
		PeerTrustedCAFile:   p.str("etcd.peer.trusted.ca.file"),
		PeerClientCertAuth:  flag("etcd.peer.client.cert.auth"),
		ClientCertFile:      p.str("etcd.client.cert.file"),
		ClientKeyFile:       p.str("etcd.client.key.file"),
		ClientTrustedCAFile: p.str("etcd.client.trusted.ca.file"),
		Username:            p.str("etcd.username"),
		Password:            Password(p.str("etcd.password")),
	}
	if p.err != nil {
		return EtcdSecurity{}, p.err
	}
	external := len(e.Endpoints) > 0
	wrongSide := func(key, value, reason string) error {
		if value == "" {
			return nil
		}
		return invalidValue(key, value, reason)
	}
	var checks []func() error
	if external {
		const reason = "Applies only to the embedded etcd, not with etcd.endpoints"
		for _, kv := range [][2]string{{"etcd.cert.file", s.CertFile}, {"etcd.key.file", s.KeyFile},
			{"etcd.trusted.ca.file", s.TrustedCAFile}, {"etcd.peer.cert.file", s.PeerCertFile},
			{"etcd.peer.key.file", s.PeerKeyFile}, {"etcd.peer.trusted.ca.file", s.PeerTrustedCAFile}} {
			checks = append(checks, func() error { return wrongSide(kv[0], kv[1], reason) })
		}
		checks = append(checks,
			func() error {
				if s.ClientCertAuth {
					return invalidValue("etcd.client.cert.auth", "true", reason)
				}
				if s.PeerClientCertAuth {
					return invalidValue("etcd.peer.client.cert.auth", "true", reason)
				}
				return nil
			},
			func() error {
				return pairAndFiles("etcd.client.cert.file", s.ClientCertFile, "etcd.client.key.file", s.ClientKeyFile,
					"etcd.client.trusted.ca.file", s.ClientTrustedCAFile)
			},
			func() error {
				tlsKey := "etcd.client.cert.file"
				if s.ClientCertFile == "" {
					tlsKey = "etcd.client.trusted.ca.file"
				}
				return schemeMatches(e.Endpoints, "etcd.endpoints", s.ClientCertFile != "" || s.ClientTrustedCAFile != "", tlsKey, true)
			},
			func() error {
				if s.Password != "" && s.Username == "" {
					return &ConfigError{Key: "etcd.password", Message: "etcd.password is set but etcd.username is not"}
				}
				return nil
			})
	} else {
		const reason = "Applies only with etcd.endpoints (an external etcd)"
		for _, kv := range [][2]string{{"etcd.client.cert.file", s.ClientCertFile}, {"etcd.client.key.file", s.ClientKeyFile},
			{"etcd.client.trusted.ca.file", s.ClientTrustedCAFile}, {"etcd.username", s.Username}} {
			checks = append(checks, func() error { return wrongSide(kv[0], kv[1], reason) })
		}
		checks = append(checks,
			func() error {
				if s.Password != "" {
					return &ConfigError{Key: "etcd.password", Message: "etcd.password applies only with etcd.endpoints (an external etcd)"}
				}
				return nil
			},
			func() error {
				return pairAndFiles("etcd.cert.file", s.CertFile, "etcd.key.file", s.KeyFile, "etcd.trusted.ca.file", s.TrustedCAFile)
			},
			func() error {
				return pairAndFiles("etcd.peer.cert.file", s.PeerCertFile, "etcd.peer.key.file", s.PeerKeyFile,
					"etcd.peer.trusted.ca.file", s.PeerTrustedCAFile)
			},
			func() error {
				if s.ClientCertAuth && s.TrustedCAFile == "" {
					return invalidValue("etcd.client.cert.auth", "true", "Client certificate authentication needs etcd.trusted.ca.file")
				}
				if s.PeerClientCertAuth && s.PeerTrustedCAFile == "" {
					return invalidValue("etcd.peer.client.cert.auth", "true", "Client certificate authentication needs etcd.peer.trusted.ca.file")
				}
				return nil
			},
			func() error {
				return schemeMatches(e.ListenClientURLs, "etcd.listen.client.urls", s.CertFile != "", "etcd.cert.file", false)
			},
			func() error {
				if err := schemeMatches(e.AdvertiseClientURLs, "etcd.advertise.client.urls", s.CertFile != "", "etcd.cert.file", false); err != nil {
					return err
				}
				return schemeMatches(e.ListenPeerURLs, "etcd.listen.peer.urls", s.PeerCertFile != "", "etcd.peer.cert.file", false)
			},
			func() error {
				if err := schemeMatches(e.InitialAdvertisePeerURLs, "etcd.initial.advertise.peer.urls", s.PeerCertFile != "", "etcd.peer.cert.file", false); err != nil {
					return err
				}
				return schemeMatches(clusterURLs(e.InitialCluster), "etcd.initial.cluster", s.PeerCertFile != "", "etcd.peer.cert.file", false)
			},
			func() error {
				if s.PeerCertFile != "" && e.InitialCluster == "" && len(e.ListenPeerURLs) == 0 {
					return &ConfigError{Key: "etcd.peer.cert.file", Message: "etcd.peer.cert.file is set but the embedded etcd has no peers " +
						"(neither etcd.initial.cluster nor etcd.listen.peer.urls is set)"}
				}
				return nil
			})
	}
	for _, check := range checks {
		if err := check(); err != nil {
			return EtcdSecurity{}, err
		}
	}
	return s, nil
}

// pairAndFiles checks a certificate and its key go together and load, and
// that a CA file holds at least one PEM certificate.
func pairAndFiles(certKey, cert, keyKey, key, caKey, ca string) error {
	switch {
	case cert != "" && key == "":
		return invalidValue(certKey, cert, keyKey+" must be set too")
	case cert == "" && key != "":
		return invalidValue(keyKey, key, certKey+" must be set too")
	}
	for _, f := range [][2]string{{certKey, cert}, {keyKey, key}, {caKey, ca}} {
		if f[1] == "" {
			continue
		}
		if _, err := os.ReadFile(f[1]); err != nil {
			return invalidValue(f[0], f[1], "Could not read the file: "+err.Error())
		}
	}
	if cert != "" {
		if _, err := tls.LoadX509KeyPair(cert, key); err != nil {
			return invalidValue(certKey, cert, "Could not load the certificate with the key of "+keyKey+": "+err.Error())
		}
	}
	if ca != "" {
		pem, _ := os.ReadFile(ca)
		if !x509.NewCertPool().AppendCertsFromPEM(pem) {
			return invalidValue(caKey, ca, "No PEM certificate in the file")
		}
	}
	return nil
}

// schemeMatches checks URLs are https:// exactly when a TLS setting is
// given. A server (external false) must have its certificate for https://;
// a client (external true) may trust the system's roots without any setting.
func schemeMatches(urls []string, urlKey string, haveTLS bool, tlsKey string, external bool) error {
	for _, raw := range urls {
		u, err := url.Parse(raw)
		if err != nil {
			continue // the controller names the malformed URL
		}
		switch {
		case haveTLS && u.Scheme != "https":
			return &ConfigError{Key: tlsKey, Message: fmt.Sprintf("%s is set but %s has %s: use https:// URLs with TLS", tlsKey, urlKey, raw)}
		case !haveTLS && u.Scheme == "https" && !external:
			return &ConfigError{Key: urlKey, Message: fmt.Sprintf("%s has %s but %s is not set", urlKey, raw, tlsKey)}
		}
	}
	if haveTLS && !external && len(urls) == 0 && urlKey == "etcd.listen.client.urls" {
		return &ConfigError{Key: tlsKey, Message: tlsKey + " is set but etcd.listen.client.urls is not: the embedded etcd has no client listener to secure"}
	}
	return nil
}

// clusterURLs are the URLs of etcd.initial.cluster (name=url,...).
func clusterURLs(initialCluster string) []string {
	var out []string
	for _, m := range parseCsvList(initialCluster) {
		if _, u, ok := strings.Cut(m, "="); ok {
			out = append(out, strings.TrimSpace(u))
		}
	}
	return out
}
