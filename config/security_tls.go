package config

// TLS: the ssl.* settings of a listener.

// TLS is a listener's ssl.* settings, each the listener's own value or the
// broker-wide one.
type TLS struct {
	ClientAuth       string   // ssl.client.auth: none, requested, required
	Protocol         string   // ssl.protocol
	EnabledProtocols []string // ssl.enabled.protocols
	CipherSuites     []string // ssl.cipher.suites (empty: Go's defaults)

	KeystoreType             string   // ssl.keystore.type: JKS, PKCS12, PEM
	KeystoreLocation         string   // ssl.keystore.location
	KeystorePassword         Password // ssl.keystore.password
	KeyPassword              Password // ssl.key.password
	KeystoreKey              Password // ssl.keystore.key (PEM)
	KeystoreCertificateChain string   // ssl.keystore.certificate.chain (PEM)

	TruststoreType         string   // ssl.truststore.type
	TruststoreLocation     string   // ssl.truststore.location
	TruststorePassword     Password // ssl.truststore.password
	TruststoreCertificates string   // ssl.truststore.certificates (PEM)

	PrincipalMappingRules string // ssl.principal.mapping.rules
	// EndpointIdentificationAlgorithm is ssl.endpoint.identification.algorithm
	// (https): whether this broker, as a client of another, checks the
	// other's host name.
	EndpointIdentificationAlgorithm string
}

// parseTLS reads listener's ssl.* settings. TODO(tls): all of it.
func parseTLS(p *props, listener string) (*TLS, error) {
	return &TLS{}, nil
}
