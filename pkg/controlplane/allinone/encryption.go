package allinone

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
)

// EncryptionConfigName is the encryption configuration `gcp start` keeps
// in its PKI dir: Secrets are encrypted at rest with a key of its own, as
// k3s's --secrets-encryption does.
const EncryptionConfigName = "encryption-config.yaml"

// ensureEncryptionConfig returns the data dir's encryption configuration,
// writing one (0600) with a new random secretbox key the first time. An
// existing file is kept as it is: rotating keys is editing it (see
// docs/security.md). The identity provider comes last, so Secrets written
// before encryption was on stay readable, and are encrypted when written
// again.
func ensureEncryptionConfig(pkiDir string) (string, error) {
	path := filepath.Join(pkiDir, EncryptionConfigName)
	if _, err := os.Stat(path); err == nil {
		return path, os.Chmod(path, 0o600)
	} else if !os.IsNotExist(err) {
		return "", err
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return "", err
	}
	config := fmt.Sprintf(`# Written by gcp start: Secrets are encrypted in etcd with this key. Keep it
# as private as the data dir; without it the Secrets in a snapshot cannot be read.
apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
- resources: [secrets]
  providers:
  - secretbox:
      keys:
      - name: key1
        secret: %s
  - identity: {}
`, base64.StdEncoding.EncodeToString(key))
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", fmt.Errorf("encryption config: %w", err)
	}
	if _, err := f.WriteString(config); err != nil {
		_ = f.Close()
		_ = os.Remove(path)
		return "", fmt.Errorf("encryption config: %w", err)
	}
	return path, f.Close()
}
