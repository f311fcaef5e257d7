package pki

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"slices"

	"k8s.io/client-go/util/keyutil"
)

// serviceAccountKeyBits is the RSA size of a new service account signing key.
const serviceAccountKeyBits = 2048

// ensureServiceAccountKey creates the service account signing key in
// keyFile and its public key in pubFile when missing. An unreadable key, or
// a public key file that exists without the key or does not hold its public
// half, is an error: a new key would invalidate every issued token.
func ensureServiceAccountKey(w writer, keyFile, pubFile string) error {
	haveKey, err := exists(keyFile)
	if err != nil {
		return err
	}
	havePub, err := exists(pubFile)
	if err != nil {
		return err
	}
	if !haveKey && havePub {
		return fmt.Errorf("%s exists but the signing key %s is missing; refusing to create a new key, which would invalidate every service account token: restore %s from a backup", pubFile, keyFile, keyFile)
	}

	var pub any
	if haveKey {
		key, err := readPrivateKey(keyFile)
		if err != nil {
			return err
		}
		pub = key.Public()
	} else {
		key, err := rsa.GenerateKey(rand.Reader, serviceAccountKeyBits)
		if err != nil {
			return err
		}
		keyPEM, err := keyutil.MarshalPrivateKeyToPEM(key)
		if err != nil {
			return err
		}
		if err := w.write(keyFile, keyPEM, 0o600); err != nil {
			return err
		}
		pub = key.Public()
	}

	if havePub {
		// The file may list older public keys too, so tokens signed before a
		// key rotation keep verifying; it must include the current one.
		pubs, err := keyutil.PublicKeysFromFile(pubFile)
		if err != nil {
			return err
		}
		if !slices.ContainsFunc(pubs, func(p any) bool { return publicKeysEqual(p, pub) }) {
			return fmt.Errorf("%s does not hold the public key of %s, so tokens it signs would not verify", pubFile, keyFile)
		}
		return nil
	}
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return err
	}
	return w.write(pubFile, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o644)
}
