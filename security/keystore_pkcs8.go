package security

// Encrypted PKCS#8 private keys (RFC 5958 EncryptedPrivateKeyInfo with
// PBES2, RFC 8018), as Kafka accepts them in PEM key stores with
// ssl.key.password: the standard library cannot decrypt them.

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/des"
	"crypto/pbkdf2"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/x509/pkix"
	"encoding/asn1"
	"errors"
	"hash"
)

var errWrongKeyPassword = errors.New("the private key could not be decrypted: wrong ssl.key.password")

var (
	oidPBES2      = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 13}
	oidPBKDF2     = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 12}
	oidHMACSHA1   = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 7}
	oidHMACSHA224 = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 8}
	oidHMACSHA256 = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 9}
	oidHMACSHA384 = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 10}
	oidHMACSHA512 = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 11}
	oidAES128CBC  = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 2}
	oidAES192CBC  = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 22}
	oidAES256CBC  = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 42}
	oidDESEDE3CBC = asn1.ObjectIdentifier{1, 2, 840, 113549, 3, 7}
)

type encryptedPrivateKeyInfo struct {
	Algo pkix.AlgorithmIdentifier
	Data []byte
}

type pbes2Params struct {
	KDF    pkix.AlgorithmIdentifier
	Scheme pkix.AlgorithmIdentifier
}

type pbkdf2Params struct {
	Salt      []byte
	Iter      int
	KeyLength int                      `asn1:"optional"`
	PRF       pkix.AlgorithmIdentifier `asn1:"optional"`
}

// maxPBKDF2Iterations bounds the work a key file can ask for.
const maxPBKDF2Iterations = 10_000_000

// decryptPKCS8 decrypts an EncryptedPrivateKeyInfo to the PKCS#8 key.
func decryptPKCS8(der []byte, password string) ([]byte, error) {
	var info encryptedPrivateKeyInfo
	if rest, err := asn1.Unmarshal(der, &info); err != nil || len(rest) > 0 {
		return nil, errors.New("malformed encrypted private key")
	}
	if !info.Algo.Algorithm.Equal(oidPBES2) {
		return nil, errors.New("unsupported private key encryption " + info.Algo.Algorithm.String() + " (only PBES2)")
	}
	var params pbes2Params
	if _, err := asn1.Unmarshal(info.Algo.Parameters.FullBytes, &params); err != nil {
		return nil, errors.New("malformed PBES2 parameters")
	}
	if !params.KDF.Algorithm.Equal(oidPBKDF2) {
		return nil, errors.New("unsupported key derivation " + params.KDF.Algorithm.String() + " (only PBKDF2)")
	}
	var kdf pbkdf2Params
	if _, err := asn1.Unmarshal(params.KDF.Parameters.FullBytes, &kdf); err != nil {
		return nil, errors.New("malformed PBKDF2 parameters")
	}
	if kdf.Iter < 1 || kdf.Iter > maxPBKDF2Iterations {
		return nil, errors.New("unsupported PBKDF2 iteration count")
	}
	var prf func() hash.Hash
	switch a := kdf.PRF.Algorithm; {
	case len(a) == 0 || a.Equal(oidHMACSHA1):
		prf = sha1.New
	case a.Equal(oidHMACSHA224):
		prf = sha256.New224
	case a.Equal(oidHMACSHA256):
		prf = sha256.New
	case a.Equal(oidHMACSHA384):
		prf = sha512.New384
	case a.Equal(oidHMACSHA512):
		prf = sha512.New
	default:
		return nil, errors.New("unsupported PBKDF2 PRF " + a.String())
	}
	var keyLen int
	var newBlock func([]byte) (cipher.Block, error)
	switch a := params.Scheme.Algorithm; {
	case a.Equal(oidAES128CBC):
		keyLen, newBlock = 16, aes.NewCipher
	case a.Equal(oidAES192CBC):
		keyLen, newBlock = 24, aes.NewCipher
	case a.Equal(oidAES256CBC):
		keyLen, newBlock = 32, aes.NewCipher
	case a.Equal(oidDESEDE3CBC):
		keyLen, newBlock = 24, des.NewTripleDESCipher
	default:
		return nil, errors.New("unsupported private key cipher " + a.String())
	}
	var iv []byte
	if _, err := asn1.Unmarshal(params.Scheme.Parameters.FullBytes, &iv); err != nil {
		return nil, errors.New("malformed cipher parameters")
	}
	key, err := pbkdf2.Key(prf, password, kdf.Salt, kdf.Iter, keyLen)
	if err != nil {
		return nil, err
	}
	block, err := newBlock(key)
	if err != nil {
		return nil, err
	}
	bs := block.BlockSize()
	if len(iv) != bs || len(info.Data) == 0 || len(info.Data)%bs != 0 {
		return nil, errors.New("malformed encrypted private key")
	}
	out := make([]byte, len(info.Data))
	cipher.NewCBCDecrypter(block, iv).CryptBlocks(out, info.Data)
	// PKCS#7 padding: a wrong password shows as bad padding (or, rarely,
	// as a key that does not parse, which the caller reports).
	n := int(out[len(out)-1])
	if n == 0 || n > bs {
		return nil, errWrongKeyPassword
	}
	for _, b := range out[len(out)-n:] {
		if int(b) != n {
			return nil, errWrongKeyPassword
		}
	}
	return out[:len(out)-n], nil
}
