package controllers

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
	"k8s.io/client-go/tools/cache"
)

// TestResourceInformers: a resource the typed factory knows gets the
// factory's informer; any other gets one metadata informer however many
// handlers are on it, which runs until the last handler is removed and
// keeps no managed fields.
func TestResourceInformers(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	widgets := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	scheme := metadatafake.NewTestScheme()
	if err := metav1.AddMetaToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	w := &metav1.PartialObjectMetadata{
		TypeMeta: metav1.TypeMeta{APIVersion: "example.com/v1", Kind: "Widget"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "w", ManagedFields: []metav1.ManagedFieldsEntry{
			{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply},
		}},
	}
	typed := informers.NewSharedInformerFactory(fake.NewClientset(), 0)
	started := make(chan struct{})
	close(started)
	r := NewResourceInformers(ctx, typed, metadatafake.NewSimpleMetadataClient(scheme, w), 0, started)
	defer func() {
		cancel()
		typed.Shutdown()
		r.Wait()
	}()

	// Typed: the factory's own informer, started, and not stopped by
	// Release.
	cms, err := r.AddEventHandler(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, cache.ResourceEventHandlerFuncs{})
	if err != nil {
		t.Fatal(err)
	}
	// (Each call wraps the factory's informer anew; the store is its own.)
	if cms.informer.GetStore() != typed.Core().V1().ConfigMaps().Informer().GetStore() {
		t.Error("configmaps: not the typed factory's informer")
	}
	waitSynced(t, cms.HasSynced)
	cms.Remove()
	if cms.informer.IsStopped() {
		t.Error("the typed factory's informer stopped on Release")
	}

	// Metadata: one informer for two holders.
	first, err := r.AddEventHandler(widgets, cache.ResourceEventHandlerFuncs{})
	if err != nil {
		t.Fatal(err)
	}
	second, err := r.AddEventHandler(widgets, cache.ResourceEventHandlerFuncs{})
	if err != nil {
		t.Fatal(err)
	}
	if first.informer != second.informer {
		t.Fatal("two handlers of widgets got two informers")
	}
	if got, err := r.ForResource(widgets); err != nil || got.Informer() != first.informer {
		t.Fatalf("ForResource(widgets) = %v, %v", got, err)
	}
	waitSynced(t, first.HasSynced)
	waitSynced(t, second.HasSynced)
	items := first.informer.GetStore().List()
	if len(items) != 1 || len(items[0].(*metav1.PartialObjectMetadata).ManagedFields) != 0 {
		t.Fatalf("widgets in the cache: %v, want w without managed fields", items)
	}

	first.Remove()
	if first.informer.IsStopped() {
		t.Fatal("widgets' informer stopped while a handler is still on it")
	}
	second.Remove()
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return first.informer.IsStopped(), nil
	}); err != nil {
		t.Fatal("widgets' informer still runs after its last handler went")
	}
	if _, err := r.ForResource(widgets); err == nil {
		t.Error("ForResource of a released resource: no error")
	}
	third, err := r.AddEventHandler(widgets, cache.ResourceEventHandlerFuncs{})
	if err != nil {
		t.Fatal(err)
	}
	if third.informer == first.informer {
		t.Error("a handler on widgets again reused the stopped informer")
	}
	waitSynced(t, third.HasSynced)
}

func waitSynced(t *testing.T, synced cache.InformerSynced) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if !cache.WaitForCacheSync(ctx.Done(), synced) {
		t.Fatal("informer did not sync")
	}
}
