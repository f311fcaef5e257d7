// Package integration tests the library's server in-process: real embedded
// etcd, real HTTPS, client-go.
package integration

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"os"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/gcp-project/gcp/pkg/controlplane/allinone"
	"github.com/gcp-project/gcp/pkg/controlplane/apiserver/options"
	"github.com/gcp-project/gcp/pkg/controlplane/auth/pki"
	"github.com/gcp-project/gcp/pkg/controlplane/composition"
	"github.com/gcp-project/gcp/pkg/layering"
	"github.com/gcp-project/gcp/pkg/testserver"
)

// composeGeneric is the generic stack's composition, for allinone.Start.
func composeGeneric(t testing.TB) composition.Composition {
	t.Helper()
	comp, err := layering.Generic().Compose()
	if err != nil {
		t.Fatal(err)
	}
	return comp
}

func startGeneric(t testing.TB) *testserver.Server {
	t.Helper()
	return testserver.Start(t, testserver.Options{Stack: layering.Generic()})
}

// httpsClient trusts the server's CA and presents cert, if not nil.
func httpsClient(t testing.TB, s *testserver.Server, cert *tls.Certificate) *http.Client {
	t.Helper()
	caPEM, err := os.ReadFile(s.PKI.CACert)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	tc := &tls.Config{RootCAs: pool}
	if cert != nil {
		tc.Certificates = []tls.Certificate{*cert}
	}
	return &http.Client{Transport: &http.Transport{TLSClientConfig: tc}}
}

// userConfig returns a client config that authenticates with a client
// certificate for name in groups, signed by the server's CA.
func userConfig(t testing.TB, s *testserver.Server, name string, groups ...string) *rest.Config {
	t.Helper()
	certPEM, keyPEM, err := pki.IssueClientCert(s.PKI.CACert, s.PKI.CAKey, name, groups, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	cfg := rest.AnonymousClientConfig(s.AdminConfig)
	cfg.TLSClientConfig.CertData, cfg.TLSClientConfig.KeyData = certPEM, keyPEM
	return cfg
}

// userClient is a clientset for userConfig.
func userClient(t testing.TB, s *testserver.Server, name string, groups ...string) kubernetes.Interface {
	t.Helper()
	return kubernetes.NewForConfigOrDie(userConfig(t, s, name, groups...))
}

// allInOne returns the options of an all-in-one control plane in dataDir
// on a free loopback port, without controllers or Secrets encryption,
// adjusted by apiserver if not nil. Start completes the API server's
// options in place: make new ones for each start.
func allInOne(dataDir string, apiserver func(*options.Options)) allinone.Options {
	o := allinone.Options{DataDir: dataDir, APIServer: allinone.NewOptions().APIServer}
	o.APIServer.SecureServing.BindPort = 0
	if apiserver != nil {
		apiserver(o.APIServer)
	}
	return o
}

// runAllInOne starts o's control plane of comp; it stops when the test
// ends, and a stop with an error fails the test.
func runAllInOne(t *testing.T, o allinone.Options, comp composition.Composition) (*allinone.ControlPlane, kubernetes.Interface) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cp, err := allinone.Start(ctx, o, comp)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		if err := cp.Wait(); err != nil {
			t.Errorf("stopped with error: %v", err)
		}
	})
	return cp, adminClient(t, cp)
}

// adminClient is a client of cp with its admin kubeconfig.
func adminClient(t testing.TB, cp *allinone.ControlPlane) kubernetes.Interface {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", cp.AdminKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return client
}
