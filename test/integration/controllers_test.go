package integration

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"github.com/gcp-project/gcp/pkg/controlplane/controllers"
	"github.com/gcp-project/gcp/pkg/controlplane/controllers/garbagecollector"
	"github.com/gcp-project/gcp/pkg/controlplane/controllers/resourcequota"
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
	o.ClusterSigningCA = controllers.CAFiles{CertFile: s.PKI.CACert, KeyFile: s.PKI.CAKey}
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

// TestControllersShareOneWatchPerResource: the garbage collector and the
// quota controller watch a custom resource through one informer between
// them (controllers.ResourceInformers), so the API server serves one
// watch of it, while both do their work on it: the quota counts it and
// the collector collects it.
func TestControllersShareOneWatchPerResource(t *testing.T) {
	t.Parallel()
	s := startGeneric(t)
	runControllers(t, s, garbagecollector.DescriptorWithOptions(gcOptions),
		resourcequota.DescriptorWithOptions(resourcequota.Options{DiscoveryPeriod: time.Second}))
	ctx := context.Background()
	gadgets := createCRD(t, s, "share.example.com", "gadgets", "Gadget")
	const ns = "share"
	createNamespace(t, s.Client, ns)
	count := corev1.ResourceName("count/gadgets.share.example.com")
	if _, err := s.Client.CoreV1().ResourceQuotas(ns).Create(ctx, &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "gadgets"},
		Spec:       corev1.ResourceQuotaSpec{Hard: rqList(string(count), 5)},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	dyn := dynamic.NewForConfigOrDie(s.AdminConfig)
	owner := gcConfigMap(t, s.Client, ns, "owner", nil)
	gcCreateCustom(t, dyn, gadgets, "Gadget", ns, "g1", gcConfigMapOwner(owner))
	rqWaitStatus(t, s.Client, ns, "gadgets", rqList(string(count), 5), rqList(string(count), 1))

	if got := gadgetWatches(t, s); got != 1 {
		t.Errorf("the API server serves %d watches of gadgets, want 1 (the controllers' shared informer)", got)
	}

	gcDelete(t, s.Client, ns, "owner", metav1.DeletePropagationBackground)
	gcEventually(t, "gadget g1 collected", func(ctx context.Context) (bool, error) {
		_, err := dyn.Resource(gadgets).Namespace(ns).Get(ctx, "g1", metav1.GetOptions{})
		return apierrors.IsNotFound(err), err
	})
	rqWaitStatus(t, s.Client, ns, "gadgets", rqList(string(count), 5), rqList(string(count), 0))
}

// gadgetWatches is how many watches of gadgets.share.example.com the API
// server is serving (apiserver_longrunning_requests).
func gadgetWatches(t *testing.T, s *testserver.Server) int {
	t.Helper()
	body, err := s.Client.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for line := range strings.Lines(string(body)) {
		if !strings.HasPrefix(line, "apiserver_longrunning_requests{") || !strings.Contains(line, `group="share.example.com"`) ||
			!strings.Contains(line, `resource="gadgets"`) || !strings.Contains(line, `verb="WATCH"`) {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSpace(line[strings.LastIndex(line, " ")+1:]))
		if err != nil {
			t.Fatalf("metrics line %q: %v", line, err)
		}
		total += n
	}
	return total
}
