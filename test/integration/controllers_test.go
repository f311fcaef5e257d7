package integration

import (
	"context"
	"testing"

	"github.com/gcp-project/gcp/pkg/controlplane/controllers"
	"github.com/gcp-project/gcp/pkg/testserver"
)

// runControllers runs the descriptors' controllers against s with the
// controller manager itself (controllers.Run), as the admin, without
// serving or leader election, and stops them at the end of the test.
func runControllers(t testing.TB, s *testserver.Server, descriptors ...controllers.Descriptor) {
	t.Helper()
	o := controllers.NewOptions(descriptors)
	o.Kubeconfig = s.AdminKubeconfig
	o.UseServiceAccountCredentials = false
	o.SecureServing.BindPort = 0
	o.Generic.LeaderElection.LeaderElect = false
	// Unthrottled, as the admin client of the tests.
	o.Generic.ClientConnection.QPS, o.Generic.ClientConnection.Burst = -1, -1
	// The CSR signer signs with the CA the server trusts for clients.
	o.CSRSigning.ClusterSigningCertFile, o.CSRSigning.ClusterSigningKeyFile = s.PKI.CACert, s.PKI.CAKey
	cfg, err := o.Config()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- controllers.Run(ctx, cfg) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("controllers: %v", err)
		}
	})
}
