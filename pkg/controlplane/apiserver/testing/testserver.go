// Package testing starts real gcp control planes for tests: embedded etcd
// in t.TempDir(), the API server on a free loopback port, real HTTPS.
package testing

import (
	"context"
	"net/http"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/gcp-project/gcp/pkg/controlplane/allinone"
	"github.com/gcp-project/gcp/pkg/controlplane/apiserver"
	"github.com/gcp-project/gcp/pkg/controlplane/apiserver/options"
)

// TestServer is a running control plane.
type TestServer struct {
	// ControlPlane has the data dir, URL, PKI paths and admin kubeconfig.
	*allinone.ControlPlane
	// AdminConfig is a system:masters client config.
	AdminConfig *rest.Config
	// Client is a clientset for AdminConfig.
	Client kubernetes.Interface
	// Stop stops the server and waits for it; it is idempotent and also
	// runs at the end of the test.
	Stop func()
}

// Options adjust the test server.
type Options struct {
	// Extra says which APIs are served; build it with pkg/layering
	// (layering.Generic().Extra()).
	Extra apiserver.Extra
	// APIServer adjusts the apiserver options.
	APIServer func(*options.Options)
}

// StartTestServer starts a control plane and waits until /readyz is 200.
// Each call has its own data dir and port; two in one test binary share
// nothing mutable.
func StartTestServer(t testing.TB, o Options) *TestServer {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cp, err := allinone.Start(ctx, allinone.Options{
		DataDir:     t.TempDir(),
		BindAddress: "127.0.0.1",
		SecurePort:  0,
		APIServer: func(ao *options.Options) {
			// Tests shut down at once; no need to wait for load balancers.
			ao.GenericServerRunOptions.ShutdownDelayDuration = 0
			if o.APIServer != nil {
				o.APIServer(ao)
			}
		},
	}, o.Extra)
	if err != nil {
		cancel()
		t.Fatalf("starting test server: %v", err)
	}
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := cp.Wait(); err != nil {
			t.Errorf("test server stopped with error: %v", err)
		}
	}
	t.Cleanup(stop)

	cfg, err := clientcmd.BuildConfigFromFlags("", cp.AdminKubeconfig)
	if err != nil {
		t.Fatalf("admin kubeconfig: %v", err)
	}
	cfg.QPS, cfg.Burst = -1, -1
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	if err := WaitReady(ctx, client.Discovery().RESTClient(), 60*time.Second); err != nil {
		select {
		case <-cp.Done():
			t.Fatalf("test server exited before ready: %v", cp.Wait())
		default:
		}
		t.Fatalf("test server not ready: %v", err)
	}
	return &TestServer{ControlPlane: cp, AdminConfig: cfg, Client: client, Stop: stop}
}

// WaitReady polls /readyz until it answers 200 or timeout passes.
func WaitReady(ctx context.Context, c rest.Interface, timeout time.Duration) error {
	var lastErr error
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		var status int
		res := c.Get().AbsPath("/readyz").Do(ctx).StatusCode(&status)
		lastErr = res.Error()
		return status == http.StatusOK, nil
	})
	if err != nil && lastErr != nil {
		return lastErr
	}
	return err
}
