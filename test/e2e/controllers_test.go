package e2e

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gcp-project/gcp/test/poll"
)

// syncBuffer is a log buffer safe to read while the process writes it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// process is a running gcp subcommand (or another binary a test runs).
type process struct {
	cmd  *exec.Cmd
	log  *syncBuffer
	done chan struct{}
}

func startProcess(t testing.TB, args ...string) *process {
	t.Helper()
	return startBinaryProcess(t, gcpBinary, args...)
}

// startBinaryProcess runs binary with args, stopping it (SIGTERM, then
// SIGKILL after 30 s) at the end of the test.
func startBinaryProcess(t testing.TB, binary string, args ...string) *process {
	t.Helper()
	p := &process{cmd: exec.Command(binary, args...), log: &syncBuffer{}, done: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(30 * time.Second):
			_ = p.cmd.Process.Kill()
		}
	})
	return p
}

// TestControllersLeaderElection runs two `gcp controllers` against one
// control plane: one holds the Lease; SIGKILL hands it to the other within
// the lease duration; SIGTERM releases it at once.
func TestControllersLeaderElection(t *testing.T) {
	t.Parallel()
	dataDir := t.TempDir()
	a := startAllInOne(t, dataDir)
	kubeconfig := filepath.Join(dataDir, "controllers.kubeconfig")
	args := func(port int) []string {
		return []string{"controllers", "--kubeconfig", kubeconfig, "--secure-port", fmt.Sprint(port), "--cert-dir", t.TempDir(),
			// gcp start runs its own controllers; these elect on a lease of
			// their own, with short durations to keep the test quick.
			"--leader-elect-resource-name", "e2e-controllers",
			"--leader-elect-lease-duration", "4s", "--leader-elect-renew-deadline", "3s", "--leader-elect-retry-period", "500ms"}
	}
	portA, portB := freePort(t), freePort(t)
	procs := map[string]*process{}
	procs["a"] = startProcess(t, args(portA)...)
	holder := func() string {
		out, err := a.kubectlErr("-n", "kube-system", "get", "lease", "e2e-controllers", "-o", "jsonpath={.spec.holderIdentity}")
		if err != nil {
			return ""
		}
		return strings.TrimSpace(out)
	}
	waitHolder := func(what string, timeout time.Duration, ok func(string) bool) string {
		t.Helper()
		logOf := func(name string) any {
			if p := procs[name]; p != nil {
				return p.log
			}
			return "(not started)"
		}
		var h string
		poll.Until(t, 100*time.Millisecond, timeout, func() error {
			if h = holder(); !ok(h) {
				return fmt.Errorf("%s: lease holder %q\n--- a\n%s\n--- b\n%s", what, h, logOf("a"), logOf("b"))
			}
			return nil
		})
		return h
	}
	first := waitHolder("first process leads", 60*time.Second, func(h string) bool { return h != "" })
	procs["b"] = startProcess(t, args(portB)...)

	// Serving: health for anyone, metrics only for the authorized.
	caPEM, err := os.ReadFile(filepath.Join(dataDir, "pki", "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	insecure := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} // self-signed serving cert
	get := func(url string) int {
		resp, err := insecure.Get(url)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	// Healthy, then ready once the leader's informers have synced; 30 s
	// for both.
	start := time.Now()
	poll.Until(t, 100*time.Millisecond, 30*time.Second, func() error {
		if code := get(fmt.Sprintf("https://127.0.0.1:%d/healthz", portA)); code != http.StatusOK {
			return fmt.Errorf("controllers /healthz %d, not 200:\n%s", code, procs["a"].log)
		}
		return nil
	})
	poll.Until(t, 100*time.Millisecond, 30*time.Second-time.Since(start), func() error {
		if code := get(fmt.Sprintf("https://127.0.0.1:%d/readyz", portA)); code != http.StatusOK {
			return fmt.Errorf("controllers /readyz %d, not 200:\n%s", code, procs["a"].log)
		}
		return nil
	})
	if code := get(fmt.Sprintf("https://127.0.0.1:%d/metrics", portA)); code != http.StatusForbidden && code != http.StatusUnauthorized {
		t.Errorf("anonymous /metrics: want 401 or 403, got %d", code)
	}

	// Kill the leader without letting it release: the other takes over
	// once the lease expires.
	leader, follower := "a", "b"
	if !strings.HasPrefix(first, hostnamePrefix()) {
		t.Fatalf("holder %q is not one of ours", first)
	}
	_ = procs[leader].cmd.Process.Kill()
	<-procs[leader].done
	killed := time.Now()
	second := waitHolder("follower takes over", 20*time.Second, func(h string) bool { return h != "" && h != first })
	// How long is for the benchmark-minded only: a loaded machine may
	// stretch it, and waitHolder's bound is the test.
	t.Logf("takeover took %s, lease duration is 4s", time.Since(killed))

	// SIGTERM releases the lease at once.
	_ = procs[follower].cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-procs[follower].done:
	case <-time.After(30 * time.Second):
		t.Fatalf("SIGTERM did not stop the controllers:\n%s", procs[follower].log)
	}
	if h := holder(); h == second {
		t.Fatalf("lease still held by %q after SIGTERM", h)
	}
}

func hostnamePrefix() string {
	h, _ := os.Hostname()
	return h + "_"
}
