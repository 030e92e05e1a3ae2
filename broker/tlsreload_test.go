package broker

import (
	"context"
	"crypto/tls"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strait/strait/internal/testcerts"
)

// servedSubject is the subject of the certificate addr's TLS listener
// presents to a new connection.
func servedSubject(t *testing.T, certs *testcerts.Set, addr string) string {
	t.Helper()
	d := &tls.Dialer{Config: clientTLSConfig(t, certs, nil)}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		t.Fatalf("TLS dial: %v", err)
	}
	defer nc.Close()
	return nc.(*tls.Conn).ConnectionState().PeerCertificates[0].Subject.String()
}

// TestDynamicKeyStoreReload: a per-broker update of a listener's key store
// (kafka-configs --entity-type brokers --entity-name <id> --alter
// --add-config listener.name.ssl.ssl.keystore.location=...) is served to
// new connections without a restart; one whose certificate changes the
// subject is refused with Kafka's message unless ssl.allow.dn.changes, and
// one that does not load is refused naming what failed, leaving the
// listener as it was.
func TestDynamicKeyStoreReload(t *testing.T) {
	certs := testcerts.New(t)
	props := tlsProps(certs)
	props["listeners"] = "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0"
	srv := startTestBroker(t, props)
	defer srv.Close()
	tlsAddr := listenerAddr(t, srv, "SSL")
	first := servedSubject(t, certs, tlsAddr)

	cl, err := kgo.NewClient(kgo.SeedBrokers(listenerAddr(t, srv, "PLAINTEXT")))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	set := func(name, value string) kadm.AlterConfig {
		return kadm.AlterConfig{Op: kadm.SetConfig, Name: name, Value: kadm.StringPtr(value)}
	}
	alter := func(cfgs ...kadm.AlterConfig) (error, string) {
		t.Helper()
		resps, err := adm.AlterBrokerConfigs(ctx, cfgs, srv.NodeID())
		if err != nil {
			t.Fatal(err)
		}
		return resps[0].Err, resps[0].ErrMessage
	}

	// Another subject: refused (Kafka's SslFactory check), nothing changes.
	if e, msg := alter(set("listener.name.ssl.ssl.keystore.location", certs.Server2.JKS)); e != kerr.InvalidRequest ||
		!strings.Contains(msg, "Keystore DistinguishedName does not match") {
		t.Fatalf("a key store with another subject: %v %q", e, msg)
	}
	// A store that does not load: refused.
	if e, _ := alter(set("listener.name.ssl.ssl.keystore.location", certs.Dir+"/missing.jks")); e != kerr.InvalidRequest {
		t.Fatalf("a missing key store: %v", e)
	}
	if got := servedSubject(t, certs, tlsAddr); got != first {
		t.Fatalf("after refused updates the listener serves %q, want %q", got, first)
	}

	// With ssl.allow.dn.changes (a static listener setting, as in Kafka)
	// the new subject is accepted and served to new connections.
	srv.Close()
	props["listener.name.ssl.ssl.allow.dn.changes"] = "true"
	props["log.dirs"] = srv.cfg.Log.Dirs[0]
	srv = startTestBroker(t, props)
	defer srv.Close()
	tlsAddr = listenerAddr(t, srv, "SSL")
	cl2, err := kgo.NewClient(kgo.SeedBrokers(listenerAddr(t, srv, "PLAINTEXT")))
	if err != nil {
		t.Fatal(err)
	}
	defer cl2.Close()
	adm = kadm.NewClient(cl2)
	if e, msg := alter(set("listener.name.ssl.ssl.keystore.location", certs.Server2.JKS)); e != nil {
		t.Fatalf("a key store with another subject, allowed: %v %s", e, msg)
	}
	if got := servedSubject(t, certs, tlsAddr); got == first {
		t.Fatalf("the updated key store is not served: still %q", got)
	}
}
