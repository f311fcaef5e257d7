package e2e

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// notifySocket listens where a Type=notify unit's $NOTIFY_SOCKET points
// and returns the env entry and the next message within timeout.
func notifySocket(t *testing.T) (env string, next func(timeout time.Duration) string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "notify.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return "NOTIFY_SOCKET=" + path, func(timeout time.Duration) string {
		t.Helper()
		_ = conn.SetReadDeadline(time.Now().Add(timeout))
		buf := make([]byte, 4096)
		n, err := conn.Read(buf)
		if err != nil {
			t.Fatalf("no systemd notification within %v: %v", timeout, err)
		}
		return strings.TrimSpace(string(buf[:n]))
	}
}

// TestSystemdNotify: under a Type=notify unit, gcp start (as gcp
// apiserver) sends READY=1 once /readyz is 200, not when it merely
// listens as k8s.io/apiserver would; gcp etcd and gcp controllers once
// they serve; each sends STOPPING=1 when SIGTERM begins its shutdown.
func TestSystemdNotify(t *testing.T) {
	t.Parallel()
	dataDir := t.TempDir()
	env, next := notifySocket(t)
	start := exec.Command(gcpBinary, "start", "--data-dir", dataDir, "--secure-port", "0")
	start.Env = append(os.Environ(), env)
	if err := start.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = start.Wait(); close(exited) }()
	t.Cleanup(func() { _ = start.Process.Kill(); <-exited })

	if msg := next(60 * time.Second); msg != "READY=1" {
		t.Fatalf("gcp start sent %q, want READY=1", msg)
	}
	a := &allInOne{t: t, binary: gcpBinary, dataDir: dataDir}
	if out, err := a.kubectlErr("get", "--raw", "/readyz"); err != nil || strings.TrimSpace(out) != "ok" {
		t.Fatalf("READY=1 came before /readyz was ok: %v %q", err, out)
	}

	// gcp controllers against it: ready once the API server answers.
	cenv, cnext := notifySocket(t)
	ctrl := exec.Command(gcpBinary, "controllers", "--kubeconfig", filepath.Join(dataDir, "controllers.kubeconfig"), "--secure-port", "0", "--leader-elect=false")
	ctrl.Env = append(os.Environ(), cenv)
	if err := ctrl.Start(); err != nil {
		t.Fatal(err)
	}
	if msg := cnext(60 * time.Second); msg != "READY=1" {
		t.Fatalf("gcp controllers sent %q, want READY=1", msg)
	}
	_ = ctrl.Process.Signal(syscall.SIGTERM)
	if msg := cnext(30 * time.Second); msg != "STOPPING=1" {
		t.Fatalf("gcp controllers sent %q on SIGTERM, want STOPPING=1", msg)
	}
	_ = ctrl.Wait()

	_ = start.Process.Signal(syscall.SIGTERM)
	if msg := next(30 * time.Second); msg != "STOPPING=1" {
		t.Fatalf("gcp start sent %q on SIGTERM, want STOPPING=1", msg)
	}

	// gcp etcd, on a unix socket (no TLS needed there).
	eenv, enext := notifySocket(t)
	etcdDir := t.TempDir()
	member := exec.Command(gcpBinary, "etcd", "--data-dir", filepath.Join(etcdDir, "data"),
		"--listen-client-urls", "unix://"+filepath.Join(etcdDir, "etcd.sock"))
	member.Env = append(os.Environ(), eenv)
	if err := member.Start(); err != nil {
		t.Fatal(err)
	}
	if msg := enext(60 * time.Second); msg != "READY=1" {
		t.Fatalf("gcp etcd sent %q, want READY=1", msg)
	}
	_ = member.Process.Signal(syscall.SIGTERM)
	if msg := enext(30 * time.Second); msg != "STOPPING=1" {
		t.Fatalf("gcp etcd sent %q on SIGTERM, want STOPPING=1", msg)
	}
	_ = member.Wait()
}
