// Package oidcprovider runs a real OpenID Connect provider, ory/hydra (an
// OpenID Certified OAuth 2.0 server), as its own process for tests that need
// genuine ID tokens: gcp's JWT authenticators are tested against it instead
// of a hand-written JWKS endpoint or a mock.
//
// Hydra is built from the throwaway module hack/tools/hydra (so none of its
// dependencies enter gcp's go.mod) once per machine and cached under
// os.UserCacheDir()/gcp-test; see Binary. Start runs `hydra serve all` with
// its in-memory database, HTTPS on two free loopback ports (public and admin)
// with a certificate from a throwaway CA, and IDToken walks the authorization
// code flow headlessly: hydra's login and consent requests are accepted
// through its admin API, so no login or consent page exists or is fetched.
//
// With Options.Hostname the issuer is https://<hostname>:<port>, a name no
// resolver knows: only a proxy that maps it to PublicAddr reaches it, which
// is how a test makes sure gcp reached the issuer through its proxy. The
// package's own calls reach hydra on 127.0.0.1 all the same.
//
// This package does not import hydra; it speaks to hydra's HTTP APIs.
package oidcprovider

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	certutil "k8s.io/client-go/util/cert"

	"github.com/gcp-project/gcp/test/freeport"
)

// Options configure a provider.
type Options struct {
	// IDTokenTTL is how long the ID tokens it issues are valid; hydra's
	// default of an hour when zero. A test of expired tokens sets a few
	// seconds.
	IDTokenTTL time.Duration
	// Hostname, if set, is the issuer's host name in place of 127.0.0.1:
	// the issuer URL is https://<Hostname>:<port> in hydra's discovery
	// document and in the iss claim, and the serving certificate names it.
	// Nothing resolves it: a client reaches the issuer only by dialing
	// PublicAddr for it (as a proxy does). A name under .test (RFC 2606),
	// such as "idp.test", is never a real host.
	Hostname string
}

// Provider is a running hydra process.
type Provider struct {
	// IssuerURL is the issuer exactly as hydra writes it in its discovery
	// document and in the iss claim of its tokens: https://127.0.0.1:<port>,
	// or https://<Options.Hostname>:<port>, with no trailing slash.
	IssuerURL string
	// PublicAddr is where hydra's public endpoints (the issuer's) listen,
	// 127.0.0.1:<port>: where a proxy sends the connections it is asked
	// to make to IssuerURL's host.
	PublicAddr string
	// CAFile is the path of the PEM that the provider's serving
	// certificate is trusted by: that certificate and the throwaway CA that
	// signed it (for a JWT authenticator's certificateAuthority, or a
	// client's root CAs).
	CAFile string
	// CAData is the content of CAFile.
	CAData []byte

	adminURL string
	http     *http.Client // trusts the CA and follows no redirects

	cmd  *exec.Cmd
	done chan struct{} // closed when the process has been waited for
	out  *lockedBuffer

	mu         sync.Mutex
	clients    map[string]string // client ID -> secret
	discovered string            // the issuer its discovery document names (Start)
	deflt      string            // the client IDToken uses when Login names none
}

// startTimeout bounds how long hydra may take to answer /health/ready: it
// migrates its in-memory database and generates its signing keys first.
const startTimeout = 2 * time.Minute

// Start builds hydra if needed (see Binary), starts `hydra serve all` in its
// own process group with a configuration in t.TempDir(), and waits until its
// public and admin endpoints are ready. The process is killed with SIGKILL
// when the test ends; its output is logged only if the test failed.
func Start(t testing.TB, o Options) *Provider {
	t.Helper()
	bin := Binary(t)
	dir := t.TempDir()
	caPEM, caPool := writeCerts(t, dir, o.Hostname)
	caFile := filepath.Join(dir, "ca.crt")

	// A port found free may be taken by another process before hydra binds
	// it; a start that fails for that reason is tried again on new ports.
	for attempt := 1; ; attempt++ {
		p, err := start(t, bin, dir, o, caPool)
		if err == nil {
			p.CAFile, p.CAData = caFile, caPEM
			return p
		}
		if !errors.Is(err, errPortTaken) || attempt == 3 {
			t.Fatalf("oidcprovider: starting hydra: %v", err)
		}
	}
}

var errPortTaken = errors.New("port taken")

func start(t testing.TB, bin, dir string, o Options, caPool *x509.CertPool) (*Provider, error) {
	publicPort, adminPort := freePort(t), freePort(t)
	publicAddr := "127.0.0.1:" + strconv.Itoa(publicPort)
	issuer := "https://" + publicAddr
	if o.Hostname != "" {
		issuer = "https://" + net.JoinHostPort(o.Hostname, strconv.Itoa(publicPort))
	}
	cfg := map[string]any{
		"dsn": "memory",
		"serve": map[string]any{
			"public": map[string]any{"host": "127.0.0.1", "port": publicPort},
			"admin":  map[string]any{"host": "127.0.0.1", "port": adminPort},
			"tls": map[string]any{
				"enabled": true,
				"cert":    map[string]any{"path": filepath.Join(dir, "tls.crt")},
				"key":     map[string]any{"path": filepath.Join(dir, "tls.key")},
			},
		},
		"urls": map[string]any{
			"self": map[string]any{"issuer": issuer, "public": issuer},
			// Never fetched: IDToken reads the challenge from the
			// redirect and accepts it through the admin API.
			"login":   "https://login.invalid/login",
			"consent": "https://consent.invalid/consent",
			"error":   "https://error.invalid/error",
		},
		"secrets": map[string]any{"system": []string{rand.Text()}},
		"oauth2":  map[string]any{"expose_internal_errors": true},
		"sqa":     map[string]any{"opt_out": true},
		"log":     map[string]any{"level": "warn", "leak_sensitive_values": true},
	}
	if o.IDTokenTTL > 0 {
		cfg["ttl"] = map[string]any{"id_token": strconv.FormatInt(o.IDTokenTTL.Milliseconds(), 10) + "ms"}
	}
	cfgFile := filepath.Join(dir, "hydra.json")
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfgFile, b, 0o600); err != nil {
		t.Fatal(err)
	}

	out := &lockedBuffer{}
	cmd := exec.Command(bin, "serve", "all", "--config", cfgFile, "--sqa-opt-out")
	cmd.Dir = dir
	// Hydra reads configuration from environment variables too (DSN,
	// SECRETS_SYSTEM, ...): give it none of the test's.
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "TMPDIR=" + dir}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &Provider{
		PublicAddr: publicAddr,
		adminURL:   "https://127.0.0.1:" + strconv.Itoa(adminPort),
		http: &http.Client{
			Transport: &http.Transport{
				TLSClientConfig: &tls.Config{RootCAs: caPool},
				DialContext:     dialIssuerAt(strings.TrimPrefix(issuer, "https://"), publicAddr),
				// The test's environment may name a proxy: hydra is
				// reached directly.
				Proxy: nil,
			},
			CheckRedirect: func(*http.Request, []*http.Request) error {
				return http.ErrUseLastResponse
			},
			Timeout: 30 * time.Second,
		},
		cmd:     cmd,
		done:    make(chan struct{}),
		out:     out,
		clients: map[string]string{},
	}
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		p.Kill()
		if t.Failed() {
			t.Logf("hydra (issuer %s) output:\n%s", issuer, out.String())
		}
	})

	if err := p.waitReady(issuer); err != nil {
		p.Kill()
		if strings.Contains(out.String(), "address already in use") {
			return nil, errPortTaken
		}
		if waitErr != nil {
			err = fmt.Errorf("%w (hydra: %v)", err, waitErr)
		}
		return nil, err // its output is logged as the test fails
	}

	if strings.TrimSuffix(p.discovered, "/") != issuer {
		return nil, fmt.Errorf("hydra's discovery names issuer %q, configured %q", p.discovered, issuer)
	}
	p.IssuerURL = p.discovered
	return p, nil
}

// waitReady polls hydra's readiness endpoints until both answer 200, and
// gives up when the process exits or startTimeout passes.
func (p *Provider) waitReady(issuer string) error {
	deadline := time.NewTimer(startTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		if p.ready(issuer+"/health/ready") && p.ready(p.adminURL+"/health/ready") && p.discover(issuer) {
			return nil
		}
		select {
		case <-p.done:
			return errors.New("hydra exited before it was ready")
		case <-deadline.C:
			return fmt.Errorf("hydra not ready after %s", startTimeout)
		case <-tick.C:
		}
	}
}

// discover reads the issuer's discovery document into p.discovered. It is
// part of readiness, tried again like the health checks: a CI run saw the
// first discovery request after both health checks passed fail once with
// "local error: tls: bad record MAC" (hydra generates its signing keys on
// that request, under a loaded machine), which is no answer about hydra's
// configuration, while a document that names another issuer is one, and
// Start reports it.
func (p *Provider) discover(issuer string) bool {
	var discovery struct {
		Issuer string `json:"issuer"`
	}
	if err := p.getJSON(issuer+"/.well-known/openid-configuration", &discovery); err != nil {
		return false
	}
	p.discovered = discovery.Issuer
	return true
}

func (p *Provider) ready(url string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false
	}
	resp, err := p.http.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// JWKSURL is where the provider publishes the keys its ID tokens are signed
// with.
func (p *Provider) JWKSURL() string {
	return strings.TrimSuffix(p.IssuerURL, "/") + "/.well-known/jwks.json"
}

// Stop ends hydra with SIGTERM and waits for it to exit (SIGKILL after 30
// seconds), so a test can take the issuer away after gcp fetched its keys.
func (p *Provider) Stop() {
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		p.Kill()
	}
}

// Kill ends hydra's process group with SIGKILL and waits for it to exit.
// Calling it again, or after Stop, does nothing.
func (p *Provider) Kill() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
}

// dialIssuerAt dials addr for a connection to issuer (host:port), and
// everything else as asked: the requests keep the issuer's host in their
// Host header and TLS server name, so hydra and its certificate see the
// issuer's name.
func dialIssuerAt(issuer, addr string) func(context.Context, string, string) (net.Conn, error) {
	var d net.Dialer
	return func(ctx context.Context, network, to string) (net.Conn, error) {
		if strings.EqualFold(to, issuer) {
			to = addr
		}
		return d.DialContext(ctx, network, to)
	}
}

// writeCerts writes a serving certificate for 127.0.0.1, localhost and
// hostname if set, signed by a throwaway CA of its own, with that CA
// (tls.crt), its key (tls.key), and the PEM clients trust it by, the
// certificate and its CA (ca.crt), into dir.
func writeCerts(t testing.TB, dir, hostname string) (caPEM []byte, pool *x509.CertPool) {
	t.Helper()
	dns := []string{"localhost"}
	if hostname != "" {
		dns = append(dns, hostname)
	}
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("127.0.0.1", nil, dns)
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"ca.crt": certPEM, "tls.crt": certPEM, "tls.key": keyPEM} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if pool, err = certutil.NewPoolFromBytes(certPEM); err != nil {
		t.Fatal(err)
	}
	return certPEM, pool
}

// freePort returns a loopback port nothing listens on and that no earlier
// call in this test binary returned (package freeport).
func freePort(t testing.TB) int {
	t.Helper()
	return freeport.Get(t)
}

// lockedBuffer collects a process's output, written from two pipes' copying
// goroutines and read by the test.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
