package sasl

import (
	"bytes"
	"encoding/base64"
	"errors"
	"testing"
	"time"

	"github.com/strait/strait/config"
	"github.com/strait/strait/security"
)

// fuzzServer enables every mechanism: PLAIN with two users, SCRAM with
// RFC 7677's user "user"/"pencil" and its fixed server nonce (so that the
// fuzzer can reach a matching client-final), OAUTHBEARER unsecured at a
// fixed time.
func fuzzServer(f *testing.F) *Server {
	creds := newCreds()
	salt, _ := base64.StdEncoding.DecodeString("W22ZaJ0SNY7soEsUEjb6gQ==")
	for _, m := range []string{ScramSHA256, ScramSHA512} {
		salted, err := security.SaltedPassword(m, []byte("pencil"), salt, 4096)
		if err != nil {
			f.Fatal(err)
		}
		c, err := security.NewScramCredential(m, salt, salted, 4096)
		if err != nil {
			f.Fatal(err)
		}
		creds.scram[m+"/user"] = c
	}
	s, err := NewServer(&config.SASL{
		EnabledMechanisms: []string{Plain, ScramSHA256, ScramSHA512, OAuthBearer},
		JAAS: map[string]config.JAAS{
			Plain: jaas("org.apache.kafka.common.security.plain.PlainLoginModule",
				map[string]string{"user_admin": "admin-secret", "user_alice": "alice-secret"}),
			ScramSHA256: jaas("org.apache.kafka.common.security.scram.ScramLoginModule", nil),
			ScramSHA512: jaas("org.apache.kafka.common.security.scram.ScramLoginModule", nil),
			OAuthBearer: jaas("org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule", nil),
		},
		OAuth: config.OAuthBearer{Unsecured: true},
	}, creds)
	if err != nil {
		f.Fatal(err)
	}
	s.testNonce = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
	s.now = func() time.Time { return time.Unix(1_800_000_000, 0) }
	return s
}

var fuzzMechanisms = []string{Plain, ScramSHA256, ScramSHA512, OAuthBearer}

// FuzzSASLStep runs up to three client tokens through one exchange of
// mechanism mech%4: PLAIN's response, SCRAM's client-first and
// client-final, OAUTHBEARER's initial response (and the %x01 after a
// challenge). Step never panics; a failure is an error with done false; an
// exchange that ended (done or failed) refuses further steps with
// ErrIllegalState; PLAIN succeeds only with a configured user's password.
func FuzzSASLStep(f *testing.F) {
	s := fuzzServer(f)
	const nonce = "rOprNGfwEbeRWgbNEkqO"
	f.Add(uint8(0), []byte("\x00alice\x00alice-secret"), []byte(nil), []byte(nil))
	f.Add(uint8(0), []byte("admin\x00admin\x00admin-secret"), []byte("x"), []byte(nil))
	f.Add(uint8(0), []byte("\x00alice\x00wrong"), []byte(nil), []byte(nil))
	f.Add(uint8(0), []byte("\x00\x00\x00"), []byte(nil), []byte(nil))
	f.Add(uint8(1), []byte("n,,n=user,r="+nonce),
		[]byte("c=biws,r="+nonce+"%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="), []byte("x"))
	f.Add(uint8(1), []byte("n,,n=user,r="+nonce), []byte("c=biws,r="+nonce+",p=AAAA"), []byte(nil))
	f.Add(uint8(2), []byte("n,a=user,n=user,r=abc,tokenauth=true"), []byte("c=biws,r=abc,p="), []byte(nil))
	f.Add(uint8(2), []byte("y,,n=nobody,r=x"), []byte("c=eSws,r=x%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=AA=="), []byte(nil))
	f.Add(uint8(1), []byte("n,,n=us=3Der=2Cx,r=1,ext=1"), []byte(""), []byte(nil))
	f.Add(uint8(3), bearer(unsecuredToken(map[string]any{"sub": "alice", "exp": 1_900_000_000, "iat": 1_700_000_000})), []byte("\x01"), []byte(nil))
	f.Add(uint8(3), bearer(unsecuredToken(map[string]any{"sub": "alice", "exp": 1})), []byte("\x01"), []byte("\x01"))
	f.Add(uint8(3), []byte("n,a=alice,\x01auth=Bearer x.y.\x01\x01"), []byte("\x01"), []byte(nil))
	f.Add(uint8(3), []byte("n,,\x01host=h\x01port=1\x01auth=bearer ..\x01\x01"), []byte(nil), []byte(nil))
	f.Fuzz(func(t *testing.T, mech uint8, t1, t2, t3 []byte) {
		name := fuzzMechanisms[int(mech)%len(fuzzMechanisms)]
		a, err := s.Start(name)
		if err != nil {
			t.Fatal(err)
		}
		for i, tok := range [][]byte{t1, t2, t3} {
			_, done, err := a.Step(tok)
			if err != nil {
				if done {
					t.Fatalf("%s step %d: done with the error %v", name, i, err)
				}
				var ae *AuthError
				if !errors.As(err, &ae) && !errors.Is(err, ErrIllegalState) {
					t.Fatalf("%s step %d: error %T %v, want an *AuthError", name, i, err, err)
				}
			}
			if done {
				if a.Principal().Name == "" {
					t.Fatalf("%s: done without a principal", name)
				}
				if name == Plain && !plainValid(tok) {
					t.Fatalf("PLAIN accepted %q", tok)
				}
				if (name == ScramSHA256 || name == ScramSHA512) && i != 1 {
					t.Fatalf("%s done at step %d", name, i)
				}
			}
			if done || err != nil {
				if _, d, err := a.Step(tok); !errors.Is(err, ErrIllegalState) || d {
					t.Fatalf("%s: a step after the end: done %v, err %v", name, d, err)
				}
				return
			}
		}
	})
}

// plainValid reports whether tok is [authzid] NUL user NUL password for
// one of fuzzServer's PLAIN users.
func plainValid(tok []byte) bool {
	parts := bytes.Split(tok, []byte{0})
	if len(parts) != 3 || (len(parts[0]) > 0 && !bytes.Equal(parts[0], parts[1])) {
		return false
	}
	users := map[string]string{"admin": "admin-secret", "alice": "alice-secret"}
	p, ok := users[string(parts[1])]
	return ok && string(parts[2]) == p
}
