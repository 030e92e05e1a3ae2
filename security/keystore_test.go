package security

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/strait/strait/config"
	"github.com/strait/strait/internal/testcerts"
)

// testEncryptedPEMKeys (in TestTLS): PKCS#8 keys openssl encrypts with the PBES2
// ciphers and PRFs it offers load with ssl.key.password; a wrong password
// names ssl.key.password.
func testEncryptedPEMKeys(t *testing.T, s *testcerts.Set) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"aes-256-cbc sha256 (openssl's default)", nil},
		{"aes-128-cbc sha1", []string{"-v2", "aes-128-cbc", "-v2prf", "hmacWithSHA1"}},
		{"aes-192-cbc sha512", []string{"-v2", "aes-192-cbc", "-v2prf", "hmacWithSHA512"}},
		{"des3 sha384", []string{"-v2", "des3", "-v2prf", "hmacWithSHA384"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(dir, "k.pem")
			args := append([]string{"pkcs8", "-topk8", "-in", s.Server.KeyFile, "-out", out, "-passout", "pass:" + testcerts.Password}, tc.args...)
			if b, err := exec.Command("openssl", args...).CombinedOutput(); err != nil {
				t.Fatalf("openssl %v: %v\n%s", args, err, b)
			}
			key, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			c := base()
			c.KeystoreType, c.KeystoreKey, c.KeystoreCertificateChain = "PEM", config.Password(key), s.Server.ChainPEM
			c.KeyPassword = testcerts.Password
			if _, err := NewServerTLS(&c); err != nil {
				t.Fatal(err)
			}
			c.KeyPassword = "wrong-password"
			var ce *config.ConfigError
			if _, err := NewServerTLS(&c); !errors.As(err, &ce) || ce.Key != "ssl.key.password" {
				t.Errorf("wrong key password: %v", err)
			}
		})
	}
}
