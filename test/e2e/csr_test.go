package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gcp-project/gcp/test/poll"
)

// csrKubectl runs `gcp kubectl` with kubeconfig instead of the admin's.
func csrKubectl(kubeconfig string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, gcpBinary, append([]string{"kubectl", "--kubeconfig", kubeconfig}, args...)...).CombinedOutput()
	return string(out), err
}

// TestCSRAddUser is docs/auth.md's "Adding a user" with the real kubectl
// in every shape: a CSR is created, approved and signed by the
// controller with the data dir's CA; the new user's kubeconfig
// authenticates, and RBAC allows what a RoleBinding grants.
func TestCSRAddUser(t *testing.T) {
	t.Parallel()
	forEachShape(t, func(t *testing.T, a controlPlane) {
		work := t.TempDir()

		// The user's side: a private key and a CSR for CN alice, O dev.
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "alice", Organization: []string{"dev"}}}, key)
		if err != nil {
			t.Fatal(err)
		}
		keyDER, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			t.Fatal(err)
		}
		keyFile := filepath.Join(work, "alice.key")
		if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
			t.Fatal(err)
		}
		request := base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}))

		// The admin's side: create, approve, and hand back the certificate.
		a.apply(`apiVersion: certificates.k8s.io/v1
kind: CertificateSigningRequest
metadata:
  name: alice
spec:
  request: `+request+`
  signerName: kubernetes.io/kube-apiserver-client
  expirationSeconds: 86400
  usages:
  - client auth
`, "create", "-f", "-")
		mustContain(t, a.kubectl("get", "csr", "alice"), "kubernetes.io/kube-apiserver-client", "Pending")
		a.kubectl("certificate", "approve", "alice")
		var certB64 string
		poll.Until(t, 100*time.Millisecond, 30*time.Second, func() error {
			out, err := a.kubectlErr("get", "csr", "alice", "-o", "jsonpath={.status.certificate}")
			if certB64 = strings.TrimSpace(out); err != nil || certB64 == "" {
				return fmt.Errorf("no certificate in status: %v\n%s", err, out)
			}
			return nil
		})
		mustContain(t, a.kubectl("get", "csr", "alice"), "Approved,Issued")
		certPEM, err := base64.StdEncoding.DecodeString(certB64)
		if err != nil {
			t.Fatalf("status.certificate is not base64: %v", err)
		}
		certFile := filepath.Join(work, "alice.crt")
		if err := os.WriteFile(certFile, certPEM, 0o600); err != nil {
			t.Fatal(err)
		}

		// The user's kubeconfig, built with kubectl config.
		server := strings.TrimSpace(a.kubectl("config", "view", "-o", "jsonpath={.clusters[0].cluster.server}"))
		userKubeconfig := filepath.Join(work, "alice.kubeconfig")
		for _, args := range [][]string{
			{"config", "set-cluster", "gcp", "--server=" + server, "--certificate-authority=" + filepath.Join(a.dir(), "pki", "ca.crt"), "--embed-certs"},
			{"config", "set-credentials", "alice", "--client-certificate=" + certFile, "--client-key=" + keyFile, "--embed-certs"},
			{"config", "set-context", "alice", "--cluster=gcp", "--user=alice"},
			{"config", "use-context", "alice"},
		} {
			if out, err := csrKubectl(userKubeconfig, args...); err != nil {
				t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
			}
		}

		whoami, err := csrKubectl(userKubeconfig, "auth", "whoami")
		if err != nil {
			t.Fatalf("auth whoami as alice: %v\n%s", err, whoami)
		}
		mustContain(t, whoami, "alice", "dev", "system:authenticated")

		out, err := csrKubectl(userKubeconfig, "get", "configmaps", "-n", "default")
		if err == nil || !strings.Contains(out, "Forbidden") {
			t.Fatalf("get configmaps before any binding: %v\n%s", err, out)
		}
		a.kubectl("create", "rolebinding", "alice-view", "--clusterrole=view", "--user=alice", "-n", "default")
		// RBAC reads informer caches: give the fresh binding a moment.
		poll.Until(t, 100*time.Millisecond, 30*time.Second, func() error {
			if out, err := csrKubectl(userKubeconfig, "get", "configmaps", "-n", "default"); err != nil || !strings.Contains(out, "kube-root-ca.crt") {
				return fmt.Errorf("no access after the RoleBinding: %v\n%s", err, out)
			}
			return nil
		})
		if out, err := csrKubectl(userKubeconfig, "get", "configmaps", "-n", "kube-system"); err == nil || !strings.Contains(out, "Forbidden") {
			t.Fatalf("get configmaps outside the bound namespace: %v\n%s", err, out)
		}
	})
}
