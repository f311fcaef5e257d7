package etcd

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// startT starts cfg and closes the member when the test ends.
func startT(t *testing.T, cfg Config) *Handle {
	t.Helper()
	h, err := Start(cfg)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = h.Close() })
	return h
}

// inProcessT is h's in-process client (what `gcp start`'s API server
// uses), closed when the test ends.
func inProcessT(t *testing.T, h *Handle) *clientv3.Client {
	t.Helper()
	c := h.InProcessClient()
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func newClient(t *testing.T, endpoints []string, tlsConfig *tls.Config) *clientv3.Client {
	t.Helper()
	c, err := clientv3.New(clientv3.Config{Endpoints: endpoints, TLS: tlsConfig, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatalf("clientv3.New: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func put(t *testing.T, c *clientv3.Client, key, value string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.Put(ctx, key, value); err != nil {
		t.Fatalf("put %s: %v", key, err)
	}
}

func get(t *testing.T, c *clientv3.Client, key string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := c.Get(ctx, key)
	if err != nil {
		t.Fatalf("get %s: %v", key, err)
	}
	if len(resp.Kvs) != 1 {
		t.Fatalf("get %s: %d values, want 1", key, len(resp.Kvs))
	}
	return string(resp.Kvs[0].Value)
}

// The member runs with the heartbeat and election timeout asked for, and a
// restarted single member, which elects itself within 1 to 10 heartbeats,
// serves again.
func TestHeartbeatAndElectionTimeout(t *testing.T) {
	t.Parallel()
	cfg := DefaultConfig(filepath.Join(t.TempDir(), "etcd"))
	cfg.HeartbeatInterval, cfg.ElectionTimeout = 50*time.Millisecond, 250*time.Millisecond
	h := startT(t, cfg)
	if ec := h.etcd.Config(); ec.TickMs != 50 || ec.ElectionMs != 250 {
		t.Fatalf("member runs with heartbeat %d ms and election timeout %d ms, want 50 and 250", ec.TickMs, ec.ElectionMs)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	h = startT(t, cfg)
	put(t, newClient(t, h.ClientURLs(), nil), "after-restart", "v")
}

func TestStartOnUnixSocketOnly(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "etcd")
	h := startT(t, DefaultConfig(dir))

	select {
	case <-h.Ready():
	default:
		t.Fatal("Ready is not closed after Start returned")
	}
	want := "unix://" + filepath.Join(dir, "etcd.sock")
	if got := h.ClientURLs(); len(got) != 1 || got[0] != want {
		t.Fatalf("ClientURLs() = %v, want [%s]", got, want)
	}
	if n := len(h.etcd.Peers); n != 0 {
		t.Errorf("%d peer listeners, want none", n)
	}
	for _, l := range h.etcd.Clients {
		if l.Addr().Network() != "unix" {
			t.Errorf("client listener on %s %s, want only unix sockets", l.Addr().Network(), l.Addr())
		}
	}

	c := newClient(t, h.ClientURLs(), nil)
	put(t, c, "/greeting", "hello")
	if got := get(t, c, "/greeting"); got != "hello" {
		t.Fatalf("got %q, want hello", got)
	}
}

func TestClientCertificatesRequired(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pki := newTestPKI(t, dir)
	cfg := DefaultConfig(filepath.Join(dir, "etcd"))
	cfg.ListenClientURLs = []string{"https://" + freeAddr(t)}
	cfg.ClientTLS = TLSInfo{CertFile: pki.serverCert, KeyFile: pki.serverKey, TrustedCAFile: pki.caFile, ClientCertAuth: true}
	h := startT(t, cfg)

	withCert := newClient(t, h.ClientURLs(), &tls.Config{RootCAs: pki.pool, Certificates: []tls.Certificate{pki.client}})
	put(t, withCert, "k", "v")
	if got := get(t, withCert, "k"); got != "v" {
		t.Fatalf("got %q, want v", got)
	}

	addr := strings.TrimPrefix(h.ClientURLs()[0], "https://")
	conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: pki.pool})
	if err == nil {
		// With TLS 1.3 the server's verdict on the client arrives after
		// the client's side of the handshake.
		_, err = conn.Read(make([]byte, 1))
		_ = conn.Close()
	}
	if err == nil || !strings.Contains(err.Error(), "certificate required") {
		t.Errorf("TLS connection without a client certificate: err = %v, want certificate required", err)
	}

	noCert := newClient(t, h.ClientURLs(), &tls.Config{RootCAs: pki.pool})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if _, err := noCert.Get(ctx, "k"); err == nil {
		t.Error("a client without a certificate read a key")
	}
}

func TestDataDirIsPrivate(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "etcd")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	startT(t, DefaultConfig(dir))
	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if mode := fi.Mode().Perm(); mode != 0o700 {
		t.Errorf("data dir mode %o, want 700", mode)
	}
}

func TestCloseIsIdempotent(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "etcd")
	h, err := Start(DefaultConfig(dir))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = h.Close()
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("concurrent Close %d: %v", i, err)
		}
	}
	if err := h.Close(); err != nil {
		t.Errorf("Close after Close: %v", err)
	}
	select {
	case err := <-h.Err():
		t.Errorf("Err() delivered %v after Close", err)
	default:
	}
	if _, err := os.Lstat(filepath.Join(dir, "etcd.sock")); !os.IsNotExist(err) {
		t.Errorf("socket still exists after Close (Lstat: %v)", err)
	}
}

func TestRestartKeepsData(t *testing.T) {
	t.Parallel()
	cfg := DefaultConfig(filepath.Join(t.TempDir(), "etcd"))
	h, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c, err := clientv3.New(clientv3.Config{Endpoints: h.ClientURLs(), DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	put(t, c, "kept", "yes")
	_ = c.Close()
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}

	h = startT(t, cfg)
	if got := get(t, newClient(t, h.ClientURLs(), nil), "kept"); got != "yes" {
		t.Fatalf("after restart got %q, want yes", got)
	}
}

func TestSecondStartOnSameDataDirFails(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	cfg := DefaultConfig(filepath.Join(base, "etcd"))
	h := startT(t, cfg)

	second := cfg
	second.ListenClientURLs = []string{UnixSocketURL(filepath.Join(base, "second.sock"))}
	h2, err := Start(second)
	if err == nil {
		_ = h2.Close()
		t.Fatal("second Start on the same data dir succeeded")
	}
	if !strings.Contains(err.Error(), "in use") {
		t.Errorf("error %q does not say the data dir is in use", err)
	}
	c := newClient(t, h.ClientURLs(), nil)
	put(t, c, "still", "serving")
}

func TestStartRefusesToReplaceAFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	notASocket := filepath.Join(dir, "precious")
	if err := os.WriteFile(notASocket, []byte("data"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig(filepath.Join(dir, "etcd"))
	cfg.ListenClientURLs = []string{UnixSocketURL(notASocket)}
	if h, err := Start(cfg); err == nil {
		_ = h.Close()
		t.Fatal("Start succeeded over a regular file")
	}
	if b, err := os.ReadFile(notASocket); err != nil || string(b) != "data" {
		t.Errorf("the file was changed: %q, %v", b, err)
	}
}

func TestUnixSocketURL(t *testing.T) {
	t.Parallel()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for in, want := range map[string]string{
		"/run/gcp/etcd.sock": "unix:///run/gcp/etcd.sock",
		"rel/etcd.sock":      "unix://" + filepath.Join(wd, "rel/etcd.sock"),
	} {
		if got := UnixSocketURL(in); got != want {
			t.Errorf("UnixSocketURL(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	longDir := "/" + strings.Repeat("d", maxSocketPath)
	tls := TLSInfo{CertFile: "c.pem", KeyFile: "k.pem", TrustedCAFile: "ca.pem", ClientCertAuth: true}
	for name, tc := range map[string]struct {
		mutate func(*Config)
		want   string // substring of the error; empty means valid
	}{
		"default":               {func(*Config) {}, ""},
		"zero values defaulted": {func(c *Config) { c.Name, c.LogLevel, c.InitialClusterState, c.ReadyTimeout = "", "", "", 0 }, ""},
		"https with TLS":        {func(c *Config) { c.ListenClientURLs, c.ClientTLS = []string{"https://127.0.0.1:2379"}, tls }, ""},
		"peers with TLS": {func(c *Config) {
			c.ListenPeerURLs, c.PeerTLS = []string{"https://10.0.0.1:2380"}, tls
			c.InitialCluster = "gcp=https://10.0.0.1:2380,b=https://10.0.0.2:2380"
		}, ""},
		"empty data dir":    {func(c *Config) { c.DataDir = "" }, "--data-dir must not be empty"},
		"no client URLs":    {func(c *Config) { c.ListenClientURLs = nil }, "--listen-client-urls must not be empty"},
		"malformed URL":     {func(c *Config) { c.ListenClientURLs = []string{"http://[::1"} }, "malformed URL"},
		"unsupported":       {func(c *Config) { c.ListenClientURLs = []string{"ftp://127.0.0.1:21"} }, `unsupported scheme "ftp"`},
		"no port":           {func(c *Config) { c.ListenClientURLs = []string{"http://127.0.0.1"} }, "want http://host:port"},
		"port 0":            {func(c *Config) { c.ListenClientURLs = []string{"http://127.0.0.1:0"} }, "from 1 to 65535"},
		"path":              {func(c *Config) { c.ListenClientURLs = []string{"http://127.0.0.1:2379/x"} }, "no user, path"},
		"listen hostname":   {func(c *Config) { c.ListenClientURLs = []string{"http://example.com:2379"} }, "must be an IP address"},
		"relative socket":   {func(c *Config) { c.ListenClientURLs = []string{"unix://etcd.sock"} }, "absolute/path"},
		"one-slash socket":  {func(c *Config) { c.ListenClientURLs = []string{"unix:/x/etcd.sock"} }, "absolute/path"},
		"long socket":       {func(c *Config) { c.ListenClientURLs = []string{"unix://" + longDir} }, "more than the 107"},
		"unix peer":         {func(c *Config) { c.ListenPeerURLs = []string{"unix:///x/peer.sock"} }, `--listen-peer-urls "unix:///x/peer.sock": unsupported scheme`},
		"https without key": {func(c *Config) { c.ListenClientURLs = []string{"https://127.0.0.1:2379"} }, "need --cert-file and --key-file"},
		"cert without key":  {func(c *Config) { c.ClientTLS.CertFile = "c.pem" }, "--cert-file and --key-file must be set together"},
		"auth without CA": {func(c *Config) {
			c.ListenClientURLs, c.ClientTLS = []string{"https://127.0.0.1:2379"}, tls
			c.ClientTLS.TrustedCAFile = ""
		}, "--client-cert-auth needs --trusted-ca-file"},
		"auth on plain URL": {func(c *Config) { c.ClientTLS = tls }, "--client-cert-auth needs an https:// client URL"},
		"peer auth without CA": {func(c *Config) {
			c.ListenPeerURLs, c.PeerTLS = []string{"https://10.0.0.1:2380"}, tls
			c.PeerTLS.TrustedCAFile = ""
		}, "--peer-client-cert-auth needs --peer-trusted-ca-file"},
		"unspecified without advertise": {func(c *Config) { c.ListenClientURLs = []string{"http://0.0.0.0:2379"} }, "--advertise-client-urls is required"},
		"bad cluster state":             {func(c *Config) { c.InitialClusterState = "old" }, "--initial-cluster-state"},
		"cluster without me":            {func(c *Config) { c.InitialCluster = "other=http://10.0.0.2:2380" }, `no member named "gcp"`},
		"cluster without peers":         {func(c *Config) { c.InitialCluster = "gcp=http://10.0.0.1:2380,b=http://10.0.0.2:2380" }, "--listen-peer-urls must be set"},
		"metrics on loopback":           {func(c *Config) { c.ListenMetricsURLs = []string{"http://127.0.0.1:2381", "http://[::1]:2381"} }, ""},
		"plain metrics off loopback":    {func(c *Config) { c.ListenMetricsURLs = []string{"http://10.0.0.1:2381"} }, "plain http:// only on a loopback address"},
		"https metrics without cert":    {func(c *Config) { c.ListenMetricsURLs = []string{"https://10.0.0.1:2381"} }, "https:// needs --cert-file"},
		"unix metrics":                  {func(c *Config) { c.ListenMetricsURLs = []string{"unix:///x/m.sock"} }, `--listen-metrics-urls "unix:///x/m.sock": unsupported scheme`},
		"negative quota":                {func(c *Config) { c.QuotaBackendBytes = -1 }, "--quota-backend-bytes"},
		"negative min free disk":        {func(c *Config) { c.MinFreeDisk = -1 }, "--min-free-disk must not be negative"},
		"no free disk watch":            {func(c *Config) { c.MinFreeDisk = 0 }, ""},
		"bad log level":                 {func(c *Config) { c.LogLevel = "loud" }, "--log-level"},
		"short heartbeats":              {func(c *Config) { c.HeartbeatInterval, c.ElectionTimeout = 50*time.Millisecond, 250*time.Millisecond }, ""},
		"election under 5 heartbeats":   {func(c *Config) { c.HeartbeatInterval, c.ElectionTimeout = 50*time.Millisecond, 200*time.Millisecond }, "at least 5 times --heartbeat-interval"},
		"heartbeat over default/5":      {func(c *Config) { c.HeartbeatInterval = 300 * time.Millisecond }, "--election-timeout (1s) must be at least 5 times"},
		"fractional heartbeat":          {func(c *Config) { c.HeartbeatInterval = 1500 * time.Microsecond }, "whole number of milliseconds"},
		"negative election":             {func(c *Config) { c.ElectionTimeout = -time.Second }, "--election-timeout"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cfg := DefaultConfig("/var/lib/gcp/etcd")
			tc.mutate(&cfg)
			err := cfg.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tc.want != "" && err == nil:
				t.Fatalf("no error, want one containing %q", tc.want)
			case err != nil && !strings.Contains(err.Error(), tc.want):
				t.Fatalf("error %q does not contain %q", err, tc.want)
			case err != nil && strings.Contains(err.Error(), "\n"):
				t.Fatalf("error %q is more than one line", err)
			}
		})
	}
}

func TestValidateReportsEveryProblem(t *testing.T) {
	t.Parallel()
	cfg := Config{ListenClientURLs: []string{"ftp://x"}, LogLevel: "loud"}
	err := cfg.Validate()
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"--data-dir", "ftp", "--log-level"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %s", err, want)
		}
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return "127.0.0.1:" + strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

// testPKI is a throwaway CA with a server certificate for 127.0.0.1 and a
// client certificate, written as PEM files.
type testPKI struct {
	caFile, serverCert, serverKey string
	pool                          *x509.CertPool
	client                        tls.Certificate
}

func newTestPKI(t *testing.T, dir string) testPKI {
	t.Helper()
	caKey := newKey(t)
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "test-ca"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	issue := func(serial int64, cn string, usage x509.ExtKeyUsage, ips []net.IP) ([]byte, *ecdsa.PrivateKey) {
		key := newKey(t)
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial),
			Subject:      pkix.Name{CommonName: cn},
			NotBefore:    time.Now().Add(-time.Hour),
			NotAfter:     time.Now().Add(time.Hour),
			KeyUsage:     x509.KeyUsageDigitalSignature,
			ExtKeyUsage:  []x509.ExtKeyUsage{usage},
			IPAddresses:  ips,
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		return der, key
	}
	serverDER, serverKey := issue(2, "etcd", x509.ExtKeyUsageServerAuth, []net.IP{net.ParseIP("127.0.0.1")})
	clientDER, clientKey := issue(3, "client", x509.ExtKeyUsageClientAuth, nil)

	p := testPKI{
		caFile:     filepath.Join(dir, "ca.pem"),
		serverCert: filepath.Join(dir, "server.pem"),
		serverKey:  filepath.Join(dir, "server-key.pem"),
		pool:       x509.NewCertPool(),
	}
	p.pool.AddCert(ca)
	writePEM(t, p.caFile, "CERTIFICATE", caDER)
	writePEM(t, p.serverCert, "CERTIFICATE", serverDER)
	writePEM(t, p.serverKey, "EC PRIVATE KEY", marshalKey(t, serverKey))
	p.client, err = tls.X509KeyPair(
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: clientDER}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: marshalKey(t, clientKey)}))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func newKey(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func marshalKey(t *testing.T, key *ecdsa.PrivateKey) []byte {
	t.Helper()
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return der
}

func writePEM(t *testing.T, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestMetricsURLServesHealthWithoutCertificates checks the kubeadm-style
// plain-HTTP loopback listener: probes read /livez and /readyz and
// scrapers /metrics there, while the client URL still needs nothing but the
// unix socket.
func TestMetricsURLServesHealthWithoutCertificates(t *testing.T) {
	t.Parallel()
	cfg := DefaultConfig(filepath.Join(t.TempDir(), "etcd"))
	metricsURL := "http://" + freeAddr(t)
	cfg.ListenMetricsURLs = []string{metricsURL}
	startT(t, cfg)

	for path, want := range map[string]string{
		"/livez":   "ok",
		"/readyz":  "ok",
		"/health":  `"health":"true"`,
		"/metrics": "etcd_server_has_leader 1",
	} {
		resp, err := http.Get(metricsURL + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), want) {
			t.Errorf("GET %s: %d, body does not contain %q:\n%.300s", path, resp.StatusCode, want, body)
		}
	}
}
