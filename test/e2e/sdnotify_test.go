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

// notified is a gcp subcommand run as under a Type=notify unit.
type notified struct {
	t      *testing.T
	name   string
	cmd    *exec.Cmd
	conn   *net.UnixConn
	exited chan struct{}
}

// runNotified runs `gcp args...` with $NOTIFY_SOCKET pointing at a socket
// the test reads; the process is killed at the end of the test.
func runNotified(t *testing.T, args ...string) *notified {
	t.Helper()
	path := filepath.Join(t.TempDir(), "notify.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	n := &notified{t: t, name: "gcp " + args[0], cmd: exec.Command(gcpBinary, args...), conn: conn, exited: make(chan struct{})}
	n.cmd.Env = append(os.Environ(), "NOTIFY_SOCKET="+path)
	if err := n.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = n.cmd.Wait(); close(n.exited) }()
	t.Cleanup(func() {
		_ = n.cmd.Process.Kill()
		<-n.exited
		_ = conn.Close()
	})
	return n
}

// expect fails the test unless the next notification, within timeout,
// is want.
func (n *notified) expect(want string, timeout time.Duration) {
	n.t.Helper()
	_ = n.conn.SetReadDeadline(time.Now().Add(timeout))
	buf := make([]byte, 4096)
	c, err := n.conn.Read(buf)
	if err != nil {
		n.t.Fatalf("%s: no systemd notification within %v: %v", n.name, timeout, err)
	}
	if got := strings.TrimSpace(string(buf[:c])); got != want {
		n.t.Fatalf("%s sent %q, want %s", n.name, got, want)
	}
}

// stop sends SIGTERM and expects STOPPING=1.
func (n *notified) stop() {
	n.t.Helper()
	_ = n.cmd.Process.Signal(syscall.SIGTERM)
	n.expect("STOPPING=1", 30*time.Second)
	<-n.exited
}

// TestSystemdNotify: under a Type=notify unit, gcp start (as gcp
// apiserver) sends READY=1 once /readyz is 200, not when it merely
// listens as k8s.io/apiserver would; gcp etcd and gcp controllers once
// they serve; each sends STOPPING=1 when SIGTERM begins its shutdown.
func TestSystemdNotify(t *testing.T) {
	t.Parallel()
	dataDir := t.TempDir()
	start := runNotified(t, "start", "--data-dir", dataDir, "--secure-port", "0")
	start.expect("READY=1", 60*time.Second)
	a := &allInOne{t: t, binary: gcpBinary, dataDir: dataDir}
	if out, err := a.kubectlErr("get", "--raw", "/readyz"); err != nil || strings.TrimSpace(out) != "ok" {
		t.Fatalf("READY=1 came before /readyz was ok: %v %q", err, out)
	}

	// gcp controllers against it: ready once the API server answers.
	ctrl := runNotified(t, "controllers", "--kubeconfig", filepath.Join(dataDir, "controllers.kubeconfig"), "--secure-port", "0", "--leader-elect=false")
	ctrl.expect("READY=1", 60*time.Second)
	ctrl.stop()
	start.stop()

	// gcp etcd, on a unix socket (no TLS needed there).
	etcdDir := t.TempDir()
	member := runNotified(t, "etcd", "--data-dir", filepath.Join(etcdDir, "data"), "--listen-client-urls", "unix://"+filepath.Join(etcdDir, "etcd.sock"))
	member.expect("READY=1", 60*time.Second)
	member.stop()
}
