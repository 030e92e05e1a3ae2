package broker

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/strait/strait/config"
	"github.com/strait/strait/security"
	"github.com/strait/strait/security/sasl"
)

// scramUser holds one user's SCRAM credentials, for either mechanism.
type scramUser struct {
	t          *testing.T
	user, pass string
}

func (u scramUser) ScramCredential(mechanism, user string) (security.ScramCredential, bool) {
	if user != u.user {
		return security.ScramCredential{}, false
	}
	salt := []byte("0123456789abcdef")
	salted, err := security.SaltedPassword(mechanism, []byte(u.pass), salt, 4096)
	if err != nil {
		u.t.Error(err)
		return security.ScramCredential{}, false
	}
	c, err := security.NewScramCredential(mechanism, salt, salted, 4096)
	if err != nil {
		u.t.Error(err)
	}
	return c, err == nil
}

func (scramUser) DelegationToken(string) (security.DelegationToken, bool) {
	return security.DelegationToken{}, false
}

// TestInterBrokerMechanism: the broker's client side of PLAIN, SCRAM and
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
		{"SCRAM-SHA-512", `org.apache.kafka.common.security.scram.ScramLoginModule required username="broker" password="pw";`, "User:broker"},
		{"SCRAM-SHA-256", `org.apache.kafka.common.security.scram.ScramLoginModule required;`, ""},
	} {
		cfg, _, err := config.Parse(map[string]string{
			"log.dirs":                             t.TempDir(),
			"listeners":                            "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
			"sasl.enabled.mechanisms":              tc.mech,
			"sasl.mechanism.inter.broker.protocol": tc.mech,
			"listener.name.sasl_plaintext." + strings.ToLower(tc.mech) + ".sasl.jaas.config": tc.jaas,
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
		srv, err := sasl.NewServer(sc, scramUser{t, "broker", "pw"})
		if err != nil {
			t.Fatal(err)
		}
		authn, err := srv.Start(tc.mech)
		if err != nil {
			t.Fatal(err)
		}
		sess, first, err := mech.Authenticate(context.Background(), "127.0.0.1:9092")
		if err != nil {
			t.Fatal(err)
		}
		// The exchange, both sides, at most a few rounds.
		msg := first
		for round := 0; ; round++ {
			reply, done, err := authn.Step(msg)
			if err != nil || round > 4 {
				t.Fatalf("%s: the broker's own credentials, round %d: %v", tc.mech, round, err)
			}
			if done {
				if len(reply) > 0 {
					if _, _, err := sess.Challenge(reply); err != nil {
						t.Fatalf("%s: the server's final message: %v", tc.mech, err)
					}
				}
				break
			}
			if _, msg, err = sess.Challenge(reply); err != nil {
				t.Fatalf("%s: %v", tc.mech, err)
			}
		}
		if p := authn.Principal().String(); p != tc.principal {
			t.Errorf("%s: principal %s, want %s", tc.mech, p, tc.principal)
		}
	}
}
