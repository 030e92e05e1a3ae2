package broker

import (
	"context"
	"crypto/rand"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/strait/strait/controller"
	"github.com/strait/strait/security"
)

// TestSecurityScram: SCRAM-SHA-256 and -512 against credentials stored
// through the controller; the wrong password fails.
func TestSecurityScram(t *testing.T) {
	srv := startTestBroker(t, map[string]string{
		"listeners":               "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
		"sasl.enabled.mechanisms": "SCRAM-SHA-256,SCRAM-SHA-512",
		"listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config": `org.apache.kafka.common.security.scram.ScramLoginModule required;`,
		"listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config": `org.apache.kafka.common.security.scram.ScramLoginModule required;`,
	})
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	for i, mech := range []string{security.ScramSHA256, security.ScramSHA512} {
		salt := make([]byte, 16)
		rand.Read(salt)
		salted, err := security.SaltedPassword(mech, []byte("alice-secret"), salt, 4096)
		if err != nil {
			t.Fatal(err)
		}
		res, err := srv.ctrl.AlterScramCredentials(ctx, nil, []controller.ScramUpsertion{{
			User: "alice", Mechanism: int8(i + 1), Iterations: 4096, Salt: salt, SaltedPassword: salted}})
		if err != nil || len(res) != 1 || res[0].Err != nil {
			t.Fatalf("storing the %s credential: %v %v", mech, err, res)
		}
	}
	addr := listenerAddr(t, srv, "SASL_PLAINTEXT")
	good := scram.Auth{User: "alice", Pass: "alice-secret"}
	bad := scram.Auth{User: "alice", Pass: "nope"}
	if err := pingWith(t, addr, kgo.SASL(good.AsSha256Mechanism())); err != nil {
		t.Fatalf("SCRAM-SHA-256: %v", err)
	}
	if err := pingWith(t, addr, kgo.SASL(good.AsSha512Mechanism())); err != nil {
		t.Fatalf("SCRAM-SHA-512: %v", err)
	}
	if err := pingWith(t, addr, kgo.SASL(bad.AsSha512Mechanism())); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("SCRAM with a wrong password: %v", err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.SASL(good.AsSha256Mechanism()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	if ps := principals(srv, "SASL_PLAINTEXT"); !slices.Contains(ps, "User:alice") {
		t.Errorf("principals %v, want User:alice", ps)
	}
}
