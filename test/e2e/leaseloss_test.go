package e2e

import (
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gcp-project/gcp/test/poll"
)

// exit is how one run of a supervised process ended.
type exit struct {
	code int
	log  string
}

// supervisor runs `gcp args...` and starts it again each time it exits,
// as systemd's Restart=always does (RestartSec shortened), until the end
// of the test, when it stops the running one with SIGTERM.
type supervisor struct {
	exits chan exit // every run's end, in order
	stop  chan struct{}
	done  chan struct{}
	once  sync.Once

	mu  sync.Mutex
	log *syncBuffer // the running one's output
}

func supervise(t *testing.T, args ...string) *supervisor {
	t.Helper()
	s := &supervisor{exits: make(chan exit, 100), stop: make(chan struct{}), done: make(chan struct{}), log: &syncBuffer{}}
	go func() {
		defer close(s.done)
		for {
			log := &syncBuffer{}
			cmd := exec.Command(gcpBinary, args...)
			cmd.Stdout, cmd.Stderr = log, log
			s.mu.Lock()
			s.log = log
			s.mu.Unlock()
			if err := cmd.Start(); err != nil {
				s.exits <- exit{code: -1, log: err.Error()}
				return
			}
			waited := make(chan struct{})
			go func() { _ = cmd.Wait(); close(waited) }()
			select {
			case <-waited:
				select {
				case s.exits <- exit{code: cmd.ProcessState.ExitCode(), log: log.String()}:
				default: // nobody reads that many; keep supervising
				}
			case <-s.stop:
				_ = cmd.Process.Signal(syscall.SIGTERM)
				select {
				case <-waited:
				case <-time.After(30 * time.Second):
					_ = cmd.Process.Kill()
					<-waited
				}
				return
			}
			select {
			case <-s.stop:
				return
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(s.halt)
	return s
}

// halt stops supervising and stops the running process; it is
// idempotent.
func (s *supervisor) halt() {
	s.once.Do(func() { close(s.stop) })
	<-s.done
}

// current is the running process's output so far.
func (s *supervisor) current() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.log.String()
}

// TestControllersLeadAgainAfterEtcdOutage runs the split shape with `gcp
// controllers` under a supervisor that restarts it when it exits, and
// SIGKILLs `gcp etcd` for longer than the controllers' lease: the leader,
// unable to renew, exits 1 with "leader election lost" (it hung for ever
// with /healthz ok: issue 28, defect 3). Once etcd is back the restarted
// process leads again and a namespace deletion completes.
func TestControllersLeadAgainAfterEtcdOutage(t *testing.T) {
	t.Parallel()
	c, a, kubeconfig := startSplitAPIServer(t)
	controllers := supervise(t, "controllers", "--kubeconfig", kubeconfig,
		"--cluster-signing-cert-file", c.p("ca.crt"), "--cluster-signing-key-file", c.p("ca.key"),
		// Serving on, the configuration that hung.
		"--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(freePort(t)), "--cert-dir", t.TempDir(),
		"--leader-elect-lease-duration", "4s", "--leader-elect-renew-deadline", "3s", "--leader-elect-retry-period", "500ms")
	holder := func() string {
		out, err := a.kubectlErr("-n", "kube-system", "get", "lease", "gcp-controllers", "-o", "jsonpath={.spec.holderIdentity}")
		if err != nil {
			return ""
		}
		return strings.TrimSpace(out)
	}
	waitHolder := func(what string, ok func(string) bool) string {
		t.Helper()
		var h string
		poll.Until(t, 200*time.Millisecond, 90*time.Second, func() error {
			if h = holder(); !ok(h) {
				return fmt.Errorf("%s: lease holder %q\n--- controllers\n%s", what, h, controllers.current())
			}
			return nil
		})
		return h
	}
	first := waitHolder("controllers lead", func(h string) bool { return h != "" })
	a.kubectl("create", "namespace", "outage")
	a.kubectl("-n", "outage", "create", "configmap", "content", "--from-literal=k=v")

	// etcd goes away for longer than the lease; the leader cannot renew.
	etcd := &c.members[0]
	_ = etcd.proc.cmd.Process.Kill()
	<-etcd.proc.done
	killed := time.Now()
	select {
	case e := <-controllers.exits:
		if e.code != 1 || !strings.Contains(e.log, "leader election lost") {
			t.Fatalf("controllers exited %d, want 1 with leader election lost:\n%s", e.code, e.log)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("controllers still run 60s after etcd went (lease duration 4s):\n%s", controllers.current())
	}
	t.Logf("controllers exited %s after etcd went", time.Since(killed))

	c.startMember(0)
	c.waitMember(0)
	back := time.Now()
	second := waitHolder("controllers lead again", func(h string) bool { return h != "" && h != first })
	if !strings.HasPrefix(second, hostnamePrefix()) {
		t.Fatalf("holder %q is not one of ours", second)
	}
	t.Logf("controllers lead again %s after etcd came back", time.Since(back))
	a.kubectl("delete", "namespace", "outage", "--wait=false")
	a.eventually(t, "namespace deleted after the outage", 60*time.Second, notFound, "get", "namespace", "outage")

	// The cleanups would stop the restarted etcd first; stop the
	// controllers and the API server before it instead, or each waits out
	// the outage that makes.
	controllers.halt()
	apiserver := c.apiservers[0]
	_ = apiserver.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-apiserver.done:
	case <-time.After(60 * time.Second):
		t.Errorf("apiserver did not stop within 60s of SIGTERM:\n%s", apiserver.log)
	}
}
