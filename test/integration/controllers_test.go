package integration

import (
	"context"
	"os"
	"testing"
	"time"

	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/restmapper"
	"k8s.io/controller-manager/app"
	"k8s.io/controller-manager/pkg/clientbuilder"
	"k8s.io/controller-manager/pkg/informerfactory"

	servertesting "github.com/gcp-project/gcp/pkg/controlplane/apiserver/testing"
	"github.com/gcp-project/gcp/pkg/controlplane/controllers"
)

// runControllers builds the descriptors' controllers against s the way the
// controller manager does (admin credentials, shared typed and metadata
// informers, a discovery REST mapper), starts the informers, runs the
// controllers and stops them at the end of the test.
func runControllers(t testing.TB, s *servertesting.TestServer, descriptors ...controllers.Descriptor) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	client := kubernetes.NewForConfigOrDie(s.AdminConfig)
	shared := informers.NewSharedInformerFactory(client, 10*time.Minute)
	meta := metadatainformer.NewSharedInformerFactory(metadata.NewForConfigOrDie(s.AdminConfig), 10*time.Minute)
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(client.Discovery()))
	rootCA, err := os.ReadFile(s.PKI.CACert)
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	c := controllers.Context{
		ControllerContext: app.ControllerContext{
			ClientBuilder:                   clientbuilder.SimpleControllerClientBuilder{ClientConfig: s.AdminConfig},
			InformerFactory:                 shared,
			ObjectOrMetadataInformerFactory: informerfactory.NewInformerFactory(shared, meta),
			RESTMapper:                      mapper,
			Stop:                            ctx.Done(),
			InformersStarted:                started,
			ResyncPeriod:                    func() time.Duration { return 10 * time.Minute },
		},
		RootCA: rootCA,
		// The CSR signer signs with the CA the server trusts for clients.
		CSRSigning: controllers.CSRSigning{ClusterSigningCertFile: s.PKI.CACert, ClusterSigningKeyFile: s.PKI.CAKey,
			Duration: controllers.DefaultClusterSigningDuration},
	}
	var running []controllers.Controller
	for _, d := range descriptors {
		ctrl, err := d.New(ctx, c)
		if err != nil {
			cancel()
			t.Fatalf("controller %s: %v", d.Name, err)
		}
		running = append(running, ctrl)
	}
	shared.Start(ctx.Done())
	meta.Start(ctx.Done())
	close(started)
	done := make(chan struct{}, len(running))
	for _, ctrl := range running {
		go func() {
			ctrl.Run(ctx)
			done <- struct{}{}
		}()
	}
	t.Cleanup(func() {
		cancel()
		for range running {
			<-done
		}
		shared.Shutdown()
		meta.Shutdown()
	})
}
