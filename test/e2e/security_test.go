package e2e

import (
	"crypto/tls"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// TestProfilingOffByDefault: /debug/pprof and /debug/flags/v are not
// served, not even to system:masters, unless --profiling (CIS 1.2.15 for
// the API server, 1.3.2 for the controllers).
func TestProfilingOffByDefault(t *testing.T) {
	t.Parallel()
	forEachShape(t, func(t *testing.T, a controlPlane) {
		for _, path := range []string{"/debug/pprof/", "/debug/flags/v"} {
			if out, err := a.kubectlErr("get", "--raw", path); err == nil || !strings.Contains(out, "NotFound") {
				t.Errorf("GET %s as system:masters: %v\n%s", path, err, out)
			}
		}
		if s, ok := a.(*split); ok {
			client := adminHTTPClient(t, s.kubeconfig())
			resp, err := client.Get(s.controllersURL + "/debug/pprof/")
			if err != nil {
				t.Fatal(err)
			}
			_ = resp.Body.Close()
			if resp.StatusCode != http.StatusNotFound {
				t.Errorf("gcp controllers GET /debug/pprof/ as system:masters: %s, want 404", resp.Status)
			}
		}
	})
	t.Run("--profiling", func(t *testing.T) {
		t.Parallel()
		a := startAllInOne(t, t.TempDir(), "--profiling")
		if out, err := a.kubectlErr("get", "--raw", "/debug/pprof/"); err != nil {
			t.Fatalf("gcp start --profiling: GET /debug/pprof/: %v\n%s", err, out)
		}
	})
}

// TestTLSPolicy: the API server speaks TLS 1.3, and TLS 1.2 only with
// AEAD cipher suites: a client that offers only CBC-SHA1 suites, or only
// TLS 1.1, gets no connection (CIS 1.2.29).
func TestTLSPolicy(t *testing.T) {
	t.Parallel()
	forEachShape(t, func(t *testing.T, a controlPlane) {
		host := serverHost(t, a.kubeconfig())
		for _, tc := range []struct {
			name string
			cfg  *tls.Config
			ok   bool
		}{
			{"TLS 1.3", &tls.Config{MinVersion: tls.VersionTLS13}, true},
			{"TLS 1.2 AEAD", &tls.Config{MaxVersion: tls.VersionTLS12, CipherSuites: []uint16{tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256}}, true},
			{"TLS 1.2 CBC-SHA1", &tls.Config{MaxVersion: tls.VersionTLS12, CipherSuites: []uint16{tls.TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA, tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA}}, false},
			{"TLS 1.1", &tls.Config{MaxVersion: tls.VersionTLS11}, false},
		} {
			tc.cfg.InsecureSkipVerify = true // the handshake is what is tested
			conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", host, tc.cfg)
			if err == nil {
				_ = conn.Close()
			}
			if (err == nil) != tc.ok {
				t.Errorf("%s: handshake error %v, want success %v", tc.name, err, tc.ok)
			}
		}
	})
}

// serverHost is host:port of the kubeconfig's server.
func serverHost(t *testing.T, kubeconfig string) string {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(cfg.Host)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

// adminHTTPClient is an HTTPS client with the kubeconfig's credentials
// that trusts any server (gcp controllers' certificate is self-signed).
func adminHTTPClient(t *testing.T, kubeconfig string) *http.Client {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.TLSClientConfig.CAData, cfg.TLSClientConfig.CAFile, cfg.TLSClientConfig.Insecure = nil, "", true
	tlsConfig, err := rest.TLSConfigFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: tlsConfig}}
}
