package e2e

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gcp-project/gcp/test/poll"
)

// haCluster is the split shape of docs/deployment.md on loopback: the PKI
// from `gcp pki init`, three `gcp etcd` members with client and peer mTLS,
// and `gcp apiserver` processes against all three.
type haCluster struct {
	t         testing.TB
	base, pki string
	// dataRoot, when set, holds the members' data dirs instead of base;
	// memberFlags are added to every member's flags.
	dataRoot    string
	memberFlags []string
	members     []etcdMember
	initial     string
	etcdURLs    string
	apiservers  []*process
}

// etcdMember is one `gcp etcd` process of an haCluster and its ports.
type etcdMember struct {
	name                  string
	client, peer, metrics int
	proc                  *process
}

func (m *etcdMember) metricsURL() string { return fmt.Sprintf("http://127.0.0.1:%d", m.metrics) }

// newHACluster makes the PKI for three members and starts them.
func newHACluster(t testing.TB) *haCluster {
	t.Helper()
	return newEtcdCluster(t, 3)
}

// newEtcdCluster makes the PKI for n members and starts them.
func newEtcdCluster(t testing.TB, n int) *haCluster {
	t.Helper()
	return startEtcdCluster(&haCluster{t: t, base: t.TempDir()}, n)
}

// startEtcdCluster makes the PKI for n members in c.base and starts them.
func startEtcdCluster(c *haCluster, n int) *haCluster {
	t := c.t
	t.Helper()
	c.pki = filepath.Join(c.base, "pki")
	var initial, clients []string
	for i := range n {
		m := etcdMember{name: fmt.Sprintf("etcd-%d", i), client: freePort(t), peer: freePort(t), metrics: freePort(t)}
		c.members = append(c.members, m)
		initial = append(initial, fmt.Sprintf("%s=https://127.0.0.1:%d", m.name, m.peer))
		clients = append(clients, fmt.Sprintf("https://127.0.0.1:%d", m.client))
	}
	c.initial, c.etcdURLs = strings.Join(initial, ","), strings.Join(clients, ",")
	args := []string{"pki", "init", "--dir", c.pki}
	for _, m := range c.members {
		args = append(args, "--etcd-member", m.name+"=127.0.0.1")
	}
	mustGCP(t, args...)
	for i := range c.members {
		c.startMember(i)
	}
	for i := range c.members {
		c.waitMember(i)
	}
	return c
}

func (c *haCluster) p(name string) string { return filepath.Join(c.pki, name) }

// startMember starts member i of the initial cluster on its data dir (new
// or not).
func (c *haCluster) startMember(i int) {
	c.runMember(&c.members[i], c.initial, "new")
}

// runMember starts m with the given --initial-cluster and
// --initial-cluster-state.
func (c *haCluster) runMember(m *etcdMember, initial, state string) {
	dir := "etcd/" + m.name + "/"
	root := c.base
	if c.dataRoot != "" {
		root = c.dataRoot
	}
	m.proc = startProcess(c.t, append([]string{"etcd", "--name", m.name, "--data-dir", filepath.Join(root, m.name),
		"--listen-client-urls", fmt.Sprintf("https://127.0.0.1:%d", m.client),
		"--listen-peer-urls", fmt.Sprintf("https://127.0.0.1:%d", m.peer),
		"--initial-cluster", initial, "--initial-cluster-state", state,
		"--listen-metrics-urls", m.metricsURL(),
		"--cert-file", c.p(dir + "server.crt"), "--key-file", c.p(dir + "server.key"),
		"--trusted-ca-file", c.p("etcd/ca.crt"), "--client-cert-auth",
		"--peer-cert-file", c.p(dir + "peer.crt"), "--peer-key-file", c.p(dir + "peer.key"),
		"--peer-trusted-ca-file", c.p("etcd/ca.crt"), "--peer-client-cert-auth"}, c.memberFlags...)...)
}

// waitMember waits until member i's /readyz on its metrics URL says ok.
func (c *haCluster) waitMember(i int) {
	c.t.Helper()
	m := c.members[i]
	poll.Until(c.t, 200*time.Millisecond, 60*time.Second, func() error {
		if body, code := httpGet(m.metricsURL() + "/readyz"); code != http.StatusOK || !strings.Contains(body, "ok") {
			return fmt.Errorf("%s not ready: %d %s\n%s", m.name, code, body, m.proc.log)
		}
		return nil
	})
}

// leader returns the index of the member that says it leads.
func (c *haCluster) leader() int {
	c.t.Helper()
	leader := -1
	poll.Until(c.t, 200*time.Millisecond, 30*time.Second, func() error {
		for i, m := range c.members {
			if body, _ := httpGet(m.metricsURL() + "/metrics"); strings.Contains(body, "\netcd_server_is_leader 1") {
				leader = i
				return nil
			}
		}
		return errors.New("no etcd member says it leads")
	})
	return leader
}

// startAPIServer starts a `gcp apiserver` against every member and
// returns its URL once /readyz is 200.
func (c *haCluster) startAPIServer(a *allInOne) string {
	c.t.Helper()
	return c.startAPIServerOn(a, c.etcdURLs)
}

// startAPIServerOn starts a `gcp apiserver` against the etcd client URLs
// given, with extra flags, and returns its URL once /readyz is 200.
func (c *haCluster) startAPIServerOn(a *allInOne, etcdURLs string, extra ...string) string {
	c.t.Helper()
	port := freePort(c.t)
	server := fmt.Sprintf("https://127.0.0.1:%d", port)
	proc := startProcess(c.t, c.apiserverArgs(port, etcdURLs, extra...)...)
	c.apiservers = append(c.apiservers, proc)
	poll.Until(c.t, 200*time.Millisecond, 60*time.Second, func() error {
		if _, err := a.kubectlErr("--server", server, "get", "--raw", "/readyz"); err != nil {
			return fmt.Errorf("apiserver %s not ready: %w\n%s", server, err, proc.log)
		}
		return nil
	})
	return server
}

// apiserverArgs are the arguments of a `gcp apiserver` of this cluster on
// port, against etcdURLs, with extra flags.
func (c *haCluster) apiserverArgs(port int, etcdURLs string, extra ...string) []string {
	return append([]string{"apiserver", "--etcd-servers", etcdURLs,
		"--etcd-cafile", c.p("etcd/ca.crt"), "--etcd-certfile", c.p("apiserver-etcd-client.crt"), "--etcd-keyfile", c.p("apiserver-etcd-client.key"),
		"--tls-cert-file", c.p("apiserver.crt"), "--tls-private-key-file", c.p("apiserver.key"), "--client-ca-file", c.p("ca.crt"),
		// Every API server of one control plane has the same issuer and
		// keys, so a token from one is good at all.
		"--service-account-issuer", "https://gcp.test",
		"--service-account-signing-key-file", c.p("sa.key"), "--service-account-key-file", c.p("sa.pub"),
		"--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(port),
		"--identity-lease-duration-seconds", "3", "--identity-lease-renew-interval-seconds", "1", "--shutdown-send-retry-after"}, extra...)
}

func httpGet(url string) (string, int) {
	client := http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get(url)
	if err != nil {
		return err.Error(), 0
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return string(body), resp.StatusCode
}

// TestHAControlPlane runs three etcd members with peer mTLS and two API
// servers made with `gcp pki init`, as docs/deployment.md says: both API
// servers serve the same data and accept each other's tokens, each keeps
// an identity Lease, and SIGKILL of the etcd leader costs at most an
// election: writes go on and the member rejoins when restarted. Then the
// controllers' takeover, loss of quorum, and SIGKILL of one API server.
func TestHAControlPlane(t *testing.T) {
	t.Parallel()
	c := newHACluster(t)
	// The kubeconfig gcp pki init wrote, pointed at each server by --server.
	a := &allInOne{t: t, binary: gcpBinary, dataDir: c.base}
	serverA := c.startAPIServer(a)
	serverB := c.startAPIServer(a)
	onA := func(args ...string) string { return a.kubectl(append([]string{"--server", serverA}, args...)...) }
	onB := func(args ...string) (string, error) {
		return a.kubectlErr(append([]string{"--server", serverB}, args...)...)
	}

	// A bounded writer goes on through A during every fault below; at the
	// end every create it saw acknowledged must be there.
	onA("create", "namespace", "writes")
	w := startWriter(t, a.kubeconfig(), serverA, "writes", 20*time.Millisecond, 20000)
	w.waitMore(5, 30*time.Second)

	var killed time.Time
	onA("create", "configmap", "ha", "--from-literal=k=v")
	if out, err := onB("get", "configmap", "ha", "-o", "jsonpath={.data.k}"); err != nil || out != "v" {
		t.Fatalf("configmap written through A, read through B: %q, %v", out, err)
	}
	// No controllers run here, so no default service account: make one.
	onA("create", "serviceaccount", "ha", "-n", "default")
	token := strings.TrimSpace(onA("create", "token", "ha", "-n", "default"))
	review := `{"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview","spec":{"token":"` + token + `"}}`
	if out, err := a.kubectlEnv(nil, review, "--server", serverB, "create", "-f", "-", "-o", "jsonpath={.status.user.username}"); err != nil ||
		out != "system:serviceaccount:default:ha" {
		t.Fatalf("token from A reviewed by B: %q, %v", out, err)
	}
	poll.Until(t, 200*time.Millisecond, 30*time.Second, func() error {
		out, err := onB("get", "leases", "-n", "kube-system", "-l", "apiserver.kubernetes.io/identity=kube-apiserver", "-o", "name")
		if n := len(strings.Fields(out)); err != nil || n != 2 {
			return fmt.Errorf("identity leases: %q, %v; want two", out, err)
		}
		return nil
	})

	// Two gcp controllers against API server A: SIGKILL of the leader
	// while a namespace deletion waits on a finalizer; the other takes over
	// within the lease duration and finishes the deletion.
	kubeconfig := filepath.Join(c.base, "controllers-a.kubeconfig")
	data, err := os.ReadFile(filepath.Join(c.base, "controllers.kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(kubeconfig, data, 0o600); err != nil {
		t.Fatal(err)
	}
	a.kubectl("--kubeconfig", kubeconfig, "config", "set-cluster", "gcp", "--server", serverA)
	controllers := func() *process {
		return startProcess(t, "controllers", "--kubeconfig", kubeconfig, "--secure-port", strconv.Itoa(freePort(t)), "--cert-dir", t.TempDir(),
			"--leader-elect-lease-duration", "4s", "--leader-elect-renew-deadline", "3s", "--leader-elect-retry-period", "500ms")
	}
	holder := func() string {
		out, _ := onB("-n", "kube-system", "get", "lease", "gcp-controllers", "-o", "jsonpath={.spec.holderIdentity}")
		return strings.TrimSpace(out)
	}
	first := controllers()
	var leaderID string
	poll.Until(t, 200*time.Millisecond, 60*time.Second, func() error {
		if leaderID = holder(); leaderID == "" {
			return fmt.Errorf("no controllers leader:\n%s", first.log)
		}
		return nil
	})
	controllers()
	onA("create", "namespace", "doomed")
	a.apply(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"held","namespace":"doomed","finalizers":["e2e.gcp.dev/hold"]}}`, "--server", serverA, "create", "-f", "-")
	onA("delete", "namespace", "doomed", "--wait=false")
	poll.Until(t, 200*time.Millisecond, 30*time.Second, func() error {
		out, _ := onB("get", "namespace", "doomed", "-o", `jsonpath={.status.conditions[?(@.type=="NamespaceFinalizersRemaining")].status}`)
		if out != "True" {
			return fmt.Errorf("namespace controller has not reached the finalizer: %q", out)
		}
		return nil
	})
	_ = first.cmd.Process.Kill()
	<-first.done
	killed = time.Now()
	onB("-n", "doomed", "patch", "configmap", "held", "--type=merge", "-p", `{"metadata":{"finalizers":null}}`)
	poll.Until(t, 200*time.Millisecond, 30*time.Second, func() error {
		if out, err := onB("get", "namespace", "doomed"); err == nil || !strings.Contains(out, "NotFound") {
			return fmt.Errorf("namespace doomed still there: %s", out)
		}
		return nil
	})
	if h := holder(); h == leaderID {
		t.Errorf("lease still held by the killed controllers %q", h)
	}
	t.Logf("namespace deleted %v after SIGKILL of the leading controllers (lease duration 4s)", time.Since(killed).Round(time.Millisecond))

	// SIGKILL the etcd leader: every write acknowledged before or after is
	// there, and the member comes back with all of them.
	leader := c.leader()
	if err := c.members[leader].proc.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-c.members[leader].proc.done
	killed = time.Now()
	poll.Until(t, 200*time.Millisecond, 30*time.Second, func() error {
		_, err := onB("create", "configmap", "after-kill", "--from-literal=k=v")
		return err
	})
	t.Logf("first write after SIGKILL of the etcd leader: %v", time.Since(killed).Round(time.Millisecond))
	w.waitMore(5, 30*time.Second)
	if d, ok := w.firstAckAfter(killed); ok {
		t.Logf("writer's first acknowledged create after SIGKILL of the etcd leader: %v", d.Round(time.Millisecond))
	}
	c.startMember(leader)
	c.waitMember(leader)
	for _, name := range []string{"ha", "after-kill"} {
		if out, err := onB("get", "configmap", name, "-o", "jsonpath={.data.k}"); err != nil || out != "v" {
			t.Errorf("configmap %s after the leader's return: %q, %v", name, out, err)
		}
	}

	// Two of three down: no quorum. A write fails instead of hanging past
	// its timeout, /readyz names etcd, and one member back restores it all.
	down := []int{(leader + 1) % 3, (leader + 2) % 3}
	for _, i := range down {
		_ = c.members[i].proc.cmd.Process.Kill()
		<-c.members[i].proc.done
	}
	start := time.Now()
	out, err := onB("create", "configmap", "no-quorum", "--from-literal=k=v", "--request-timeout=10s")
	if err == nil {
		t.Errorf("write without quorum succeeded: %s", out)
	}
	t.Logf("write without quorum: %v after %v", strings.TrimSpace(out), time.Since(start).Round(time.Millisecond))
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("write without quorum took %v", took)
	}
	poll.Until(t, 200*time.Millisecond, 60*time.Second, func() error {
		out, err := onB("get", "--raw", "/readyz?verbose")
		if err == nil || !strings.Contains(out, "etcd") {
			return fmt.Errorf("readyz without quorum: %v\n%s", err, out)
		}
		t.Logf("readyz without quorum: %s", out)
		return nil
	})
	c.startMember(down[0])
	c.waitMember(down[0])
	poll.Until(t, 200*time.Millisecond, 60*time.Second, func() error {
		_, err := onB("create", "configmap", "quorum-back", "--from-literal=k=v")
		return err
	})
	w.waitMore(5, 60*time.Second)
	for _, name := range []string{"ha", "after-kill", "quorum-back"} {
		if out := onA("get", "configmap", name, "-o", "jsonpath={.data.k}"); out != "v" {
			t.Errorf("configmap %s after quorum is back: %q", name, out)
		}
	}

	// SIGKILL of API server B: A goes on serving, and B's identity Lease
	// expires and is collected.
	_ = c.apiservers[1].cmd.Process.Kill()
	<-c.apiservers[1].done
	onA("create", "configmap", "after-apiserver-kill", "--from-literal=k=v")
	w.waitMore(5, 30*time.Second)
	poll.Until(t, 200*time.Millisecond, 30*time.Second, func() error {
		out := onA("get", "leases", "-n", "kube-system", "-l", "apiserver.kubernetes.io/identity=kube-apiserver", "-o", "name")
		if n := len(strings.Fields(out)); n != 1 {
			return fmt.Errorf("identity leases after SIGKILL of B: %q; want only A's", out)
		}
		return nil
	})
	w.verify(a.kubeconfig(), serverA)
}
