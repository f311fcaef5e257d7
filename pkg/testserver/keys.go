package testserver

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"sync"

	"k8s.io/client-go/util/keyutil"

	"github.com/gcp-project/gcp/pkg/controlplane/auth/pki"
)

// The service account signing key is the one RSA key of a new data dir's
// PKI (the certificates' keys are ECDSA), and making it was about a fifth
// of a server's start. Servers of one test binary share one: it is made
// once and written into each new temporary data dir (not into
// Options.DataDir), where pki.Ensure keeps the key it finds, as for `gcp start` on a data dir made by `gcp pki init`. Each
// server still has its own CAs and issuer URL, so a token of one is
// refused by another.
var serviceAccountKey struct {
	once     sync.Once
	key, pub []byte
	err      error
}

// seedServiceAccountKey writes the test binary's service account key into
// the PKI directory of dataDir, a new directory of the test server's own.
func seedServiceAccountKey(dataDir string) error {
	dir := filepath.Join(dataDir, "pki")
	k := &serviceAccountKey
	k.once.Do(func() {
		key, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			k.err = err
			return
		}
		if k.key, k.err = keyutil.MarshalPrivateKeyToPEM(key); k.err != nil {
			return
		}
		der, err := x509.MarshalPKIXPublicKey(key.Public())
		if err != nil {
			k.err = err
			return
		}
		k.pub = pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	})
	if k.err != nil {
		return k.err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	files := pki.FilesIn(dir)
	if err := os.WriteFile(files.ServiceAccountKey, k.key, 0o600); err != nil {
		return err
	}
	return os.WriteFile(files.ServiceAccountPublicKey, k.pub, 0o644) //nolint:gosec // a public key
}
