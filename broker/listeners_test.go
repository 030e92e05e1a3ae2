package broker_test

import (
	"errors"
	"testing"

	"github.com/strait/strait/broker"
	"github.com/strait/strait/config"
	"github.com/strait/strait/internal/testcerts"
)

// TestNewListenerSecurity: New loads each listener's key and trust stores
// and SASL mechanisms, and the inter-broker client's credentials; what it
// cannot honour stops it with a ConfigError naming the key (cmd/strait
// logs the key and exits 1). A listener whose settings load is accepted.
func TestNewListenerSecurity(t *testing.T) {
	certs := testcerts.New(t)
	keystore := map[string]string{
		"ssl.keystore.type":     "PKCS12",
		"ssl.keystore.location": certs.Server.P12,
		"ssl.keystore.password": testcerts.Password,
		"ssl.key.password":      testcerts.Password,
	}
	const plainServer = `org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="a";`
	for _, tc := range []struct {
		name  string
		props map[string]string
		key   string // "" = accepted
	}{
		{"SSL without a key store", map[string]string{"listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0"}, "ssl.keystore.location"},
		{"SSL with a key store", with(keystore, map[string]string{"listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0"}), ""},
		{"SSL with a wrong key store password", with(keystore, map[string]string{"listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0",
			"ssl.keystore.password": "wrong"}), "ssl.keystore.password"},
		{"SASL inter-broker without client credentials", map[string]string{"listeners": "SASL_PLAINTEXT://127.0.0.1:0",
			"security.inter.broker.protocol": "SASL_PLAINTEXT", "sasl.enabled.mechanisms": "PLAIN",
			"sasl.mechanism.inter.broker.protocol":                "PLAIN",
			"listener.name.sasl_plaintext.plain.sasl.jaas.config": plainServer}, "sasl.mechanism.inter.broker.protocol"},
		{"SASL inter-broker with client credentials", map[string]string{"listeners": "SASL_PLAINTEXT://127.0.0.1:0",
			"security.inter.broker.protocol": "SASL_PLAINTEXT", "sasl.enabled.mechanisms": "PLAIN",
			"sasl.mechanism.inter.broker.protocol": "PLAIN",
			"listener.name.sasl_plaintext.plain.sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required ` +
				`username="alice" password="a" user_alice="a";`}, ""},
		{"PLAINTEXT under another name", map[string]string{"listeners": "INTERNAL://127.0.0.1:0", "inter.broker.listener.name": "INTERNAL",
			"listener.security.protocol.map": "INTERNAL:PLAINTEXT"}, ""},
	} {
		tc.props["log.dirs"] = t.TempDir()
		cfg, _, err := config.Parse(tc.props)
		if err != nil {
			t.Fatalf("%s: parse: %v", tc.name, err)
		}
		srv, err := broker.New(cfg)
		if tc.key == "" {
			if err != nil {
				t.Errorf("%s: %v, want a broker", tc.name, err)
			}
			continue
		}
		if srv != nil {
			t.Errorf("%s: New returned a broker", tc.name)
		}
		var ce *config.ConfigError
		if !errors.As(err, &ce) || ce.Key != tc.key {
			t.Errorf("%s: error %v, want a ConfigError on %s", tc.name, err, tc.key)
		}
	}
}

func with(base, over map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range base {
		out[k] = v
	}
	for k, v := range over {
		out[k] = v
	}
	return out
}
