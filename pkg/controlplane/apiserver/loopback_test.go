package apiserver

import (
	"crypto/ecdsa"
	"crypto/tls"
	"crypto/x509"
	"net"
	"slices"
	"testing"
	"time"

	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/healthz"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

// The loopback certificate is ECDSA, verifies for the loopback client's
// server name against what the loopback client trusts, and expires when
// the health check says it does.
func TestSecureServingLoopback(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	o := genericoptions.NewSecureServingOptions().WithLoopback()
	o.Listener = ln
	o.BindPort = ln.Addr().(*net.TCPAddr).Port
	o.ServerCert.CertDirectory = t.TempDir()
	if err := o.MaybeDefaultWithSelfSignedCerts("localhost", nil, nil); err != nil {
		t.Fatal(err)
	}
	c := genericapiserver.NewConfig(scheme.Codecs)
	if err := applySecureServing(o, c); err != nil {
		t.Fatal(err)
	}
	if c.LoopbackClientConfig == nil || c.LoopbackClientConfig.BearerToken == "" {
		t.Fatal("no loopback client config with a token")
	}
	if len(c.SecureServing.SNICerts) == 0 {
		t.Fatal("no SNI certificate for the loopback client")
	}
	certPEM, keyPEM := c.SecureServing.SNICerts[0].CurrentCertKeyContent()
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := pair.PrivateKey.(*ecdsa.PrivateKey); !ok {
		t.Fatalf("loopback key is %T, want ECDSA", pair.PrivateKey)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	tc, err := rest.TLSConfigFor(c.LoopbackClientConfig)
	if err != nil {
		t.Fatal(err)
	}
	if tc.ServerName != genericapiserver.LoopbackClientServerNameOverride {
		t.Fatalf("loopback client expects server name %q", tc.ServerName)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: tc.RootCAs, DNSName: tc.ServerName}); err != nil {
		t.Fatalf("the loopback client does not trust the loopback certificate: %v", err)
	}
	if d := time.Until(leaf.NotAfter); d < loopbackCertMaxAge-time.Hour {
		t.Fatalf("loopback certificate valid for %v, want %v", d, loopbackCertMaxAge)
	}
	for name, checks := range map[string][]healthz.HealthChecker{"healthz": c.HealthzChecks, "livez": c.LivezChecks} {
		if !slices.ContainsFunc(checks, func(h healthz.HealthChecker) bool { return h.Name() == "loopback-serving-certificate" }) {
			t.Errorf("no loopback-serving-certificate check in %s", name)
		}
	}
}
