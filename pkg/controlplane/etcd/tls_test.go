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
	"testing"
	"time"
)

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
