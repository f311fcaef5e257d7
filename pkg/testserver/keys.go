package testserver

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"sync"

	"k8s.io/client-go/util/keyutil"

	"github.com/gcp-project/gcp/pkg/controlplane/auth/pki"
)

// The service account signing key of a new data dir's PKI is RSA 2048
// (pki.Ensure: RS256, which every OIDC consumer understands), and making it
// took 50-150 ms of a start. A test server's is ECDSA P-256 instead (its
// tokens are signed ES256, which the API server's own token authenticator
// and discovery document support as they do RS256), made in well under a
// millisecond, and servers of one test binary share it: it is made once
// and written into each new temporary data dir (not into Options.DataDir),
// where pki.Ensure keeps the key it finds, as for `gcp start` on a data dir
// made by `gcp pki init`. Each server still has its own CAs and issuer
// URL, so a token of one is refused by another.
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
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
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
