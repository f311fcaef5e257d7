package e2e

import (
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gcp-project/gcp/test/poll"
)

// outageStopWithin bounds how long a process may take to exit after
// SIGTERM while etcd is down; the margin is for a loaded machine.
const outageStopWithin = 10 * time.Second

// TestStartDuringEtcdOutageStopsOnSIGTERM (issue 28): with etcd gone,
// `gcp controllers` (serving on, whose delegated authentication reads a
// ConfigMap; and serving off) and `gcp apiserver` started then wait for
// what they need, say what that is, and exit 0 within seconds of SIGTERM
// at any moment of their startup. `gcp controllers` with serving on
// ignored SIGTERM for about 60 s, blocked in reading the ConfigMap.
func TestStartDuringEtcdOutageStopsOnSIGTERM(t *testing.T) {
	t.Parallel()
	c, _, kubeconfig := startSplitAPIServer(t)
	etcd := &c.members[0]
	_ = etcd.proc.cmd.Process.Kill()
	<-etcd.proc.done

	controllers := func(serving bool) []string {
		args := []string{"controllers", "--kubeconfig", kubeconfig,
			"--cluster-signing-cert-file", c.p("ca.crt"), "--cluster-signing-key-file", c.p("ca.key")}
		if serving {
			return append(args, "--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(freePort(t)), "--cert-dir", t.TempDir())
		}
		return append(args, "--secure-port", "0")
	}
	apiserverPort := freePort(t)
	apiserver := []string{"apiserver", "--etcd-servers", c.etcdURLs,
		"--etcd-cafile", c.p("etcd/ca.crt"), "--etcd-certfile", c.p("apiserver-etcd-client.crt"), "--etcd-keyfile", c.p("apiserver-etcd-client.key"),
		"--tls-cert-file", c.p("apiserver.crt"), "--tls-private-key-file", c.p("apiserver.key"), "--client-ca-file", c.p("ca.crt"),
		"--service-account-issuer", "https://gcp.test",
		"--service-account-signing-key-file", c.p("sa.key"), "--service-account-key-file", c.p("sa.pub"),
		"--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(apiserverPort)}

	// The API server that was running when etcd went.
	t.Run("apiserver running", func(t *testing.T) {
		t.Parallel()
		outageStop(t, c.apiservers[0])
	})
	for _, tc := range []struct {
		name string
		args []string
		// says is what the process says it waits for, before SIGTERM.
		says string
	}{
		{"controllers serving", controllers(true), "extension-apiserver-authentication"},
		{"controllers not serving", controllers(false), "Waiting for the API server to be healthy"},
		{"apiserver", apiserver, "Waiting for etcd to answer before serving"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := startProcess(t, tc.args...)
			poll.Until(t, 200*time.Millisecond, 60*time.Second, func() error {
				if strings.Contains(p.log.String(), tc.says) {
					return nil
				}
				select {
				case <-p.done:
					t.Fatalf("exited %d before SIGTERM:\n%s", p.cmd.ProcessState.ExitCode(), p.log)
				default:
				}
				return fmt.Errorf("it does not say it waits for %q yet:\n%s", tc.says, p.log)
			})
			outageStop(t, p)
		})
	}
}

// outageStop sends p SIGTERM and checks that it exits 0 within
// outageStopWithin.
func outageStop(t *testing.T, p *process) {
	t.Helper()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	sent := time.Now()
	select {
	case <-p.done:
	case <-time.After(outageStopWithin):
		t.Fatalf("still running %v after SIGTERM during the etcd outage:\n%s", outageStopWithin, p.log)
	}
	t.Logf("exited %v after SIGTERM", time.Since(sent).Round(time.Millisecond))
	if code := p.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("exit code %d after SIGTERM, want 0 as for any stop by signal:\n%s", code, p.log)
	}
}
