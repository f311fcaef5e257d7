package e2e

import (
	"crypto/sha256"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRestoreWithoutTheSecretsKeyRefuses: a snapshot's Secrets are
// encrypted with a key that stays in the old data dir's pki/. Restored
// without it (no pki/, or a pki/ with another key of the same name), gcp
// snapshot restore refuses in one line naming the Secret, the key and where
// it comes from, and leaves nothing behind. A data dir whose etcd holds
// such Secrets anyway (restored with gcp etcd snapshot restore) makes gcp
// start refuse the same way, leaving the database as it was and no new PKI
// behind, instead of serving 500 for every list of Secrets; with the key
// copied in it serves them.
func TestRestoreWithoutTheSecretsKeyRefuses(t *testing.T) {
	t.Parallel()
	oldDir := t.TempDir()
	a := startAllInOne(t, oldDir)
	a.kubectl("create", "secret", "generic", "s1", "--from-literal=password=kept")
	mustGCP(t, "snapshot", "save", "--data-dir", oldDir)
	if err := a.stop(); err != nil {
		t.Fatal(err)
	}
	// The directory also holds the lock that saves share.
	snaps, err := filepath.Glob(filepath.Join(oldDir, "snapshots", "gcp-snapshot-*.db"))
	if err != nil || len(snaps) != 1 {
		t.Fatalf("snapshots: %v, %v", snaps, err)
	}
	snap := snaps[0]
	oldKey := filepath.Join(oldDir, "pki", "encryption-config.yaml")
	oneLine := func(t *testing.T, what, out string, code int, wants ...string) {
		t.Helper()
		if code != 1 || strings.Count(strings.TrimSpace(out), "\n") != 0 {
			t.Errorf("%s: exit %d, want 1 and one line:\n%s", what, code, out)
		}
		for _, w := range wants {
			if !strings.Contains(out, w) {
				t.Errorf("%s: the error does not say %q:\n%s", what, w, out)
			}
		}
	}

	// No pki/ at all.
	noPKI := filepath.Join(t.TempDir(), "new")
	config := filepath.Join(noPKI, "pki", "encryption-config.yaml")
	out, code := runGCPWithin(t, time.Minute, "snapshot", "restore", snap, "--data-dir", noPKI)
	oneLine(t, "restore without pki/", out, code, "Secret default/s1 in etcd is encrypted with the secretbox key key1,",
		config+" does not exist", "the key is in pki/encryption-config.yaml of the data dir the snapshot was taken from: copy that file to "+config)
	if _, err := os.Stat(noPKI); !os.IsNotExist(err) {
		t.Errorf("a refused restore left %s behind (%v)", noPKI, err)
	}

	// A pki/ with another key of the same name, as a new gcp start makes.
	otherKey := t.TempDir()
	if err := os.MkdirAll(filepath.Join(otherKey, "pki"), 0o700); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(otherKey, "pki", "encryption-config.yaml")
	if err := os.WriteFile(other, []byte(`apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
- resources: [secrets]
  providers:
  - secretbox:
      keys:
      - name: key1
        secret: AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=
  - identity: {}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	out, code = runGCPWithin(t, time.Minute, "snapshot", "restore", snap, "--data-dir", otherKey)
	oneLine(t, "restore with another key1", out, code, "encrypted with the secretbox key key1, and the key of that name in "+other+" is another one")
	if _, err := os.Stat(filepath.Join(otherKey, "etcd")); !os.IsNotExist(err) {
		t.Errorf("a refused restore left etcd data behind (%v)", err)
	}

	// gcp etcd snapshot restore knows nothing of gcp start's keys: gcp
	// start is what refuses then, before it serves anything.
	bypass := t.TempDir()
	mustGCP(t, "etcd", "snapshot", "restore", snap, "--data-dir", filepath.Join(bypass, "etcd"))
	db := filepath.Join(bypass, "etcd", "member", "snap", "db")
	before, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	out, code = runGCPWithin(t, time.Minute, "start", "--data-dir", bypass, "--secure-port", "0")
	bypassConfig := filepath.Join(bypass, "pki", "encryption-config.yaml")
	oneLine(t, "gcp start on Secrets it cannot read", out, code, "Secret default/s1 in etcd is encrypted with the secretbox key key1,",
		"copy that file to "+bypassConfig)
	if after, _ := os.ReadFile(db); sha256.Sum256(after) != sha256.Sum256(before) {
		t.Error("a refused gcp start changed the etcd database")
	}
	for _, name := range []string{"pki", "admin.kubeconfig", "controllers.kubeconfig"} {
		if _, err := os.Stat(filepath.Join(bypass, name)); !os.IsNotExist(err) {
			t.Errorf("a refused gcp start left %s behind (%v)", name, err)
		}
	}
	// With the key copied in, as the error says: a new PKI, the old
	// Secrets. Without encryption the server could not read them either.
	if err := os.MkdirAll(filepath.Join(bypass, "pki"), 0o700); err != nil {
		t.Fatal(err)
	}
	key, err := os.ReadFile(oldKey)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bypassConfig, key, 0o600); err != nil {
		t.Fatal(err)
	}
	out, code = runGCPWithin(t, time.Minute, "start", "--data-dir", bypass, "--secure-port", "0", "--secrets-encryption=false")
	oneLine(t, "gcp start --secrets-encryption=false on encrypted Secrets", out, code, "gcp start runs with --secrets-encryption=false")
	b := startAllInOne(t, bypass)
	if got := b.kubectl("get", "secret", "s1", "-o", "jsonpath={.data.password}"); got != "a2VwdA==" {
		t.Errorf("restored Secret s1 reads %q, want base64 of kept", got)
	}
	b.kubectl("get", "secrets", "-A")

	// And gcp snapshot restore with the key there restores.
	withKey := t.TempDir()
	if err := os.MkdirAll(filepath.Join(withKey, "pki"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(withKey, "pki", "encryption-config.yaml"), key, 0o600); err != nil {
		t.Fatal(err)
	}
	mustGCP(t, "snapshot", "restore", snap, "--data-dir", withKey)
}
