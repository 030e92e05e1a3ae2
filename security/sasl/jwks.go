package sasl

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// JWKS limits: the largest document read, how often an unknown kid may
// trigger a reload, and how old the keys may get (Kafka's
// sasl.oauthbearer.jwks.endpoint.refresh.ms default).
const (
	maxJWKSSize       = 1 << 20
	jwksMinRefresh    = 5 * time.Second
	jwksMaxAge        = time.Hour
	jwksFetchTimeout  = 10 * time.Second
	maxJWKSKeys       = 256
	maxRSAModulusBits = 8192
)

// jwks is the key set at a file:, http: or https: URL, loaded on first use,
// reloaded when older than jwksMaxAge or when a token names a kid it has
// not (at most once per jwksMinRefresh).
type jwks struct {
	url    string
	client *http.Client

	mu      sync.Mutex
	keys    []jwk
	fetched time.Time
}

type jwk struct {
	kid string
	alg string
	key any // *rsa.PublicKey or *ecdsa.PublicKey
}

func newJWKS(u string) *jwks {
	return &jwks{url: u, client: &http.Client{Timeout: jwksFetchTimeout}}
}

// keysFor are the keys that may have signed a token with kid and alg.
func (j *jwks) keysFor(kid, alg string, now time.Time) (any, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.fetched.IsZero() || now.Sub(j.fetched) > jwksMaxAge {
		j.reload(now)
	}
	ks := j.match(kid, alg)
	if len(ks) == 0 && now.Sub(j.fetched) >= jwksMinRefresh {
		j.reload(now)
		ks = j.match(kid, alg)
	}
	if len(ks) == 0 {
		return nil, errors.New("no key in the JWKS matches the token's kid and alg")
	}
	return jwt.VerificationKeySet{Keys: ks}, nil
}

func (j *jwks) match(kid, alg string) []jwt.VerificationKey {
	var out []jwt.VerificationKey
	for _, k := range j.keys {
		if kid != "" && k.kid != kid || k.alg != "" && alg != "" && k.alg != alg {
			continue
		}
		switch k.key.(type) {
		case *rsa.PublicKey:
			if !strings.HasPrefix(alg, "RS") && !strings.HasPrefix(alg, "PS") {
				continue
			}
		case *ecdsa.PublicKey:
			if !strings.HasPrefix(alg, "ES") {
				continue
			}
		}
		out = append(out, k.key)
	}
	return out
}

// reload fetches the key set; on failure the old keys stay.
func (j *jwks) reload(now time.Time) {
	if err := j.load(now); err != nil {
		slog.Warn("cannot load the OAUTHBEARER JWKS", "url", j.url, "err", err)
	}
}

func (j *jwks) load(now time.Time) error {
	j.fetched = now
	data, err := j.read()
	if err != nil {
		return err
	}
	keys, err := parseJWKS(data)
	if err != nil {
		return err
	}
	j.keys = keys
	return nil
}

func (j *jwks) read() ([]byte, error) {
	u, err := url.Parse(j.url)
	if err != nil {
		return nil, err
	}
	var r io.ReadCloser
	switch u.Scheme {
	case "file":
		f, err := os.Open(u.Path)
		if err != nil {
			return nil, err
		}
		r = f
	case "http", "https":
		resp, err := j.client.Get(j.url)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode != http.StatusOK {
			resp.Body.Close()
			return nil, fmt.Errorf("HTTP status %s", resp.Status)
		}
		r = resp.Body
	default:
		return nil, fmt.Errorf("unsupported URL scheme %q", u.Scheme)
	}
	defer r.Close()
	data, err := io.ReadAll(io.LimitReader(r, maxJWKSSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxJWKSSize {
		return nil, fmt.Errorf("JWKS larger than %d bytes", maxJWKSSize)
	}
	return data, nil
}

// parseJWKS reads the RSA and EC signature keys of a JWK Set (RFC 7517);
// other keys are skipped.
func parseJWKS(data []byte) ([]jwk, error) {
	var set struct {
		Keys []struct {
			Kty string `json:"kty"`
			Kid string `json:"kid"`
			Use string `json:"use"`
			Alg string `json:"alg"`
			N   string `json:"n"`
			E   string `json:"e"`
			Crv string `json:"crv"`
			X   string `json:"x"`
			Y   string `json:"y"`
		} `json:"keys"`
	}
	if err := json.Unmarshal(data, &set); err != nil {
		return nil, err
	}
	if len(set.Keys) > maxJWKSKeys {
		set.Keys = set.Keys[:maxJWKSKeys]
	}
	var out []jwk
	for _, k := range set.Keys {
		if k.Use != "" && k.Use != "sig" {
			continue
		}
		switch k.Kty {
		case "RSA":
			n, err1 := b64uint(k.N)
			e, err2 := b64uint(k.E)
			if err1 != nil || err2 != nil || n.BitLen() > maxRSAModulusBits || n.BitLen() < 1024 || !e.IsInt64() || e.Int64() < 3 || e.Int64() > 1<<31-1 {
				continue
			}
			out = append(out, jwk{kid: k.Kid, alg: k.Alg, key: &rsa.PublicKey{N: n, E: int(e.Int64())}})
		case "EC":
			var c elliptic.Curve
			switch k.Crv {
			case "P-256":
				c = elliptic.P256()
			case "P-384":
				c = elliptic.P384()
			case "P-521":
				c = elliptic.P521()
			default:
				continue
			}
			x, err1 := b64uint(k.X)
			y, err2 := b64uint(k.Y)
			if err1 != nil || err2 != nil {
				continue
			}
			size := (c.Params().BitSize + 7) / 8
			pt := make([]byte, 1+2*size)
			pt[0] = 4
			if len(x.Bytes()) > size || len(y.Bytes()) > size {
				continue
			}
			x.FillBytes(pt[1 : 1+size])
			y.FillBytes(pt[1+size:])
			pub, err := ecdsa.ParseUncompressedPublicKey(c, pt)
			if err != nil {
				continue
			}
			out = append(out, jwk{kid: k.Kid, alg: k.Alg, key: pub})
		}
	}
	return out, nil
}

func b64uint(s string) (*big.Int, error) {
	if len(s) > 2048 {
		return nil, errors.New("too long")
	}
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
	if err != nil {
		return nil, err
	}
	return new(big.Int).SetBytes(b), nil
}
