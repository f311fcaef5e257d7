package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gcp-project/gcp/test/poll"
)

// TestControllersSurviveAPIServerRestart runs `gcp etcd`, `gcp apiserver`
// and `gcp controllers` as separate processes and restarts the API server
// while a namespace deletion waits on a finalizer: once the server is back,
// the controllers' informers resume, the deletion completes, and the
// garbage collector still works.
func TestControllersSurviveAPIServerRestart(t *testing.T) {
	t.Parallel()
	dataDir := t.TempDir()
	a := startAllInOne(t, dataDir) // creates the PKI and kubeconfigs
	if err := a.stop(); err != nil {
		t.Fatal(err)
	}
	p := func(name string) string { return filepath.Join(dataDir, "pki", name) }
	mustGCP(t, "pki", "init", "--dir", filepath.Join(dataDir, "pki"))

	etcdPort := freePort(t)
	etcd := startProcess(t, "etcd", "--data-dir", filepath.Join(t.TempDir(), "etcd"),
		"--listen-client-urls", fmt.Sprintf("https://127.0.0.1:%d", etcdPort),
		"--cert-file", p("etcd/gcp/server.crt"), "--key-file", p("etcd/gcp/server.key"), "--trusted-ca-file", p("etcd/ca.crt"))
	apiPort := freePort(t)
	server := fmt.Sprintf("https://127.0.0.1:%d", apiPort)
	apiserverArgs := []string{"apiserver",
		"--etcd-servers", fmt.Sprintf("https://127.0.0.1:%d", etcdPort),
		"--etcd-cafile", p("etcd/ca.crt"), "--etcd-certfile", p("apiserver-etcd-client.crt"), "--etcd-keyfile", p("apiserver-etcd-client.key"),
		"--tls-cert-file", p("apiserver.crt"), "--tls-private-key-file", p("apiserver.key"), "--client-ca-file", p("ca.crt"),
		"--service-account-issuer", server,
		"--service-account-signing-key-file", p("sa.key"), "--service-account-key-file", p("sa.pub"),
		"--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(apiPort),
		// Long-running watches (the controllers') would hold a plain
		// graceful shutdown for the whole 60 s request timeout.
		"--shutdown-send-retry-after"}
	apiserver := startProcess(t, apiserverArgs...)
	kubectl := func(args ...string) (string, error) {
		return a.kubectlErr(append([]string{"--server", server}, args...)...)
	}
	waitReady := func(what string) {
		t.Helper()
		poll.Until(t, 200*time.Millisecond, 60*time.Second, func() error {
			if _, err := kubectl("get", "--raw", "/readyz"); err != nil {
				return fmt.Errorf("%s: apiserver not ready: %w\n--- etcd\n%s\n--- apiserver\n%s", what, err, etcd.log, apiserver.log)
			}
			return nil
		})
	}
	waitReady("first start")

	// The controllers' kubeconfig, pointed at the split API server.
	kc, err := os.ReadFile(filepath.Join(dataDir, "controllers.kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(t.TempDir(), "controllers.kubeconfig")
	var lines []string
	for _, l := range strings.Split(string(kc), "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "server:") {
			l = l[:strings.Index(l, "server:")] + "server: " + server
		}
		lines = append(lines, l)
	}
	if err := os.WriteFile(kubeconfig, []byte(strings.Join(lines, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	controllers := startProcess(t, "controllers", "--kubeconfig", kubeconfig, "--secure-port", "0", "--leader-elect=false")
	eventually := func(what string, timeout time.Duration, check func(out string, err error) bool, args ...string) {
		t.Helper()
		poll.Until(t, 100*time.Millisecond, timeout, func() error {
			if out, err := kubectl(args...); !check(out, err) {
				return fmt.Errorf("%s: last output (%v):\n%s\n--- controllers\n%s", what, err, out, controllers.log)
			}
			return nil
		})
	}
	apply := func(yaml string) {
		t.Helper()
		if out, err := a.kubectlEnv(nil, yaml, "--server", server, "apply", "-f", "-"); err != nil {
			t.Fatalf("apply: %v\n%s", err, out)
		}
	}

	if out, err := kubectl("create", "namespace", "demo"); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	eventually("default service account", 30*time.Second, func(_ string, err error) bool { return err == nil }, "-n", "demo", "get", "serviceaccount", "default")
	apply(`apiVersion: v1
kind: ConfigMap
metadata: {name: held, namespace: demo, finalizers: [example.com/hold]}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: plain, namespace: demo}
`)
	if out, err := kubectl("delete", "namespace", "demo", "--wait=false"); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	eventually("the controller reports the finalizer", 30*time.Second, func(out string, _ error) bool { return strings.Contains(out, "example.com/hold") },
		"get", "namespace", "demo", "-o", `jsonpath={.status.conditions[?(@.type=="NamespaceFinalizersRemaining")].message}`)
	eventually("plain deleted", 30*time.Second, notFound, "-n", "demo", "get", "configmap", "plain")

	// Restart the API server under the running controllers.
	_ = apiserver.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-apiserver.done:
	case <-time.After(60 * time.Second):
		t.Fatalf("apiserver did not stop:\n%s", apiserver.log)
	}
	apiserver = startProcess(t, apiserverArgs...)
	waitReady("restart")

	if out, err := kubectl("-n", "demo", "patch", "configmap", "held", "--type=merge", "-p", `{"metadata":{"finalizers":null}}`); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	eventually("namespace gone after the restart", 60*time.Second, notFound, "get", "namespace", "demo")

	// The garbage collector's informers resumed too.
	if out, err := kubectl("create", "configmap", "owner"); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	uid, err := kubectl("get", "configmap", "owner", "-o", "jsonpath={.metadata.uid}")
	if err != nil {
		t.Fatal(err)
	}
	apply("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: dependent\n  namespace: default\n  ownerReferences:\n  - {apiVersion: v1, kind: ConfigMap, name: owner, uid: " + strings.TrimSpace(uid) + "}\n")
	if out, err := kubectl("delete", "configmap", "owner"); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	eventually("dependent collected after the restart", 60*time.Second, notFound, "get", "configmap", "dependent")
}
