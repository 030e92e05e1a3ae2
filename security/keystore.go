package security

// Key stores and trust stores as Kafka's DefaultSslEngineFactory reads
// them: PEM (files, or the PEM text of ssl.keystore.key,
// ssl.keystore.certificate.chain and ssl.truststore.certificates), PKCS12
// and JKS. Every error is a *config.ConfigError naming the key to fix and
// never holding a password.

import (
	"bytes"
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"

	keystore "github.com/pavlo-v-chernykh/keystore-go/v4"
	"software.sslmate.com/src/go-pkcs12"

	"github.com/strait/strait/config"
)

// maxStoreSize bounds a store file read into memory.
const maxStoreSize = 16 << 20

func storeErr(t *config.TLS, key, msg string) *config.ConfigError {
	k := t.Key(key)
	return &config.ConfigError{Key: k, Message: msg + " (" + k + ")"}
}

// loadKeystore is the certificate chain and key the listener presents,
// nil when no keystore is configured (Kafka's createKeystore).
func loadKeystore(t *config.TLS) (*tls.Certificate, error) {
	typ, path := t.KeystoreType, t.KeystoreLocation
	switch {
	case t.KeystoreKey != "":
		switch {
		case typ != "PEM":
			return nil, storeErr(t, "ssl.keystore.type", "SSL private key can be specified only for PEM, but key store type is "+typ+".")
		case t.KeystoreCertificateChain == "":
			return nil, storeErr(t, "ssl.keystore.certificate.chain", "SSL private key is specified, but certificate chain is not specified.")
		case path != "":
			return nil, storeErr(t, "ssl.keystore.location", "Both SSL key store location and separate private key are specified.")
		case t.KeystorePassword != "":
			return nil, storeErr(t, "ssl.keystore.password", "SSL key store password cannot be specified with PEM format, only key password may be specified.")
		}
		return pemKeyPair(t, t.KeystoreCertificateChain, t.KeystoreKey.Reveal(), "ssl.keystore.key", "ssl.keystore.certificate.chain", "Invalid PEM keystore configs")
	case t.KeystoreCertificateChain != "":
		return nil, storeErr(t, "ssl.keystore.key", "SSL certificate chain is specified, but private key is not specified")
	case typ == "PEM" && path != "":
		if t.KeystorePassword != "" {
			return nil, storeErr(t, "ssl.keystore.password", "SSL key store password cannot be specified with PEM format, only key password may be specified.")
		}
		data, err := readStore(t, "ssl.keystore.location", path)
		if err != nil {
			return nil, err
		}
		if err := sniff(t, "ssl.keystore.type", path, typ, data); err != nil {
			return nil, err
		}
		return pemKeyPair(t, string(data), string(data), "ssl.keystore.location", "ssl.keystore.location", "Failed to load PEM SSL keystore "+path)
	case path == "" && t.KeystorePassword != "":
		return nil, storeErr(t, "ssl.keystore.location", "SSL key store is not specified, but key store password is specified.")
	case path != "" && t.KeystorePassword == "":
		return nil, storeErr(t, "ssl.keystore.password", "SSL key store is specified, but key store password is not specified.")
	case path == "":
		return nil, nil
	}
	data, err := readStore(t, "ssl.keystore.location", path)
	if err != nil {
		return nil, err
	}
	if err := sniff(t, "ssl.keystore.type", path, typ, data); err != nil {
		return nil, err
	}
	failed := "Failed to load SSL keystore " + path + " of type " + typ
	var key crypto.PrivateKey
	var chain []*x509.Certificate
	switch typ {
	case "PKCS12":
		k, leaf, cas, err := pkcs12.DecodeChain(data, t.KeystorePassword.Reveal())
		if errors.Is(err, pkcs12.ErrIncorrectPassword) {
			return nil, storeErr(t, "ssl.keystore.password", failed+": keystore password was incorrect")
		}
		if err != nil {
			return nil, storeErr(t, "ssl.keystore.location", failed+": "+err.Error())
		}
		key, chain = k, append([]*x509.Certificate{leaf}, cas...)
	case "JKS":
		ks := keystore.New()
		if err := ks.Load(bytes.NewReader(data), []byte(t.KeystorePassword.Reveal())); err != nil {
			if strings.Contains(err.Error(), "invalid digest") {
				return nil, storeErr(t, "ssl.keystore.password", failed+": keystore password was incorrect")
			}
			return nil, storeErr(t, "ssl.keystore.location", failed+": "+err.Error())
		}
		var alias string
		for _, a := range slices.Sorted(slices.Values(ks.Aliases())) {
			if ks.IsPrivateKeyEntry(a) {
				alias = a
				break
			}
		}
		if alias == "" {
			return nil, storeErr(t, "ssl.keystore.location", failed+": the key store holds no private key entry")
		}
		// Kafka: the key's password is ssl.key.password, else the store's.
		keyKey, keyPW := "ssl.key.password", t.KeyPassword
		if keyPW == "" {
			keyKey, keyPW = "ssl.keystore.password", t.KeystorePassword
		}
		e, err := ks.GetPrivateKeyEntry(alias, []byte(keyPW.Reveal()))
		if err != nil {
			return nil, storeErr(t, keyKey, failed+": cannot recover key "+alias+": password was incorrect")
		}
		if key, err = x509.ParsePKCS8PrivateKey(e.PrivateKey); err != nil {
			return nil, storeErr(t, "ssl.keystore.location", failed+": key "+alias+": "+err.Error())
		}
		for _, c := range e.CertificateChain {
			cert, err := x509.ParseCertificate(c.Content)
			if err != nil {
				return nil, storeErr(t, "ssl.keystore.location", failed+": "+err.Error())
			}
			chain = append(chain, cert)
		}
	}
	return keyPair(t, key, chain, "ssl.keystore.location", failed)
}

// keyPair checks that key belongs to chain's first certificate.
func keyPair(t *config.TLS, key crypto.PrivateKey, chain []*x509.Certificate, at, failed string) (*tls.Certificate, error) {
	if len(chain) == 0 {
		return nil, storeErr(t, at, failed+": no certificate")
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, storeErr(t, at, failed+": unsupported private key type")
	}
	pub, ok := chain[0].PublicKey.(interface{ Equal(crypto.PublicKey) bool })
	if !ok || !pub.Equal(signer.Public()) {
		return nil, storeErr(t, at, failed+": the private key does not match the certificate "+chain[0].Subject.String())
	}
	c := &tls.Certificate{PrivateKey: key, Leaf: chain[0]}
	for _, x := range chain {
		c.Certificate = append(c.Certificate, x.Raw)
	}
	return c, nil
}

// pemKeyPair is a PEM keystore: certificates and one PKCS#8 key,
// encrypted with ssl.key.password when that is set.
func pemKeyPair(t *config.TLS, chainPEM, keyPEM, keyAt, chainAt, failed string) (*tls.Certificate, error) {
	chain, err := pemCerts(chainPEM)
	if err != nil {
		return nil, storeErr(t, chainAt, failed+": "+err.Error())
	}
	var keys []*pem.Block
	for rest := []byte(keyPEM); ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		if strings.HasSuffix(b.Type, "PRIVATE KEY") {
			keys = append(keys, b)
		}
	}
	switch len(keys) {
	case 0:
		return nil, storeErr(t, keyAt, failed+": No matching PRIVATE KEY entries in PEM file")
	case 1:
	default:
		return nil, storeErr(t, keyAt, failed+": Expected one private key, but found "+fmt.Sprint(len(keys)))
	}
	b := keys[0]
	der := b.Bytes
	if b.Type == "ENCRYPTED PRIVATE KEY" {
		if t.KeyPassword == "" {
			return nil, storeErr(t, "ssl.key.password", failed+": the private key is encrypted, but ssl.key.password is not specified")
		}
		der, err = decryptPKCS8(der, t.KeyPassword.Reveal())
		if errors.Is(err, errWrongKeyPassword) {
			return nil, storeErr(t, "ssl.key.password", failed+": "+err.Error())
		}
		if err != nil {
			return nil, storeErr(t, keyAt, failed+": "+err.Error())
		}
	}
	key, err := parsePrivateKey(b.Type, der)
	if err != nil {
		if b.Type == "ENCRYPTED PRIVATE KEY" {
			keyAt = "ssl.key.password" // decrypted to garbage: the password is wrong
		}
		return nil, storeErr(t, keyAt, failed+": Private key could not be loaded: "+err.Error())
	}
	return keyPair(t, key, chain, chainAt, failed)
}

func parsePrivateKey(typ string, der []byte) (crypto.PrivateKey, error) {
	switch typ {
	case "RSA PRIVATE KEY":
		return x509.ParsePKCS1PrivateKey(der)
	case "EC PRIVATE KEY":
		return x509.ParseECPrivateKey(der)
	}
	return x509.ParsePKCS8PrivateKey(der)
}

// pemCerts are the CERTIFICATE blocks of s.
func pemCerts(s string) ([]*x509.Certificate, error) {
	var certs []*x509.Certificate
	for rest := []byte(s); ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, err
		}
		certs = append(certs, c)
	}
	if len(certs) == 0 {
		return nil, errors.New("No matching CERTIFICATE entries in PEM file")
	}
	return certs, nil
}

// loadTruststore is the pool of trusted certificates, nil when none is
// configured (Kafka then trusts the JVM's defaults; Go's are the system's).
func loadTruststore(t *config.TLS) (*x509.CertPool, error) {
	typ, path := t.TruststoreType, t.TruststoreLocation
	var certs []*x509.Certificate
	switch {
	case t.TruststoreCertificates != "":
		switch {
		case typ != "PEM":
			return nil, storeErr(t, "ssl.truststore.type", "SSL trust store certs can be specified only for PEM, but trust store type is "+typ+".")
		case path != "":
			return nil, storeErr(t, "ssl.truststore.location", "Both SSL trust store location and separate trust certificates are specified.")
		case t.TruststorePassword != "":
			return nil, storeErr(t, "ssl.truststore.password", "SSL trust store password cannot be specified for PEM format.")
		}
		c, err := pemCerts(t.TruststoreCertificates)
		if err != nil {
			return nil, storeErr(t, "ssl.truststore.certificates", "Invalid PEM truststore configs: "+err.Error())
		}
		certs = c
	case typ == "PEM" && path != "":
		if t.TruststorePassword != "" {
			return nil, storeErr(t, "ssl.truststore.password", "SSL trust store password cannot be specified for PEM format.")
		}
		data, err := readStore(t, "ssl.truststore.location", path)
		if err != nil {
			return nil, err
		}
		if err := sniff(t, "ssl.truststore.type", path, typ, data); err != nil {
			return nil, err
		}
		if certs, err = pemCerts(string(data)); err != nil {
			return nil, storeErr(t, "ssl.truststore.location", "Failed to load PEM SSL keystore "+path+": "+err.Error())
		}
	case path == "" && t.TruststorePassword != "":
		return nil, storeErr(t, "ssl.truststore.location", "SSL trust store is not specified, but trust store password is specified.")
	case path == "":
		return nil, nil
	default:
		data, err := readStore(t, "ssl.truststore.location", path)
		if err != nil {
			return nil, err
		}
		if err := sniff(t, "ssl.truststore.type", path, typ, data); err != nil {
			return nil, err
		}
		failed := "Failed to load SSL keystore " + path + " of type " + typ
		switch typ {
		case "PKCS12":
			c, err := pkcs12.DecodeTrustStore(data, t.TruststorePassword.Reveal())
			if errors.Is(err, pkcs12.ErrIncorrectPassword) {
				return nil, storeErr(t, "ssl.truststore.password", failed+": keystore password was incorrect")
			}
			if err != nil {
				return nil, storeErr(t, "ssl.truststore.location", failed+": "+err.Error())
			}
			certs = c
		case "JKS":
			ks := keystore.New()
			err := ks.Load(bytes.NewReader(data), []byte(t.TruststorePassword.Reveal()))
			if err != nil && t.TruststorePassword == "" && strings.Contains(err.Error(), "invalid digest") {
				// Java: without a password the trust store is read
				// without its integrity check (the entries are all read
				// before the digest is compared).
				err = nil
			}
			if err != nil {
				if strings.Contains(err.Error(), "invalid digest") {
					return nil, storeErr(t, "ssl.truststore.password", failed+": keystore password was incorrect")
				}
				return nil, storeErr(t, "ssl.truststore.location", failed+": "+err.Error())
			}
			for _, a := range slices.Sorted(slices.Values(ks.Aliases())) {
				var der []byte
				if e, err := ks.GetTrustedCertificateEntry(a); err == nil {
					der = e.Certificate.Content
				} else if chain, err := ks.GetPrivateKeyEntryCertificateChain(a); err == nil && len(chain) > 0 {
					// Java's PKIX trust manager also trusts the
					// certificates of a key store's key entries.
					der = chain[0].Content
				}
				if der == nil {
					continue
				}
				c, err := x509.ParseCertificate(der)
				if err != nil {
					return nil, storeErr(t, "ssl.truststore.location", failed+": "+err.Error())
				}
				certs = append(certs, c)
			}
		}
	}
	if len(certs) == 0 {
		return nil, storeErr(t, "ssl.truststore.location", "the trust store holds no certificate")
	}
	pool := x509.NewCertPool()
	for _, c := range certs {
		pool.AddCert(c)
	}
	return pool, nil
}

// readStore reads a store file, bounded in size.
func readStore(t *config.TLS, key, path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		reason := err.Error()
		if errors.Is(err, fs.ErrNotExist) {
			reason = "no such file"
		}
		return nil, storeErr(t, key, "Failed to load SSL keystore "+path+": "+reason)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxStoreSize+1))
	if err == nil && len(data) > maxStoreSize {
		err = fmt.Errorf("larger than %d bytes", maxStoreSize)
	}
	if err != nil {
		return nil, storeErr(t, key, "Failed to load SSL keystore "+path+": "+err.Error())
	}
	return data, nil
}

// sniff refuses a file whose content is of another store type than the
// one configured, naming the type key (the likely mistake).
func sniff(t *config.TLS, typeKey, path, typ string, data []byte) error {
	var is string
	switch {
	case len(data) >= 4 && data[0] == 0xfe && data[1] == 0xed && data[2] == 0xfe && data[3] == 0xed:
		is = "JKS"
	case len(data) >= 4 && data[0] == 0xce && data[1] == 0xce && data[2] == 0xce && data[3] == 0xce:
		is = "JCEKS"
	case len(data) > 0 && data[0] == 0x30:
		is = "PKCS12"
	case bytes.Contains(data, []byte("-----BEGIN ")):
		is = "PEM"
	default:
		return nil // let the decoder say what is wrong
	}
	if is != typ {
		return storeErr(t, typeKey, "Failed to load SSL keystore "+path+" of type "+typ+": the file is a "+is+" store")
	}
	return nil
}
