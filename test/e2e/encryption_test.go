package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestSecretsEncryptedAtRest: gcp start encrypts Secrets in etcd by
// default with a key of its own (0600 in the PKI dir): etcd holds no
// plaintext secret value, kubectl reads it back, and ConfigMaps stay
// plain. --secrets-encryption=false stores them as they are.
func TestSecretsEncryptedAtRest(t *testing.T) {
	t.Parallel()
	const marker = "e2e-plaintext-marker"
	stored := func(t *testing.T, dir, key string) string {
		t.Helper()
		client, err := clientv3.New(clientv3.Config{Endpoints: []string{"unix://" + filepath.Join(dir, "etcd.sock")}, DialTimeout: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = client.Close() }()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		resp, err := client.Get(ctx, key)
		if err != nil || len(resp.Kvs) != 1 {
			t.Fatalf("etcd %s: %v, %v", key, resp, err)
		}
		return string(resp.Kvs[0].Value)
	}
	t.Run("default", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		a := startAllInOne(t, dir)
		a.kubectl("create", "secret", "generic", "s", "--from-literal=password="+marker)
		a.kubectl("create", "configmap", "c", "--from-literal=k="+marker)
		if v := stored(t, dir, "/registry/secrets/default/s"); strings.Contains(v, marker) || !strings.HasPrefix(v, "k8s:enc:secretbox:v1:key1:") {
			t.Errorf("secret in etcd is not secretbox-encrypted: %.80q", v)
		}
		if v := stored(t, dir, "/registry/configmaps/default/c"); !strings.Contains(v, marker) {
			t.Errorf("configmap in etcd should be plain: %.80q", v)
		}
		if out := a.kubectl("get", "secret", "s", "-o", "jsonpath={.data.password}"); out == "" {
			t.Error("kubectl reads no value back")
		}
		fi, err := os.Stat(filepath.Join(dir, "pki", "encryption-config.yaml"))
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("encryption config: %v, mode %v", err, fi.Mode())
		}
	})
	t.Run("off", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		a := startAllInOne(t, dir, "--secrets-encryption=false")
		a.kubectl("create", "secret", "generic", "s", "--from-literal=password="+marker)
		if v := stored(t, dir, "/registry/secrets/default/s"); strings.HasPrefix(v, "k8s:enc:") {
			t.Errorf("--secrets-encryption=false still encrypted: %.80q", v)
		}
	})
}
