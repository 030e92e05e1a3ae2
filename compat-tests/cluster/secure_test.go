package cluster

// The secured variant (STRAIT_CLUSTER_SECURE=1, compat-tests/cluster-secure):
// every broker's only listener, the one brokers replicate over too, is
// SASL_SSL (PLAIN, sasl.mechanism.inter.broker.protocol=PLAIN, the users in
// the listener's JAAS config), with the certificates lib/certs.sh made into
// $STRAIT_CLUSTER_CERTS; every client of the tests speaks TLS and SASL/PLAIN.

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

const certsPassword = "strait-test-pass" // lib/certs.sh's CERTS_PASSWORD

func secure() bool { return os.Getenv("STRAIT_CLUSTER_SECURE") == "1" }

// listenerSettings are a broker's listener settings for address addr.
func listenerSettings(t *testing.T, addr string) map[string]string {
	if !secure() {
		return map[string]string{"listeners": "PLAINTEXT://" + addr}
	}
	certs := certsDir(t)
	jaas := `org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret";`
	return map[string]string{
		"listeners":                                     "SASL_SSL://" + addr,
		"listener.security.protocol.map":                "SASL_SSL:SASL_SSL",
		"inter.broker.listener.name":                    "SASL_SSL",
		"sasl.enabled.mechanisms":                       "PLAIN",
		"sasl.mechanism.inter.broker.protocol":          "PLAIN",
		"listener.name.sasl_ssl.plain.sasl.jaas.config": jaas,
		"ssl.keystore.type":                             "PKCS12",
		"ssl.keystore.location":                         filepath.Join(certs, "broker.p12"),
		"ssl.keystore.password":                         certsPassword,
		"ssl.key.password":                              certsPassword,
		"ssl.truststore.type":                           "PKCS12",
		"ssl.truststore.location":                       filepath.Join(certs, "truststore.p12"),
		"ssl.truststore.password":                       certsPassword,
	}
}

func certsDir(t *testing.T) string {
	dir := os.Getenv("STRAIT_CLUSTER_CERTS")
	if dir == "" {
		t.Fatal("STRAIT_CLUSTER_SECURE=1 needs STRAIT_CLUSTER_CERTS (compat-tests/cluster-secure/run.sh makes them)")
	}
	return dir
}

var (
	tlsOnce sync.Once
	tlsCfg  *tls.Config
	tlsErr  error
)

// clientOpts are the options every client of the tests adds: TLS trusting
// the test CA and SASL/PLAIN when secured, nothing otherwise.
func clientOpts() []kgo.Opt { return clientOptsAs("admin", "admin-secret") }

// clientOptsAs are clientOpts authenticating as user.
func clientOptsAs(user, password string) []kgo.Opt {
	if !secure() {
		return nil
	}
	tlsOnce.Do(func() {
		ca, err := os.ReadFile(filepath.Join(os.Getenv("STRAIT_CLUSTER_CERTS"), "ca.pem"))
		if err != nil {
			tlsErr = err
			return
		}
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(ca)
		tlsCfg = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	})
	if tlsErr != nil {
		panic("reading the test CA: " + tlsErr.Error())
	}
	return []kgo.Opt{
		kgo.DialTLSConfig(tlsCfg.Clone()),
		kgo.SASL(plain.Auth{User: user, Pass: password}.AsMechanism()),
	}
}

// clientName is the client column of results.tsv.
func clientName() string {
	if secure() {
		return "franz-go, 3-broker cluster, SASL_SSL everywhere"
	}
	return "franz-go, 3-broker cluster"
}
