package e2e

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/gcp-project/gcp/test/oidcprovider"
	"github.com/gcp-project/gcp/test/poll"
)

// connectProxyEnv, when set, makes the e2e test binary an HTTP CONNECT
// proxy instead of running tests, a process of its own that a test can
// SIGKILL. Its value is a directory: the proxy writes its address to addr
// once it listens, and appends a line to connects.log for each CONNECT it
// served ("served <host:port>") or refused ("refused <host:port>").
const connectProxyEnv = "GCP_E2E_CONNECT_PROXY_DIR"

// connectProxyRoutesEnv is the proxy's fixed map, "host:port=addr,...": a
// CONNECT to host:port is tunnelled to addr, and a CONNECT anywhere else is
// refused, so names that no resolver knows (idp.test) reach loopback.
const connectProxyRoutesEnv = "GCP_E2E_CONNECT_PROXY_ROUTES"

// connectProxyListenEnv is the address the proxy listens on; 127.0.0.1:0
// if unset. A test restarts a killed proxy on the address it had.
const connectProxyListenEnv = "GCP_E2E_CONNECT_PROXY_LISTEN"

func init() {
	// Before TestMain: a proxy process builds nothing and runs no test.
	if dir := os.Getenv(connectProxyEnv); dir != "" {
		if err := serveConnectProxy(dir, os.Getenv(connectProxyListenEnv), os.Getenv(connectProxyRoutesEnv)); err != nil {
			fmt.Fprintln(os.Stderr, "CONNECT proxy:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
}

// serveConnectProxy serves CONNECT to the routes' host:ports until the
// process is killed; any other CONNECT is 403 and any other method 405.
func serveConnectProxy(dir, listen, routeList string) error {
	routes := map[string]string{}
	for _, r := range strings.Split(routeList, ",") {
		from, to, ok := strings.Cut(r, "=")
		if !ok || from == "" || to == "" {
			return fmt.Errorf("%s: %q is not host:port=addr", connectProxyRoutesEnv, r)
		}
		routes[strings.ToLower(from)] = to
	}
	if listen == "" {
		listen = "127.0.0.1:0"
	}
	l, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	logFile, err := os.OpenFile(filepath.Join(dir, "connects.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	var logMu sync.Mutex
	record := func(what, target string) {
		logMu.Lock()
		defer logMu.Unlock()
		fmt.Fprintf(logFile, "%s %s\n", what, target)
		fmt.Fprintf(os.Stderr, "%s CONNECT %s\n", what, target)
	}
	if err := os.WriteFile(filepath.Join(dir, "addr.tmp"), []byte(l.Addr().String()), 0o600); err != nil {
		return err
	}
	if err := os.Rename(filepath.Join(dir, "addr.tmp"), filepath.Join(dir, "addr")); err != nil {
		return err
	}
	return http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodConnect {
			http.Error(w, "this proxy only tunnels (CONNECT)", http.StatusMethodNotAllowed)
			return
		}
		target := strings.ToLower(r.Host)
		to, ok := routes[target]
		if !ok {
			record("refused", target)
			http.Error(w, "no route to "+target, http.StatusForbidden)
			return
		}
		upstream, err := net.DialTimeout("tcp", to, 10*time.Second)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		client, buffered, err := w.(http.Hijacker).Hijack()
		if err != nil {
			upstream.Close()
			return
		}
		record("served", target)
		tunnel(client, buffered.Reader, upstream)
	}))
}

// tunnel answers a CONNECT with 200 and copies bytes both ways until either
// side closes; from holds what the client sent after its request.
func tunnel(client net.Conn, from *bufio.Reader, upstream net.Conn) {
	defer client.Close()
	defer upstream.Close()
	if _, err := io.WriteString(client, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(upstream, from); done <- struct{}{} }()
	go func() { _, _ = io.Copy(client, upstream); done <- struct{}{} }()
	<-done
}

// connectProxy is a running proxy process.
type connectProxy struct {
	proc *process
	dir  string
	addr string // host:port it listens on
}

// startConnectProxy runs the test binary as a CONNECT proxy on listen
// (127.0.0.1:0 for a free port) that tunnels each of routes' host:ports to
// its address, and waits until it listens.
func startConnectProxy(t *testing.T, listen string, routes map[string]string) *connectProxy {
	t.Helper()
	var list []string
	for from, to := range routes {
		list = append(list, from+"="+to)
	}
	sort.Strings(list)
	dir := t.TempDir()
	p := &process{cmd: exec.Command(os.Args[0]), log: &syncBuffer{}, done: make(chan struct{})}
	p.cmd.Env = append(os.Environ(), connectProxyEnv+"="+dir, connectProxyListenEnv+"="+listen,
		connectProxyRoutesEnv+"="+strings.Join(list, ","))
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
		if t.Failed() {
			t.Logf("CONNECT proxy on %s:\n%s", listen, p.log)
		}
	})
	var addr []byte
	poll.Until(t, 50*time.Millisecond, 30*time.Second, func() error {
		var err error
		if addr, err = os.ReadFile(filepath.Join(dir, "addr")); err == nil {
			return nil
		}
		select {
		case <-p.done:
			t.Fatalf("the CONNECT proxy exited:\n%s", p.log)
		default:
		}
		return fmt.Errorf("the CONNECT proxy is not listening:\n%s", p.log)
	})
	return &connectProxy{proc: p, dir: dir, addr: string(addr)}
}

// served is how many CONNECTs to target the proxy tunnelled.
func (p *connectProxy) served(t *testing.T, target string) int {
	t.Helper()
	return p.logged(t, "served "+target)
}

func (p *connectProxy) logged(t *testing.T, line string) int {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(p.dir, "connects.log"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	n := 0
	for _, l := range strings.Split(string(data), "\n") {
		if l == line {
			n++
		}
	}
	return n
}

// kill SIGKILLs the proxy: its tunnels break and its port refuses.
func (p *connectProxy) kill() {
	_ = p.proc.cmd.Process.Signal(syscall.SIGKILL)
	<-p.proc.done
}

// ask sends one request for target through the proxy, a CONNECT or
// (method GET) a plain proxy request, and returns the answer's status.
func (p *connectProxy) ask(t *testing.T, method, target string) int {
	t.Helper()
	conn, err := net.DialTimeout("tcp", p.addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	uri := target
	if method != http.MethodConnect {
		uri = "https://" + target + "/"
	}
	if _, err := fmt.Fprintf(conn, "%s %s HTTP/1.1\r\nHost: %s\r\n\r\n", method, uri, target); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestOIDCLoginThroughProxy: an issuer that only an HTTPS proxy reaches
// (https://idp.test:<port>, a name no resolver knows) logs users in to
// `gcp start` run with HTTPS_PROXY naming a real CONNECT proxy (the test
// binary as a process of its own), which saw gcp's CONNECTs to idp.test.
// With the proxy SIGKILLed, a gcp that holds the keys goes on verifying,
// and a gcp started before it ever fetched them answers 401 (not 500),
// keeps serving, and logs the user in once the proxy is back, without a
// restart.
func TestOIDCLoginThroughProxy(t *testing.T) {
	t.Parallel()
	// Go never proxies localhost or a loopback IP: the issuer has a name
	// under .test, which no resolver knows and only the proxy maps.
	idp := oidcprovider.Start(t, oidcprovider.Options{Hostname: "idp.test"})
	issuerHost := strings.TrimPrefix(idp.IssuerURL, "https://")
	if !strings.HasPrefix(issuerHost, "idp.test:") {
		t.Fatalf("issuer %s, want https://idp.test:<port>", idp.IssuerURL)
	}
	client := idp.Client(t)
	routes := map[string]string{issuerHost: idp.PublicAddr}
	proxy := startConnectProxy(t, "127.0.0.1:0", routes)

	// The proxy tunnels its routes only.
	if code := proxy.ask(t, http.MethodConnect, "example.com:443"); code != http.StatusForbidden {
		t.Errorf("CONNECT example.com:443: %d, want 403", code)
	}
	if code := proxy.ask(t, http.MethodGet, issuerHost); code != http.StatusMethodNotAllowed {
		t.Errorf("GET https://%s/ through the proxy: %d, want 405", issuerHost, code)
	}
	if n := proxy.logged(t, "refused example.com:443"); n != 1 {
		t.Errorf("the proxy logged %d refusals of example.com:443, want 1", n)
	}

	// NO_PROXY empty: whatever the machine's environment says, gcp must
	// use the proxy for idp.test.
	env := []string{"HTTPS_PROXY=http://" + proxy.addr, "NO_PROXY="}
	config := filepath.Join(t.TempDir(), "authn.yaml")
	writeFileAtomically(t, config, oidcConfig("oidc:", issuerOf(idp, client)))
	a := startAllInOneEnv(t, t.TempDir(), env, "--authentication-config", config)

	token := idp.IDToken(t, devLogin(client))
	dev := tokenKubeconfig(t, a, token)
	a.eventually(t, "an ID token verified with keys fetched through the proxy", 60*time.Second, func(out string, err error) bool {
		return err == nil && strings.Contains(out, `"username": "dev@example.com"`) && strings.Contains(out, `"oidc:devs"`)
	}, "--kubeconfig", dev, "auth", "whoami", "-o", "json")
	if n := proxy.served(t, issuerHost); n == 0 {
		t.Fatalf("gcp verified the token, but the proxy tunnelled no CONNECT to %s; its log:\n%s", issuerHost, proxy.proc.log)
	}

	// The proxy dies (SIGKILL). This gcp holds the issuer's keys and goes
	// on verifying its tokens.
	proxy.kill()
	if out, code := kubectlAs(t, dev, "auth", "whoami"); code != 0 || !strings.Contains(out, "dev@example.com") {
		t.Errorf("with the proxy gone, a gcp that holds the keys: exit %d\n%s", code, out)
	}

	// A second gcp start with the same proxy, which is gone before it
	// ever fetched the issuer's keys: its tokens are 401, not 500, and it
	// keeps serving.
	b := startAllInOneEnv(t, t.TempDir(), env, "--authentication-config", config)
	devB := tokenKubeconfig(t, b, token)
	// Across a retry of the key fetch (every 10 s upstream).
	for end := time.Now().Add(12 * time.Second); time.Now().Before(end); time.Sleep(2 * time.Second) {
		if code, body := statusAs(t, devB, "/api/v1/namespaces/default/configmaps"); code != http.StatusUnauthorized {
			t.Fatalf("a token while the proxy to its issuer is down: %d, want 401: %s", code, body)
		}
	}
	if out, err := b.kubectlErr("get", "--raw", "/readyz"); err != nil {
		t.Fatalf("with its issuer unreachable gcp is not ready: %v\n%s", err, out)
	}
	b.kubectl("create", "configmap", "still-serving")
	select {
	case err := <-b.exited:
		b.exited <- err
		t.Fatalf("gcp exited with its issuer's proxy gone: %v\n%s", err, b.log)
	default:
	}

	// The proxy comes back on its address: gcp fetches the keys through it
	// and logs the user in, without a restart.
	back := startConnectProxy(t, proxy.addr, routes)
	b.eventually(t, "the token once the proxy is back", 60*time.Second, func(out string, err error) bool {
		return err == nil && strings.Contains(out, "dev@example.com")
	}, "--kubeconfig", devB, "auth", "whoami")
	if n := back.served(t, issuerHost); n == 0 {
		t.Errorf("gcp logged the user in, but the restarted proxy tunnelled no CONNECT to %s", issuerHost)
	}
}

// statusAs GETs path with kubeconfig's credentials and returns the status
// code and body of the answer.
func statusAs(t *testing.T, kubeconfig, path string) (int, string) {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var code int
	body, err := c.CoreV1().RESTClient().Get().AbsPath(path).Do(ctx).StatusCode(&code).Raw()
	if code == 0 {
		t.Fatalf("GET %s: no answer: %v", path, err)
	}
	return code, string(body)
}
