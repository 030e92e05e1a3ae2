// Package testcerts makes the certificates and key stores that TLS tests
// need, with the real openssl and keytool command-line tools (as an operator
// would make them for Kafka), into the test's temporary directory.
// A missing tool fails the test with a message saying which; nothing is
// skipped.
package testcerts

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Password is the store password of every key store and trust store made
// here, and the password of the encrypted PEM keys.
const Password = "test-store-pw"

// Identity is one certificate, its key, and the key stores holding them.
type Identity struct {
	Subject string // the subject as given to openssl (-subj)

	CertFile string // the certificate alone, PEM
	KeyFile  string // its key, unencrypted PKCS#8 PEM
	// EncKeyFile is the key as encrypted PKCS#8 PEM (PBES2), with Password.
	EncKeyFile string
	// ChainFile is the certificate followed by its CA's, PEM.
	ChainFile string
	// PEMStore is a Kafka file-based PEM keystore: the unencrypted key and
	// the chain in one file; EncPEMStore has the encrypted key.
	PEMStore    string
	EncPEMStore string
	// P12 and JKS are key stores written by keytool, with Password for the
	// store and the key; only the server identities have them.
	P12 string
	JKS string

	CertPEM, KeyPEM, EncKeyPEM, ChainPEM string
}

// Set is a CA with the identities it signed, plus one from an untrusted CA.
type Set struct {
	Dir string

	CAFile string // the trusted CA's certificate, PEM
	CAPEM  string
	// TrustP12 and TrustJKS are trust stores (keytool) holding the CA,
	// with Password.
	TrustP12 string
	TrustJKS string

	// Server has SANs IP:127.0.0.1 and DNS:localhost; Server2 too, with
	// another subject (for reload tests).
	Server  Identity
	Server2 Identity
	// Client is a client certificate of the trusted CA, subject
	// CN=alice,OU=eng,O=Acme,C=US.
	Client Identity
	// Expired is a client certificate of the trusted CA that expired.
	Expired Identity
	// Untrusted is a client certificate signed by another CA.
	Untrusted Identity
}

// ClientSubjectDN is Client's subject as Java's X500Principal.getName renders it.
const ClientSubjectDN = "CN=alice,OU=eng,O=Acme,C=US"

type maker struct {
	t   testing.TB
	dir string
}

func (m *maker) run(name string, args ...string) {
	m.t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = m.dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		m.t.Fatalf("testcerts: %s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

func (m *maker) path(name string) string { return filepath.Join(m.dir, name) }

func (m *maker) read(name string) string {
	m.t.Helper()
	b, err := os.ReadFile(m.path(name))
	if err != nil {
		m.t.Fatalf("testcerts: %v", err)
	}
	return string(b)
}

func (m *maker) write(name, data string) string {
	m.t.Helper()
	if err := os.WriteFile(m.path(name), []byte(data), 0o600); err != nil {
		m.t.Fatalf("testcerts: %v", err)
	}
	return m.path(name)
}

// New makes a Set in a new t.TempDir(). It needs openssl and keytool on
// PATH and fails the test without them.
func New(t testing.TB) *Set {
	t.Helper()
	for _, tool := range []string{"openssl", "keytool"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("testcerts: the TLS tests need %s on PATH to make their certificates: %v", tool, err)
		}
	}
	m := &maker{t: t, dir: t.TempDir()}
	s := &Set{Dir: m.dir}

	m.ca("ca", "/CN=Strait Test CA/O=Acme")
	m.ca("otherca", "/CN=Untrusted CA/O=Evil")
	s.CAFile = m.path("ca.pem")
	s.CAPEM = m.read("ca.pem")

	const san = "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n"
	s.Server = m.leaf("server", "ca", "/CN=localhost/O=Acme", "rsa", san, "")
	s.Server2 = m.leaf("server2", "ca", "/CN=localhost-2/O=Acme", "ec", san, "")
	const clientExt = "extendedKeyUsage=clientAuth\n"
	s.Client = m.leaf("client", "ca", "/C=US/O=Acme/OU=eng/CN=alice", "ec", clientExt, "")
	s.Expired = m.leaf("expired", "ca", "/CN=old-client/O=Acme", "ec", clientExt, "expired")
	s.Untrusted = m.leaf("untrusted", "otherca", "/CN=mallory/O=Evil", "ec", clientExt, "")

	for _, id := range []*Identity{&s.Server, &s.Server2} {
		m.keystores(id)
	}
	s.TrustJKS = m.path("truststore.jks")
	s.TrustP12 = m.path("truststore.p12")
	m.run("keytool", "-importcert", "-noprompt", "-alias", "ca", "-file", s.CAFile,
		"-keystore", s.TrustJKS, "-storetype", "JKS", "-storepass", Password)
	m.run("keytool", "-importcert", "-noprompt", "-alias", "ca", "-file", s.CAFile,
		"-keystore", s.TrustP12, "-storetype", "PKCS12", "-storepass", Password)
	return s
}

// ca makes a self-signed CA: name.pem and name.key.
func (m *maker) ca(name, subj string) {
	m.t.Helper()
	m.run("openssl", "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", name+".key")
	m.run("openssl", "req", "-x509", "-new", "-key", name+".key", "-subj", subj, "-days", "30",
		"-sha256", "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
		"-out", name+".pem")
}

// leaf makes a certificate signed by ca, with the extensions ext; "expired"
// gives it a validity that ended years ago.
func (m *maker) leaf(name, ca, subj, alg, ext, validity string) Identity {
	m.t.Helper()
	if alg == "rsa" {
		m.run("openssl", "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", name+".key")
	} else {
		m.run("openssl", "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", name+".key")
	}
	m.run("openssl", "req", "-new", "-key", name+".key", "-subj", subj, "-out", name+".csr")
	m.write(name+".ext", ext)
	if validity == "expired" {
		// openssl x509 cannot back-date; openssl ca can.
		m.write(ca+".cnf", "[ca]\ndefault_ca=d\n[d]\ndatabase="+ca+".index\nserial="+ca+".serial\nnew_certs_dir=.\ndefault_md=sha256\n"+
			"policy=p\npreserve=yes\nunique_subject=no\nemail_in_dn=no\n[p]\ncommonName=supplied\n"+
			"organizationName=optional\norganizationalUnitName=optional\ncountryName=optional\n")
		m.write(ca+".index", "")
		m.write(ca+".serial", "01\n")
		m.run("openssl", "ca", "-batch", "-config", ca+".cnf", "-cert", ca+".pem", "-keyfile", ca+".key",
			"-in", name+".csr", "-out", name+".pem", "-notext", "-extfile", name+".ext",
			"-startdate", "20200101000000Z", "-enddate", "20200201000000Z")
	} else {
		m.run("openssl", "x509", "-req", "-in", name+".csr", "-CA", ca+".pem", "-CAkey", ca+".key",
			"-CAcreateserial", "-days", "30", "-sha256", "-extfile", name+".ext", "-out", name+".pem")
	}
	m.run("openssl", "pkcs8", "-topk8", "-in", name+".key", "-out", name+".enc.key", "-passout", "pass:"+Password)
	id := Identity{
		Subject:    subj,
		CertFile:   m.path(name + ".pem"),
		KeyFile:    m.path(name + ".key"),
		EncKeyFile: m.path(name + ".enc.key"),
		CertPEM:    m.read(name + ".pem"),
		KeyPEM:     m.read(name + ".key"),
		EncKeyPEM:  m.read(name + ".enc.key"),
	}
	id.ChainPEM = id.CertPEM + m.read(ca+".pem")
	id.ChainFile = m.write(name+".chain.pem", id.ChainPEM)
	id.PEMStore = m.write(name+".store.pem", id.KeyPEM+id.ChainPEM)
	id.EncPEMStore = m.write(name+".encstore.pem", id.EncKeyPEM+id.ChainPEM)
	return id
}

// keystores makes id's PKCS12 and JKS key stores with keytool, from an
// openssl PKCS12 bundle.
func (m *maker) keystores(id *Identity) {
	m.t.Helper()
	base := strings.TrimSuffix(id.CertFile, ".pem")
	m.run("openssl", "pkcs12", "-export", "-in", id.ChainFile, "-inkey", id.KeyFile, "-name", "kafka",
		"-out", base+".openssl.p12", "-passout", "pass:"+Password)
	id.P12 = base + ".p12"
	id.JKS = base + ".jks"
	for _, st := range []struct{ file, typ string }{{id.P12, "PKCS12"}, {id.JKS, "JKS"}} {
		m.run("keytool", "-importkeystore", "-noprompt", "-srckeystore", base+".openssl.p12", "-srcstoretype", "PKCS12",
			"-srcstorepass", Password, "-destkeystore", st.file, "-deststoretype", st.typ,
			"-deststorepass", Password, "-destkeypass", Password)
	}
}
