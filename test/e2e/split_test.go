package e2e

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gcp-project/gcp/test/freeport"
	"github.com/gcp-project/gcp/test/poll"
)

// freePort returns a loopback port nothing listens on and that no earlier
// call in this test binary returned (package freeport).
func freePort(t testing.TB) int {
	t.Helper()
	return freeport.Get(t)
}

// TestSplitProcesses runs `gcp etcd` with client TLS and `gcp apiserver`
// against it, with the certificates a `gcp start` created and `gcp pki
// init` completed, and uses kubectl.
func TestSplitProcesses(t *testing.T) {
	t.Parallel()
	dataDir := t.TempDir()
	// A first `gcp start` creates the PKI and admin kubeconfig.
	a := startAllInOne(t, dataDir)
	if err := a.stop(); err != nil {
		t.Fatal(err)
	}
	pki := filepath.Join(dataDir, "pki")
	p := func(name string) string { return filepath.Join(pki, name) }
	// gcp pki init adds the etcd CA and member gcp's certificates to the
	// PKI gcp start made, and keeps the rest.
	mustGCP(t, "pki", "init", "--dir", pki)

	etcdPort := freePort(t)
	etcd := startProcess(t, "etcd", "--data-dir", filepath.Join(t.TempDir(), "etcd"),
		"--listen-client-urls", fmt.Sprintf("https://127.0.0.1:%d", etcdPort),
		"--cert-file", p("etcd/gcp/server.crt"), "--key-file", p("etcd/gcp/server.key"), "--trusted-ca-file", p("etcd/ca.crt"))
	apiPort := freePort(t)
	apiserver := startProcess(t, "apiserver",
		"--etcd-servers", fmt.Sprintf("https://127.0.0.1:%d", etcdPort),
		"--etcd-cafile", p("etcd/ca.crt"), "--etcd-certfile", p("apiserver-etcd-client.crt"), "--etcd-keyfile", p("apiserver-etcd-client.key"),
		"--tls-cert-file", p("apiserver.crt"), "--tls-private-key-file", p("apiserver.key"), "--client-ca-file", p("ca.crt"),
		"--service-account-issuer", fmt.Sprintf("https://127.0.0.1:%d", apiPort),
		"--service-account-signing-key-file", p("sa.key"), "--service-account-key-file", p("sa.pub"),
		"--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(apiPort))

	server := fmt.Sprintf("https://127.0.0.1:%d", apiPort)
	poll.Until(t, 200*time.Millisecond, 60*time.Second, func() error {
		if _, err := a.kubectlErr("--server", server, "get", "--raw", "/readyz"); err != nil {
			return fmt.Errorf("split apiserver not ready: %w\n--- etcd\n%s\n--- apiserver\n%s", err, etcd.log, apiserver.log)
		}
		return nil
	})
	a.kubectl("--server", server, "create", "configmap", "split", "--from-literal=k=v")
	mustContain(t, a.kubectl("--server", server, "get", "configmap", "split", "-o", "jsonpath={.data.k}"), "v")
	mustContain(t, a.kubectl("--server", server, "get", "namespaces"), "kube-system")
	// RBAC's bootstrap policy and service account tokens work the same.
	mustContain(t, a.kubectl("--server", server, "get", "clusterrole", "edit"), "edit")
	a.kubectl("--server", server, "create", "serviceaccount", "robot")
	if token := a.kubectl("--server", server, "create", "token", "robot"); strings.Count(token, ".") != 2 {
		t.Fatalf("not a token: %q", token)
	}
}
