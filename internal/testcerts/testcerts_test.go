package testcerts

import (
	"crypto/x509"
	"encoding/pem"
	"os"
	"testing"
	"time"
)

// TestNewMakesEveryFile: every file of a Set exists, and the expired
// certificate has expired.
func TestNewMakesEveryFile(t *testing.T) {
	s := New(t)
	for _, f := range []string{s.CAFile, s.TrustJKS, s.TrustP12, s.Server.P12, s.Server.JKS, s.Server.PEMStore,
		s.Server.EncPEMStore, s.Client.CertFile, s.Expired.CertFile, s.Untrusted.CertFile} {
		if st, err := os.Stat(f); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	b, _ := pem.Decode([]byte(s.Expired.CertPEM))
	c, err := x509.ParseCertificate(b.Bytes)
	if err != nil || !c.NotAfter.Before(time.Now()) {
		t.Errorf("expired cert: %v %v", c.NotAfter, err)
	}
}
