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
// hold it, which runs until the last holder releases it and keeps no
// managed fields.
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
	cms, err := r.Hold(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"})
	if err != nil {
		t.Fatal(err)
	}
	// (Each call wraps the factory's informer anew; the store is its own.)
	if cms.Informer().GetStore() != typed.Core().V1().ConfigMaps().Informer().GetStore() {
		t.Error("configmaps: not the typed factory's informer")
	}
	waitSynced(t, cms.Informer())
	r.Release(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"})
	if cms.Informer().IsStopped() {
		t.Error("the typed factory's informer stopped on Release")
	}

	// Metadata: one informer for two holders.
	first, err := r.Hold(widgets)
	if err != nil {
		t.Fatal(err)
	}
	second, err := r.Hold(widgets)
	if err != nil {
		t.Fatal(err)
	}
	if first.Informer() != second.Informer() {
		t.Fatal("two holders of widgets got two informers")
	}
	if got, err := r.ForResource(widgets); err != nil || got.Informer() != first.Informer() {
		t.Fatalf("ForResource(widgets) = %v, %v", got, err)
	}
	waitSynced(t, first.Informer())
	items := first.Informer().GetStore().List()
	if len(items) != 1 || len(items[0].(*metav1.PartialObjectMetadata).ManagedFields) != 0 {
		t.Fatalf("widgets in the cache: %v, want w without managed fields", items)
	}

	r.Release(widgets)
	if first.Informer().IsStopped() {
		t.Fatal("widgets' informer stopped while still held")
	}
	r.Release(widgets)
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return first.Informer().IsStopped(), nil
	}); err != nil {
		t.Fatal("widgets' informer still runs after its last Release")
	}
	if _, err := r.ForResource(widgets); err == nil {
		t.Error("ForResource of a released resource: no error")
	}
	third, err := r.Hold(widgets)
	if err != nil {
		t.Fatal(err)
	}
	if third.Informer() == first.Informer() {
		t.Error("holding widgets again reused the stopped informer")
	}
	waitSynced(t, third.Informer())
}

func waitSynced(t *testing.T, inf cache.SharedIndexInformer) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("informer did not sync")
	}
}
