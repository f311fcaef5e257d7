package e2e

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gcp-project/gcp/test/poll"
)

// mustGCP runs the binary, fails the test unless it exits 0, and returns
// its combined output.
func mustGCP(t testing.TB, args ...string) string {
	t.Helper()
	out, code := runGCP(t, args...)
	if code != 0 {
		t.Fatalf("gcp %s: exit %d\n%s", strings.Join(args, " "), code, out)
	}
	return out
}

// runGCP runs the binary and returns its combined output and exit code.
func runGCP(t testing.TB, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(gcpBinary, args...)
	cmd.Dir = t.TempDir() // whatever a failing command leaves stays out of the tree
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return string(out), 0
	case errors.As(err, &exit):
		return string(out), exit.ExitCode()
	default:
		t.Fatalf("running gcp %v: %v", args, err)
		return "", -1
	}
}

func TestNonsenseFlagsAreOneLineAndExit1(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"start", "--data-dir", ""},
		{"start", "--secure-port", "70000"},
		{"start", "--bind-address", "not-an-ip"},
		{"start", "--no-such-flag"},
		{"start", "--tls-san", "https://not-a-name"},
		{"start", "--enable-admission-plugins", "NoSuchPlugin"},
		{"start", "--runtime-config", "nope.example.com/v1=true"},
		{"start", "--snapshot-interval", "-1s"},
		{"start", "--snapshot-interval", "1h", "--snapshot-retention", "0"},
		{"start", "--quota-backend-bytes", "-1"},
		{"start", "--min-free-disk", "-1"},
		{"start", "--min-free-disk", "4611686018427387904"}, // more than any disk has free: refused before anything is written
		{"etcd", "--min-free-disk", "much"},
		{"manifests", "systemd", "--role", "nope"},
		{"snapshot", "restore", "/no/such/snapshot.db", "--data-dir", filepath.Join(t.TempDir(), "new")},
		{"etcd", "snapshot", "status", "/no/such/snapshot.db"},
		{"version", "-o", "xml"},
		{"controllers", "--kubeconfig", "k", "--secure-port", "0", "--enable-leader-migration"},
		{"controllers", "--kubeconfig", "k", "--secure-port", "0", "--feature-gates", "NoSuchGate=true"},
		{"controllers", "--kubeconfig", "k", "--secure-port", "0", "--emulated-version", "1.2"},
		{"start", "--emulated-version", "1.2"},
		{"apiserver", "--emulated-version", "kube=1.2"},
		{"etcd", "--data-dir", ""},
		{"etcd", "--listen-client-urls", "::bad"},
		{"apiserver"},
		{"apiserver", "--tls-cert-file", "a.crt", "--tls-private-key-file", "a.key", "--etcd-servers", "https://127.0.0.1:1"},
		{"apiserver", "--tls-cert-file", "a.crt", "--tls-private-key-file", "a.key", "--etcd-servers", "https://127.0.0.1:1", "--client-ca-file", "ca.crt",
			"--enable-admission-plugins", "NoSuchPlugin"},
		{"apiserver", "--tls-cert-file", "a.crt", "--tls-private-key-file", "a.key", "--etcd-servers", "https://127.0.0.1:1", "--client-ca-file", "ca.crt",
			"--identity-lease-renew-interval-seconds", "60", "--identity-lease-duration-seconds", "30"},
		{"apiserver", "--identity-lease-duration-seconds", "soon"},
	} {
		// gcp start is given a data dir to leave uncreated, unless the
		// case is about the flag itself.
		var dataDir string
		if args[0] == "start" && !slices.Contains(args, "--data-dir") {
			dataDir = filepath.Join(t.TempDir(), "parent", "never")
			args = append(args, "--data-dir", dataDir)
		}
		out, code := runGCP(t, args...)
		if code != 1 {
			t.Errorf("gcp %v: exit %d, want 1\n%s", args, code, out)
		}
		if lines := strings.Count(strings.TrimSpace(out), "\n") + 1; lines != 1 {
			t.Errorf("gcp %v: %d lines of output, want one:\n%s", args, lines, out)
		}
		if dataDir != "" {
			if _, err := os.Stat(filepath.Dir(dataDir)); !os.IsNotExist(err) {
				t.Errorf("gcp %v left %s behind (%v)", args, filepath.Dir(dataDir), err)
			}
		}
	}
}

// writeFile writes content to dir/name, 0600, and returns its path.
func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// wantStartRefused runs `gcp start` with flags in a data dir that does not
// exist and checks that it exits 1 with one line naming want (if not
// empty), and leaves no data dir behind.
func wantStartRefused(t *testing.T, want string, flags ...string) {
	t.Helper()
	dataDir := filepath.Join(t.TempDir(), "never")
	args := append([]string{"start", "--data-dir", dataDir, "--secure-port", strconv.Itoa(freePort(t))}, flags...)
	out, code := runGCP(t, args...)
	if code != 1 {
		t.Errorf("gcp %v: exit %d, want 1\n%s", args, code, out)
	}
	if lines := strings.Count(strings.TrimSpace(out), "\n") + 1; lines != 1 {
		t.Errorf("gcp %v: %d lines of output, want one:\n%s", args, lines, out)
	}
	if !strings.Contains(out, want) {
		t.Errorf("gcp %v says %q, want it to name %q", args, out, want)
	}
	if _, err := os.Stat(dataDir); !os.IsNotExist(err) {
		t.Errorf("gcp %v left %s behind (%v)", args, dataDir, err)
	}
}

// TestFailedStartLeavesAnEmptyDataDirEmpty: a data dir made beforehand (a
// systemd StateDirectory) is not left with a PKI by a start that fails on
// a flag only the server's configuration checks.
func TestFailedStartLeavesAnEmptyDataDirEmpty(t *testing.T) {
	t.Parallel()
	dataDir := t.TempDir()
	out, code := runGCP(t, "start", "--data-dir", dataDir, "--secure-port", "0", "--runtime-config", "nope.example.com/v1=true")
	if code != 1 || !strings.Contains(out, "nope.example.com/v1") {
		t.Fatalf("gcp start with an unknown group: exit %d\n%s", code, out)
	}
	if entries, err := os.ReadDir(dataDir); err != nil || len(entries) != 0 {
		t.Errorf("the data dir holds %v after a failed start (%v), want nothing", entries, err)
	}
}

// TestStartOnATakenPortCreatesNothing: gcp start fails at once when its
// port is taken, and leaves no data dir (with a fresh PKI) behind.
func TestStartOnATakenPortCreatesNothing(t *testing.T) {
	t.Parallel()
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	dataDir := filepath.Join(t.TempDir(), "never")
	out, code := runGCP(t, "start", "--data-dir", dataDir, "--secure-port", strconv.Itoa(taken.Addr().(*net.TCPAddr).Port))
	if code != 1 || !strings.Contains(out, "address already in use") {
		t.Fatalf("gcp start on a taken port: exit %d\n%s", code, out)
	}
	if _, err := os.Stat(dataDir); !os.IsNotExist(err) {
		t.Fatalf("gcp start on a taken port left %s behind (%v)", dataDir, err)
	}
}

func TestSecondStartOnSameDataDirFails(t *testing.T) {
	t.Parallel()
	dataDir := t.TempDir()
	a := startAllInOne(t, dataDir)
	out, code := runGCP(t, "start", "--data-dir", dataDir, "--secure-port", "0")
	if code != 1 || !strings.Contains(out, "in use") {
		t.Fatalf("second gcp start: exit %d, want 1 with 'in use':\n%s", code, out)
	}
	// The first keeps serving.
	a.kubectl("get", "namespaces")
}

func TestDataDirPermissions(t *testing.T) {
	t.Parallel()
	dataDir := filepath.Join(t.TempDir(), "gcp")
	startAllInOne(t, dataDir)
	for path, want := range map[string]os.FileMode{
		dataDir: 0o700,
		filepath.Join(dataDir, "admin.kubeconfig"): 0o600,
	} {
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := st.Mode().Perm(); got != want {
			t.Errorf("%s: mode %o, want %o", path, got, want)
		}
	}
	err := filepath.Walk(dataDir, func(path string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if strings.HasSuffix(path, ".key") && info.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %o, want 600", path, info.Mode().Perm())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestKubectlDefaultsToDataDirKubeconfig runs `gcp kubectl` with KUBECONFIG
// unset from the directory holding .gcp: it finds admin.kubeconfig itself.
func TestKubectlDefaultsToDataDirKubeconfig(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	startAllInOne(t, filepath.Join(work, ".gcp"))
	cmd := exec.Command(gcpBinary, "kubectl", "get", "namespaces")
	cmd.Dir = work
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "KUBECONFIG=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "kube-system") {
		t.Fatalf("gcp kubectl without KUBECONFIG: %v\n%s", err, out)
	}
}

// TestSIGINTStopsCleanly: Ctrl-C ends gcp start with exit code 0.
func TestSIGINTStopsCleanly(t *testing.T) {
	t.Parallel()
	a := startAllInOne(t, t.TempDir())
	_ = a.cmd.Process.Signal(os.Interrupt)
	if err := <-a.exited; err != nil {
		t.Fatalf("gcp start after SIGINT: %v, want exit 0\n%s", err, a.log)
	}
	a.exited <- nil
}

// TestSIGTERMClosesOpenWatches: a server with a client watching it stops
// within seconds of SIGTERM (--shutdown-watch-termination-grace-period,
// 2 s), closing the watch, instead of waiting out the 60 s request
// timeout as k8s.io/apiserver does by default. Both shapes' API servers.
func TestSIGTERMClosesOpenWatches(t *testing.T) {
	t.Parallel()
	check := func(t *testing.T, kubeconfig string, server *exec.Cmd, exited <-chan struct{}) {
		t.Helper()
		watch := exec.Command(gcpBinary, "kubectl", "--kubeconfig", kubeconfig, "get", "configmaps", "-w")
		stdout, err := watch.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := watch.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = watch.Process.Kill() })
		// kubectl prints the list it watches from, then waits on the watch.
		listed := make(chan struct{})
		watchDone := make(chan error, 1)
		go func() {
			scanner := bufio.NewScanner(stdout)
			for first := true; scanner.Scan(); first = false {
				if first {
					close(listed)
				}
			}
			watchDone <- watch.Wait()
		}()
		select {
		case <-listed:
		case <-time.After(30 * time.Second):
			t.Fatal("kubectl get -w printed nothing")
		}
		start := time.Now()
		_ = server.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			t.Fatalf("still running 30 s after SIGTERM with a watch open")
		}
		t.Logf("stopped %v after SIGTERM with a watch open", time.Since(start).Round(time.Millisecond))
		select {
		case <-watchDone:
		case <-time.After(10 * time.Second):
			t.Errorf("kubectl get -w still running after the server stopped")
		}
	}
	t.Run("all-in-one", func(t *testing.T) {
		t.Parallel()
		a := startAllInOne(t, t.TempDir())
		exited := make(chan struct{})
		go func() {
			err := <-a.exited
			a.exited <- err
			close(exited)
		}()
		check(t, a.kubeconfig(), a.cmd, exited)
	})
	t.Run("split", func(t *testing.T) {
		t.Parallel()
		s := startSplit(t)
		apiserver := s.cluster.apiservers[0]
		check(t, s.kubeconfig(), apiserver.cmd, apiserver.done)
	})
}

// TestKubectlEndsOnFirstSIGINT: gcp kubectl behaves as kubectl does on
// Ctrl-C: `get -w` and `proxy` end at the first SIGINT (the servers'
// two-step shutdown is theirs alone).
func TestKubectlEndsOnFirstSIGINT(t *testing.T) {
	t.Parallel()
	a := startAllInOne(t, t.TempDir())
	for _, args := range [][]string{{"get", "configmaps", "-w"}, {"proxy", "--port=0"}} {
		cmd := exec.Command(gcpBinary, append([]string{"kubectl", "--kubeconfig", a.kubeconfig()}, args...)...)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill() })
		if _, err := bufio.NewReader(stdout).ReadString('\n'); err != nil {
			t.Fatalf("gcp kubectl %v printed nothing: %v", args, err)
		}
		go func() { _, _ = io.Copy(io.Discard, stdout) }()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Errorf("gcp kubectl %v still running 10 s after one SIGINT", args)
		}
	}
}

// TestSymlinks: `gcp --make-symlinks DIR` makes a link per command, and the
// shipped binary, called by a link's name, runs that command
// (hyperkube-style, commands/multicall).
func TestSymlinks(t *testing.T) {
	dir := t.TempDir()
	if out, err := exec.Command(gcpBinary, "--make-symlinks", dir).CombinedOutput(); err != nil {
		t.Fatalf("gcp --make-symlinks: %v\n%s", err, out)
	}
	for _, command := range []string{"apiserver", "controllers", "etcd", "start", "manifests", "pki", "snapshot", "version"} {
		out, err := exec.Command(filepath.Join(dir, "gcp-"+command), "--help").CombinedOutput()
		if err != nil || !strings.Contains(string(out), "Usage:\n  gcp "+command+" ") {
			t.Errorf("gcp-%s --help: %v\n%s", command, err, out)
		}
	}
	kubectl := exec.Command(filepath.Join(dir, "kubectl"), "version", "--client")
	kubectl.Env = append(os.Environ(), "KUBECONFIG="+filepath.Join(dir, "none"))
	if out, err := kubectl.CombinedOutput(); err != nil || !strings.HasPrefix(string(out), "Client Version: v1.") {
		t.Errorf("kubectl version --client: %v\n%s", err, out)
	}
	// gcp-start is `gcp start`: it serves, and stops on SIGTERM.
	dataDir := filepath.Join(t.TempDir(), "data")
	start := exec.Command(filepath.Join(dir, "gcp-start"), "--data-dir", dataDir, "--secure-port", "0")
	var log syncBuffer
	start.Stdout, start.Stderr = &log, &log
	if err := start.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- start.Wait() }()
	defer func() { _ = start.Process.Kill() }()
	kubeconfig := filepath.Join(dataDir, "admin.kubeconfig")
	err := poll.Wait(context.Background(), 100*time.Millisecond, 60*time.Second, func() error {
		select {
		case err := <-exited:
			t.Fatalf("gcp-start exited before ready: %v\n%s", err, &log)
		default:
		}
		if _, err := os.Stat(kubeconfig); err != nil {
			return err
		}
		return exec.Command(gcpBinary, "kubectl", "--kubeconfig", kubeconfig, "get", "--raw", "/readyz").Run()
	})
	if err != nil {
		t.Fatalf("gcp-start not ready: %v\n%s", err, &log)
	}
	_ = start.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("gcp-start after SIGTERM: %v\n%s", err, &log)
		}
	case <-time.After(60 * time.Second):
		t.Errorf("gcp-start did not stop within 60s of SIGTERM:\n%s", &log)
	}
}
