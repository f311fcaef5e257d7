package integration

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	kmsservice "k8s.io/kms/pkg/service"

	"github.com/gcp-project/gcp/pkg/controlplane/allinone"
)

// kmsPlugin is a KMS v2 plugin for tests, served by k8s.io/kms's own gRPC
// service: AES-GCM with one key held in memory. Status fails while down.
type kmsPlugin struct {
	aead cipher.AEAD
	down atomic.Bool
}

func newKMSPlugin(t *testing.T) *kmsPlugin {
	t.Helper()
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		t.Fatal(err)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		t.Fatal(err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		t.Fatal(err)
	}
	return &kmsPlugin{aead: aead}
}

func (p *kmsPlugin) Encrypt(_ context.Context, _ string, data []byte) (*kmsservice.EncryptResponse, error) {
	nonce := make([]byte, p.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	return &kmsservice.EncryptResponse{Ciphertext: p.aead.Seal(nonce, nonce, data, nil), KeyID: "key1"}, nil
}

func (p *kmsPlugin) Decrypt(_ context.Context, _ string, req *kmsservice.DecryptRequest) ([]byte, error) {
	n := p.aead.NonceSize()
	if len(req.Ciphertext) < n {
		return nil, errors.New("short ciphertext")
	}
	return p.aead.Open(nil, req.Ciphertext[:n], req.Ciphertext[n:], nil)
}

func (p *kmsPlugin) Status(context.Context) (*kmsservice.StatusResponse, error) {
	if p.down.Load() {
		return &kmsservice.StatusResponse{Version: "v2", Healthz: "down", KeyID: "key1"}, nil
	}
	return &kmsservice.StatusResponse{Version: "v2", Healthz: "ok", KeyID: "key1"}, nil
}

// TestKMSHealthCheck: with a KMS provider in gcp start's encryption
// config, /readyz and /healthz check the KMS plugin (kms-providers), as
// kube-apiserver's do, and Secrets are encrypted through it.
func TestKMSHealthCheck(t *testing.T) {
	t.Parallel()
	dataDir := t.TempDir()
	socket := filepath.Join(dataDir, "kms.sock")
	plugin := newKMSPlugin(t)
	service := kmsservice.NewGRPCService(socket, 5*time.Second, plugin)
	go func() { _ = service.ListenAndServe() }()
	defer service.Close()

	pkiDir := filepath.Join(dataDir, "pki")
	if err := os.MkdirAll(pkiDir, 0o700); err != nil {
		t.Fatal(err)
	}
	config := fmt.Sprintf(`apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
- resources: [secrets]
  providers:
  - kms:
      apiVersion: v2
      name: test-kms
      endpoint: unix://%s
      timeout: 3s
  - identity: {}
`, socket)
	if err := os.WriteFile(filepath.Join(pkiDir, allinone.EncryptionConfigName), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}

	o := allInOne(dataDir, nil)
	o.SecretsEncryption = true
	_, client := runAllInOne(t, o, composeGeneric(t))
	ctx := context.Background()
	readyz := func(ctx context.Context) (string, error) {
		body, err := client.Discovery().RESTClient().Get().AbsPath("/readyz").Param("verbose", "true").DoRaw(ctx)
		return string(body), err
	}
	var body string
	var err error
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		body, err = readyz(ctx)
		return err == nil, nil
	}); err != nil {
		t.Fatalf("not ready: %v\n%s", err, body)
	}
	for _, check := range []string{"[+]kms-providers ok", "[+]etcd ok", "[+]etcd-readiness ok"} {
		if !strings.Contains(body, check) {
			t.Errorf("/readyz has no %q:\n%s", check, body)
		}
	}
	if _, err := client.CoreV1().Secrets("default").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "through-kms"}, StringData: map[string]string{"k": "v"}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating a Secret through the KMS plugin: %v", err)
	}

	// The plugin reports itself down: readiness fails, naming it.
	plugin.down.Store(true)
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		body, err = readyz(ctx)
		return err != nil && strings.Contains(body, "[-]kms-providers failed"), nil
	}); err != nil {
		t.Fatalf("readiness did not fail with the KMS plugin down: %v\n%s", err, body)
	}
}
