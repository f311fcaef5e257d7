package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// stack is one control plane under test: gcp start, or etcd with
// kube-apiserver and kube-controller-manager.
type stack interface {
	// name is what the table calls it.
	name() string
	// start starts it on dir (fresh or kept from a previous start) and
	// returns when /readyz answers 200, with the time that took.
	start(dir string) (time.Duration, error)
	// stop stops every process it started.
	stop()
	// pids are the processes whose RSS counts, by part.
	pids() map[string]int
	// config is an admin client config.
	config() *rest.Config
	// kubeconfig is the path of its admin kubeconfig.
	kubeconfig() string
	// etcdURL is an etcd client URL for raw puts, or "".
	etcdURL() string
}

// proc is one process of a stack.
type proc struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
}

func startProc(name, logPath string, bin string, args ...string) (*proc, error) {
	log, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); log.Close(); close(p.done) }()
	return p, nil
}

func (p *proc) stop() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// freePort returns a loopback port nothing listens on now.
func freePort() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// waitReady polls url/readyz with cfg's credentials until it answers
// 200, or a process exits, or a minute passes.
func waitReady(cfg *rest.Config, procs ...*proc) error {
	tlsConfig, err := rest.TLSConfigFor(cfg)
	if err != nil {
		return err
	}
	client := &http.Client{Timeout: time.Second, Transport: &http.Transport{TLSClientConfig: tlsConfig, DisableKeepAlives: true}}
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		for _, p := range procs {
			if p.exited() {
				return fmt.Errorf("%s exited before ready", p.name)
			}
		}
		resp, err := client.Get(cfg.Host + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("not ready after 2m")
}

// loadConfig reads a kubeconfig without client-side throttling.
func loadConfig(path string) (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = -1, 0
	cfg.Timeout = time.Minute
	return cfg, nil
}

// gcpStack is `gcp start`: etcd, the API server and the controllers in
// one process.
type gcpStack struct {
	bin   string
	flags []string // more flags for gcp start, e.g. --profiling
	p     *proc
	cfg   *rest.Config
	port  int
	dir   string // the data dir of the last start
}

func (g *gcpStack) name() string { return "gcp start" }

func (g *gcpStack) start(dir string) (time.Duration, error) {
	if g.port == 0 {
		g.port = freePort()
	}
	g.dir = dir
	t0 := time.Now()
	args := append([]string{"start", "--data-dir", dir, "--secure-port", strconv.Itoa(g.port)}, g.flags...)
	p, err := startProc("gcp start", dir+".log", g.bin, args...)
	if err != nil {
		return 0, err
	}
	g.p = p
	// The kubeconfig appears once the PKI exists; poll for it.
	for {
		if cfg, err := loadConfig(filepath.Join(dir, "admin.kubeconfig")); err == nil {
			g.cfg = cfg
			break
		}
		if p.exited() {
			return 0, fmt.Errorf("gcp start exited; see %s.log", dir)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := waitReady(g.cfg, p); err != nil {
		return 0, fmt.Errorf("%w; see %s.log", err, dir)
	}
	return time.Since(t0), nil
}

func (g *gcpStack) stop() {
	if g.p != nil {
		g.p.stop()
	}
}

func (g *gcpStack) pids() map[string]int { return map[string]int{"gcp": g.p.cmd.Process.Pid} }
func (g *gcpStack) config() *rest.Config { return g.cfg }
func (g *gcpStack) kubeconfig() string   { return filepath.Join(g.dir, "admin.kubeconfig") }
func (g *gcpStack) etcdURL() string      { return "" }

// upstreamStack is etcd, kube-apiserver and, with controllers, the
// kube-controller-manager running the controllers gcp runs. The
// certificates come from `gcp pki init`.
type upstreamStack struct {
	gcp, bin    string // the gcp binary (for pki init) and the upstream binaries' directory
	controllers bool
	procs       []*proc
	cfg         *rest.Config
	port, etcd  int
	dir         string // the data dir of the last start
}

// genericControllers are the controllers `gcp start` runs, by their
// kube-controller-manager names.
const genericControllers = "namespace-controller,garbage-collector-controller,serviceaccount-controller,root-ca-certificate-publisher-controller,clusterrole-aggregation-controller,resourcequota-controller,certificatesigningrequest-signing-controller,certificatesigningrequest-cleaner-controller,validatingadmissionpolicy-status-controller"

func (u *upstreamStack) name() string {
	if u.controllers {
		return "kube-apiserver + KCM + etcd"
	}
	return "kube-apiserver + etcd"
}

func (u *upstreamStack) start(dir string) (time.Duration, error) {
	if u.port == 0 {
		u.port, u.etcd = freePort(), freePort()
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return 0, err
	}
	u.dir = dir
	pki := filepath.Join(dir, "pki")
	if _, err := os.Stat(pki); err != nil {
		if out, err := exec.Command(u.gcp, "pki", "init", "--dir", pki, "--server", fmt.Sprintf("https://127.0.0.1:%d", u.port)).CombinedOutput(); err != nil {
			return 0, fmt.Errorf("gcp pki init: %v\n%s", err, out)
		}
	}
	cfg, err := loadConfig(filepath.Join(dir, "admin.kubeconfig"))
	if err != nil {
		return 0, err
	}
	u.cfg = cfg
	etcdURL, peerURL := fmt.Sprintf("http://127.0.0.1:%d", u.etcd), fmt.Sprintf("http://127.0.0.1:%d", freePort())
	t0 := time.Now()
	e, err := startProc("etcd", filepath.Join(dir, "etcd.log"), filepath.Join(u.bin, "etcd"),
		"--data-dir", filepath.Join(dir, "etcd"), "--listen-client-urls", etcdURL, "--advertise-client-urls", etcdURL,
		"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL, "--initial-cluster", "default="+peerURL)
	if err != nil {
		return 0, err
	}
	u.procs = []*proc{e}
	p := func(name string) string { return filepath.Join(pki, name) }
	a, err := startProc("kube-apiserver", filepath.Join(dir, "kube-apiserver.log"), filepath.Join(u.bin, "kube-apiserver"),
		"--etcd-servers", etcdURL, "--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1", "--secure-port", strconv.Itoa(u.port),
		"--tls-cert-file", p("apiserver.crt"), "--tls-private-key-file", p("apiserver.key"), "--client-ca-file", p("ca.crt"),
		"--service-account-issuer", "https://kubernetes.default.svc", "--service-account-key-file", p("sa.pub"),
		"--service-account-signing-key-file", p("sa.key"), "--authorization-mode", "RBAC", "--profiling=false",
		"--service-cluster-ip-range", "10.96.0.0/16", "--endpoint-reconciler-type", "none", "--cert-dir", filepath.Join(dir, "certs"))
	if err != nil {
		u.stop()
		return 0, err
	}
	u.procs = append(u.procs, a)
	if err := waitReady(u.cfg, u.procs...); err != nil {
		u.stop()
		return 0, fmt.Errorf("%w; see %s", err, dir)
	}
	ready := time.Since(t0)
	if u.controllers {
		c, err := startProc("kube-controller-manager", filepath.Join(dir, "kcm.log"), filepath.Join(u.bin, "kube-controller-manager"),
			"--kubeconfig", filepath.Join(dir, "admin.kubeconfig"), "--controllers", genericControllers, "--leader-elect=false",
			"--secure-port", "0", "--service-account-private-key-file", p("sa.key"), "--root-ca-file", p("ca.crt"),
			"--cluster-signing-cert-file", p("ca.crt"), "--cluster-signing-key-file", p("ca.key"), "--profiling=false")
		if err != nil {
			u.stop()
			return 0, err
		}
		u.procs = append(u.procs, c)
	}
	return ready, nil
}

func (u *upstreamStack) stop() {
	for i := len(u.procs) - 1; i >= 0; i-- {
		u.procs[i].stop()
	}
	u.procs = nil
}

func (u *upstreamStack) pids() map[string]int {
	m := map[string]int{}
	for _, p := range u.procs {
		m[p.name] = p.cmd.Process.Pid
	}
	return m
}

func (u *upstreamStack) config() *rest.Config { return u.cfg }
func (u *upstreamStack) kubeconfig() string   { return filepath.Join(u.dir, "admin.kubeconfig") }
func (u *upstreamStack) etcdURL() string {
	return fmt.Sprintf("http://127.0.0.1:%d", u.etcd)
}

// rss returns the summed resident set size of pids, in MiB.
func rss(pids map[string]int) float64 { return statusMiB(pids, "VmRSS:") }

// rssAnon returns the summed anonymous resident memory of pids (heap,
// stacks; not the binary's pages, which the kernel can drop and read
// back), in MiB.
func rssAnon(pids map[string]int) float64 { return statusMiB(pids, "RssAnon:") }

// statusMiB sums a kB field of /proc/<pid>/status over pids, in MiB.
func statusMiB(pids map[string]int, field string) float64 {
	var kb float64
	for _, pid := range pids {
		status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(status), "\n") {
			if rest, ok := strings.CutPrefix(line, field); ok {
				v, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
				kb += v
			}
		}
	}
	return kb / 1024
}

// cpuTime sums the CPU time (user and system) pids have used so far,
// from /proc/<pid>/stat, in the kernel's clock ticks of 10 ms (USER_HZ
// is 100 on Linux).
func cpuTime(pids map[string]int) time.Duration {
	var ticks int64
	for _, pid := range pids {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		// The fields after the command name, which may hold spaces:
		// state is the first, utime and stime the 12th and 13th.
		_, rest, _ := strings.Cut(string(stat), ") ")
		f := strings.Fields(rest)
		if len(f) < 13 {
			continue
		}
		u, _ := strconv.ParseInt(f[11], 10, 64)
		s, _ := strconv.ParseInt(f[12], 10, 64)
		ticks += u + s
	}
	return time.Duration(ticks) * 10 * time.Millisecond
}
