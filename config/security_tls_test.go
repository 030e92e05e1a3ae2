package config

import (
	"errors"
	"slices"
	"testing"
)

// sslListeners is a broker with an SSL and a SASL_SSL listener, for the
// ssl.* cases.
var sslListeners = map[string]string{
	"listeners":                      "PLAINTEXT://127.0.0.1:9092,SSL://127.0.0.1:9093,SASL_SSL://127.0.0.1:9094",
	"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_SSL:SASL_SSL",
	// A SASL listener needs a mechanism Strait serves (Kafka's default,
	// GSSAPI, is refused) and its JAAS config.
	"sasl.enabled.mechanisms":                       "PLAIN",
	"listener.name.sasl_ssl.plain.sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret";`,
}

func withSSL(kv ...string) map[string]string {
	m := map[string]string{}
	for k, v := range sslListeners {
		m[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

func init() {
	invalidCases = append(invalidCases, []struct {
		key, value string
		extra      map[string]string
		msg        string
	}{
		{"ssl.client.auth", "always", sslListeners, "Invalid value always for configuration ssl.client.auth: String must be one of: required, requested, none"},
		{"ssl.protocol", "TLSv1.9", sslListeners, "Invalid value TLSv1.9 for configuration ssl.protocol: TLSv1.9 SSLContext not available"},
		{"ssl.enabled.protocols", "TLSv1.1,TLSv1.2", sslListeners, "Invalid value TLSv1.1 for configuration ssl.enabled.protocols: Unsupported protocol TLSv1.1 (Strait supports TLSv1.2, TLSv1.3)"},
		{"ssl.cipher.suites", "TLS_RSA_WITH_RC4_128_SHA", sslListeners, "Invalid value TLS_RSA_WITH_RC4_128_SHA for configuration ssl.cipher.suites: Insecure CipherSuite: TLS_RSA_WITH_RC4_128_SHA is not supported"},
		{"ssl.keystore.type", "PKCS11", sslListeners, "Invalid value PKCS11 for configuration ssl.keystore.type: String must be one of: JKS, PKCS12, PEM"},
		{"ssl.truststore.type", "BKS", sslListeners, "Invalid value BKS for configuration ssl.truststore.type: String must be one of: JKS, PKCS12, PEM"},
		{"ssl.principal.mapping.rules", "RULE:(.*/$1/,DEFAULT", sslListeners, "Invalid value RULE:(.*/$1/,DEFAULT for configuration ssl.principal.mapping.rules: Invalid rule: RULE:(.*/$1/: error parsing regexp: missing closing ): `(.*`"},
		{"ssl.endpoint.identification.algorithm", "ldap", sslListeners, "Invalid value ldap for configuration ssl.endpoint.identification.algorithm: Unknown identification algorithm (only https, or empty to disable host name verification)"},
	}...)
	// Free strings and secrets: any value is valid at parse time; a store
	// that does not load stops the listener (security.NewServerTLS),
	// naming the key.
	anyValueOfItsType = append(anyValueOfItsType,
		"ssl.keystore.location", "ssl.keystore.password", "ssl.key.password", "ssl.keystore.key",
		"ssl.keystore.certificate.chain", "ssl.truststore.location", "ssl.truststore.password",
		"ssl.truststore.certificates", "ssl.allow.dn.changes", "ssl.allow.san.changes")
}

// TestTLSDefaultsAndListenerOverrides: Kafka's defaults; a listener's own
// ssl.* value wins over the broker-wide one, and Keys says where each came
// from.
func TestTLSDefaultsAndListenerOverrides(t *testing.T) {
	c, _, err := Parse(withSSL(
		"ssl.keystore.location", "/broker.jks",
		"listener.name.ssl.ssl.keystore.location", "/ssl.p12",
		"listener.name.ssl.ssl.keystore.type", "pkcs12",
		"ssl.keystore.password", "secret",
		"ssl.cipher.suites", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, TLS_AES_128_GCM_SHA256",
	))
	if err != nil {
		t.Fatal(err)
	}
	ssl := c.Security.Listeners["SSL"].TLS
	if ssl == nil {
		t.Fatal("no TLS settings for the SSL listener")
	}
	if ssl.ClientAuth != "none" || ssl.Protocol != "TLSv1.3" || !slices.Equal(ssl.EnabledProtocols, []string{"TLSv1.2", "TLSv1.3"}) ||
		ssl.TruststoreType != "JKS" || ssl.EndpointIdentificationAlgorithm != "https" || ssl.PrincipalMappingRules != "DEFAULT" {
		t.Errorf("defaults: %+v", ssl)
	}
	if ssl.KeystoreLocation != "/ssl.p12" || ssl.KeystoreType != "PKCS12" || ssl.KeystorePassword.Reveal() != "secret" {
		t.Errorf("overrides: %+v", ssl)
	}
	if k := ssl.Key("ssl.keystore.location"); k != "listener.name.ssl.ssl.keystore.location" {
		t.Errorf("keystore location key %q", k)
	}
	if k := ssl.Key("ssl.keystore.password"); k != "ssl.keystore.password" {
		t.Errorf("keystore password key %q", k)
	}
	if !slices.Equal(ssl.CipherSuites, []string{"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "TLS_AES_128_GCM_SHA256"}) {
		t.Errorf("cipher suites %q", ssl.CipherSuites)
	}
	if got := ssl.KeystorePassword.String(); got != "[hidden]" {
		t.Errorf("password prints as %q", got)
	}
	sasl := c.Security.Listeners["SASL_SSL"].TLS
	if sasl == nil || sasl.KeystoreLocation != "/broker.jks" || sasl.KeystoreType != "JKS" {
		t.Errorf("SASL_SSL listener: %+v", sasl)
	}
	if c.Security.Listeners["PLAINTEXT"].TLS != nil {
		t.Error("PLAINTEXT listener has TLS settings")
	}
}

// TestSASLSSLClientAuthIsTheListenersOwn: on a SASL_SSL listener only
// listener.name.<l>.ssl.client.auth applies (KIP-684); on an SSL listener
// the broker-wide value does.
func TestSASLSSLClientAuthIsTheListenersOwn(t *testing.T) {
	c, _, err := Parse(withSSL("ssl.client.auth", "required"))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Security.Listeners["SSL"].TLS.ClientAuth; got != "required" {
		t.Errorf("SSL listener: %q", got)
	}
	if got := c.Security.Listeners["SASL_SSL"].TLS.ClientAuth; got != "none" {
		t.Errorf("SASL_SSL listener with only the broker-wide value: %q, want none", got)
	}
	c, _, err = Parse(withSSL("ssl.client.auth", "required", "listener.name.sasl_ssl.ssl.client.auth", "requested"))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Security.Listeners["SASL_SSL"].TLS.ClientAuth; got != "requested" {
		t.Errorf("SASL_SSL listener's own value: %q", got)
	}
}

// TestListenerOverrideInvalidValueNamesItsKey: an invalid listener-prefixed
// value is refused naming the prefixed key.
func TestListenerOverrideInvalidValueNamesItsKey(t *testing.T) {
	for _, tc := range []struct{ key, value string }{
		{"listener.name.ssl.ssl.client.auth", "REQUIRED"},
		{"listener.name.sasl_ssl.ssl.client.auth", "yes"},
		{"listener.name.ssl.ssl.enabled.protocols", "TLSv1"},
		{"listener.name.ssl.ssl.keystore.type", "PKCS11"},
		{"listener.name.ssl.ssl.cipher.suites", "TLS_NO_SUCH_SUITE"},
		{"listener.name.ssl.ssl.principal.mapping.rules", "RULE:^CN=(.*?)/$1/X/"},
		{"listener.name.ssl.ssl.allow.dn.changes", "yes"},
	} {
		_, _, err := Parse(withSSL(tc.key, tc.value))
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Key != tc.key {
			t.Errorf("%s=%s: %v, want a ConfigError naming the key", tc.key, tc.value, err)
		}
	}
}
