package broker

import (
	"context"
	"errors"
	"testing"

	"github.com/strait/strait/config"
	"github.com/strait/strait/security/sasl"
)

// TestInterBrokerMechanism: the broker's client side of PLAIN and
// OAUTHBEARER (an unsecured token for unsecuredLoginStringClaim_sub), from
// the listener's JAAS config, is accepted by the broker's own server side
// with the broker's principal; a mechanism without client credentials is a
// ConfigError on sasl.mechanism.inter.broker.protocol.
func TestInterBrokerMechanism(t *testing.T) {
	for _, tc := range []struct {
		mech, jaas string
		principal  string // "" = ConfigError
	}{
		{"PLAIN", `org.apache.kafka.common.security.plain.PlainLoginModule required username="broker" password="pw" user_broker="pw";`, "User:broker"},
		{"PLAIN", `org.apache.kafka.common.security.plain.PlainLoginModule required user_broker="pw";`, ""},
		{"OAUTHBEARER", `org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required unsecuredLoginStringClaim_sub="broker";`, "User:broker"},
		{"OAUTHBEARER", `org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;`, ""},
	} {
		cfg, _, err := config.Parse(map[string]string{
			"log.dirs":                             t.TempDir(),
			"listeners":                            "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
			"sasl.enabled.mechanisms":              tc.mech,
			"sasl.mechanism.inter.broker.protocol": tc.mech,
			"listener.name.sasl_plaintext." + map[string]string{"PLAIN": "plain", "OAUTHBEARER": "oauthbearer"}[tc.mech] + ".sasl.jaas.config": tc.jaas,
		})
		if err != nil {
			t.Fatalf("%s: %v", tc.mech, err)
		}
		sc := cfg.Security.Listeners["SASL_PLAINTEXT"].SASL
		mech, err := interBrokerMechanism(tc.mech, sc)
		if tc.principal == "" {
			var ce *config.ConfigError
			if !errors.As(err, &ce) || ce.Key != "sasl.mechanism.inter.broker.protocol" {
				t.Errorf("%s without client credentials: %v, want a ConfigError", tc.mech, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.mech, err)
		}
		srv, err := sasl.NewServer(sc, noCredentials{})
		if err != nil {
			t.Fatal(err)
		}
		authn, err := srv.Start(tc.mech)
		if err != nil {
			t.Fatal(err)
		}
		_, first, err := mech.Authenticate(context.Background(), "127.0.0.1:9092")
		if err != nil {
			t.Fatal(err)
		}
		if _, done, err := authn.Step(first); err != nil || !done {
			t.Fatalf("%s: the broker's own token: done %v, %v", tc.mech, done, err)
		}
		if p := authn.Principal().String(); p != tc.principal {
			t.Errorf("%s: principal %s, want %s", tc.mech, p, tc.principal)
		}
	}
}
