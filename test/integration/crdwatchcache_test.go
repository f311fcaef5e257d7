package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apiextensionsinformers "k8s.io/apiextensions-apiserver/pkg/client/informers/externalversions"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/gcp-project/gcp/test/poll"
)

// TestCRDsAreServedWithoutAWatchCache: by default CRDs have no watch cache
// (options.DefaultWatchCacheSizes, issue 38), and everything a client does
// with them still works: an informer (which may ask for a streaming list)
// syncs and sees a CRD come and go, a watch from a resourceVersion gets
// what followed it, and a list at resourceVersion 0 answers.
func TestCRDsAreServedWithoutAWatchCache(t *testing.T) {
	t.Parallel()
	s := startGeneric(t)
	ctx := context.Background()
	client := apiextensionsclient.NewForConfigOrDie(s.AdminConfig)
	crds := client.ApiextensionsV1().CustomResourceDefinitions()

	factory := apiextensionsinformers.NewSharedInformerFactory(client, 0)
	informer := factory.Apiextensions().V1().CustomResourceDefinitions().Informer()
	stop := make(chan struct{})
	defer close(stop)
	factory.Start(stop)
	if !cache.WaitForCacheSync(stop, informer.HasSynced) {
		t.Fatal("CRD informer never synced")
	}

	list, err := crds.List(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		t.Fatalf("list at resourceVersion 0: %v", err)
	}
	w, err := crds.Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	crd := preservingCRD("cache.example.com", "uncached", "Uncached")
	if _, err := crds.Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-w.ResultChan():
		if got, ok := ev.Object.(*apiextensionsv1.CustomResourceDefinition); ev.Type != watch.Added || !ok || got.Name != crd.Name {
			t.Fatalf("first event after the list: %s %#v, want ADDED %s", ev.Type, ev.Object, crd.Name)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no event for the created CRD")
	}
	poll.Until(t, 50*time.Millisecond, 30*time.Second, func() error {
		if _, ok, _ := informer.GetStore().GetByKey(crd.Name); !ok {
			return fmt.Errorf("the informer has not seen CRD %s", crd.Name)
		}
		return nil
	})
	if err := crds.Delete(ctx, crd.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 50*time.Millisecond, time.Minute, func() error {
		if _, ok, _ := informer.GetStore().GetByKey(crd.Name); ok {
			return fmt.Errorf("the informer still holds the deleted CRD %s", crd.Name)
		}
		return nil
	})

	metrics, err := s.Client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(metrics), "\n") {
		if strings.HasPrefix(line, "apiserver_watch_cache_") && strings.Contains(line, `resource="customresourcedefinitions"`) {
			t.Fatalf("CRDs have a watch cache: %s", line)
		}
	}
	if !strings.Contains(string(metrics), `apiserver_watch_cache_events_received_total{group="",resource="namespaces"}`) {
		t.Fatal("no watch cache metric for namespaces either: the check above proves nothing")
	}
}
