package allinone

import (
	"bytes"
	"context"
	cipheraes "crypto/aes"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	apiserverv1 "k8s.io/apiserver/pkg/apis/apiserver/v1"
	"k8s.io/apiserver/pkg/server/options/encryptionconfig"
	"k8s.io/apiserver/pkg/storage/value"
	"k8s.io/apiserver/pkg/storage/value/encrypt/aes"
	"k8s.io/apiserver/pkg/storage/value/encrypt/identity"
	"k8s.io/apiserver/pkg/storage/value/encrypt/secretbox"
	"sigs.k8s.io/yaml"

	"github.com/gcp-project/gcp/pkg/controlplane/etcd"
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

// secretsPrefix is where the API server keeps Secrets in etcd under its
// default storage prefix, gcp start's.
const secretsPrefix = "/registry/secrets/"

// secretsReadable returns a check that a Secret stored in etcd under
// prefix at key with value can be read with the encryption configuration
// at configPath (empty: none, --secrets-encryption=false), as the API
// server would read it. Its error names the Secret, the key it is
// encrypted with, and where that key comes from: a server that cannot
// read a Secret answers 500 for it and for every list of Secrets, so gcp
// start and gcp snapshot restore refuse instead (checkSecrets). copyTo is
// the file the missing key belongs in. Transformers the configuration
// starts (KMS plugins) stop when ctx is done.
func secretsReadable(ctx context.Context, prefix, configPath, copyTo string) (func(key, value []byte) error, error) {
	transformer := identity.NewEncryptCheckTransformer()
	// The configuration's own keys for Secrets, by provider:name. A value
	// encrypted with one is decrypted with that key alone: the API
	// server's transformer logs every failure as an error, and this check
	// has one line to say what is wrong.
	var keys map[string]value.Transformer
	missing := "gcp start runs with --secrets-encryption=false"
	if configPath != "" {
		missing = configPath + " does not exist"
		if _, err := os.Stat(configPath); err == nil {
			config, err := encryptionconfig.LoadEncryptionConfig(ctx, configPath, false, "gcp")
			if err != nil {
				return nil, fmt.Errorf("encryption config: %w", err)
			}
			if t := secretsTransformer(config.Transformers); t != nil {
				transformer = t
			}
			if keys, err = secretsKeys(configPath); err != nil {
				return nil, fmt.Errorf("encryption config %s: %w", configPath, err)
			}
		} else if !os.IsNotExist(err) {
			return nil, fmt.Errorf("encryption config: %w", err)
		}
	}
	return func(key, stored []byte) error {
		provider, name, ciphertext, encrypted := encryptedWith(stored)
		own, known := keys[provider+":"+name]
		var err error
		switch {
		case known:
			_, _, err = own.TransformFromStorage(ctx, ciphertext, authenticatedData(key))
		case encrypted && localProviders[provider]:
			err = errors.New("no such key")
		default:
			_, _, err = transformer.TransformFromStorage(ctx, stored, authenticatedData(key))
		}
		if err == nil {
			return nil
		}
		secret := strings.TrimPrefix(string(key), prefix)
		if !encrypted {
			return fmt.Errorf("Secret %s in etcd cannot be read with %s: %w", secret, configPath, err)
		}
		why := missing
		switch {
		case known:
			why = fmt.Sprintf("the key of that name in %s is another one", configPath)
		case keys != nil:
			why = fmt.Sprintf("%s does not have it", configPath)
		}
		return fmt.Errorf("Secret %s in etcd is encrypted with the %s key %s, and %s; the key is in pki/%s of the data dir "+
			"the snapshot was taken from: copy that file to %s", secret, provider, name, why, EncryptionConfigName, copyTo)
	}, nil
}

// localProviders are the encryption providers whose keys are in the
// configuration file itself.
var localProviders = map[string]bool{"aesgcm": true, "aescbc": true, "secretbox": true}

// checkSecrets refuses, with secretsReadable's error, a member database
// (not open) holding a Secret under prefix that the encryption
// configuration at configPath cannot read. It reads the database file
// (etcd.EachLiveKey), so it runs before the member starts and before the
// API server's configuration logs anything; docs/operations.md has what
// it costs.
func checkSecrets(ctx context.Context, db, prefix, configPath, copyTo string) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	readable, err := secretsReadable(ctx, prefix, configPath, copyTo)
	if err != nil {
		return err
	}
	return etcd.EachLiveKey(db, prefix, readable)
}

// secretsTransformer is the transformer an API server uses for Secrets:
// the configuration's own for them, else its wildcard for the core group,
// else for every group; nil means none (identity).
func secretsTransformer(transformers map[schema.GroupResource]value.Transformer) value.Transformer {
	for _, gr := range []schema.GroupResource{{Resource: "secrets"}, {Resource: "*"}, {Group: "*", Resource: "*"}} {
		if t, ok := transformers[gr]; ok {
			return t
		}
	}
	return nil
}

// secretsKeys returns a transformer, by provider:name, for each key the
// encryption configuration at path holds for Secrets (in the first of its
// resources that names secrets, all of the core group, or everything,
// the API server's order), each reading a value without its prefix.
func secretsKeys(path string) (map[string]value.Transformer, error) {
	config, err := readEncryptionConfig(path)
	if err != nil {
		return nil, err
	}
	var providers []apiserverv1.ProviderConfiguration
	for _, want := range []string{"secrets", "*.", "*.*"} {
		for _, r := range config.Resources {
			if providers == nil && slices.Contains(r.Resources, want) {
				providers = r.Providers
			}
		}
	}
	newAES := func(gcm bool) func([]byte) (value.Transformer, error) {
		return func(k []byte) (value.Transformer, error) {
			block, err := cipheraes.NewCipher(k)
			if err != nil {
				return nil, err
			}
			if gcm {
				return aes.NewGCMTransformer(block)
			}
			return aes.NewCBCTransformer(block), nil
		}
	}
	keys := map[string]value.Transformer{}
	for _, p := range providers {
		var err error
		switch {
		case p.Secretbox != nil:
			err = addKeys(keys, "secretbox", p.Secretbox.Keys, func(k []byte) (value.Transformer, error) {
				if len(k) != 32 {
					return nil, fmt.Errorf("%d bytes, want 32", len(k))
				}
				return secretbox.NewSecretboxTransformer([32]byte(k)), nil
			})
		case p.AESCBC != nil:
			err = addKeys(keys, "aescbc", p.AESCBC.Keys, newAES(false))
		case p.AESGCM != nil:
			err = addKeys(keys, "aesgcm", p.AESGCM.Keys, newAES(true))
		}
		if err != nil {
			return nil, err
		}
	}
	return keys, nil
}

// readEncryptionConfig reads the encryption configuration at path.
func readEncryptionConfig(path string) (apiserverv1.EncryptionConfiguration, error) {
	var config apiserverv1.EncryptionConfiguration
	data, err := os.ReadFile(path)
	if err != nil {
		return config, err
	}
	err = yaml.Unmarshal(data, &config)
	return config, err
}

// usesKMS reports whether the encryption configuration at path (none if
// empty) has a KMS provider.
func usesKMS(path string) (bool, error) {
	if path == "" {
		return false, nil
	}
	config, err := readEncryptionConfig(path)
	if err != nil {
		return false, fmt.Errorf("encryption config %s: %w", path, err)
	}
	for _, r := range config.Resources {
		for _, p := range r.Providers {
			if p.KMS != nil {
				return true, nil
			}
		}
	}
	return false, nil
}

// addKeys adds to to a transformer made by newTransformer for each of keys.
func addKeys(to map[string]value.Transformer, provider string, keys []apiserverv1.Key, newTransformer func([]byte) (value.Transformer, error)) error {
	for _, k := range keys {
		secret, err := base64.StdEncoding.DecodeString(k.Secret)
		if err == nil {
			to[provider+":"+k.Name], err = newTransformer(secret)
		}
		if err != nil {
			return fmt.Errorf("%s key %s: %w", provider, k.Name, err)
		}
	}
	return nil
}

// encryptedWith parses the prefix k8s.io/apiserver writes before an
// encrypted value, k8s:enc:<provider>:<version>:<key name>:, and returns
// what follows it.
func encryptedWith(stored []byte) (provider, name string, ciphertext []byte, ok bool) {
	rest, ok := bytes.CutPrefix(stored, []byte("k8s:enc:"))
	if !ok {
		return "", "", nil, false
	}
	fields := bytes.SplitN(rest, []byte(":"), 4)
	if len(fields) < 4 {
		return "", "", nil, false
	}
	return string(fields[0]), string(fields[2]), fields[3], true
}

// authenticatedData is the context the API server encrypts a value in:
// its etcd key.
type authenticatedData []byte

// AuthenticatedData returns the key.
func (d authenticatedData) AuthenticatedData() []byte { return d }
