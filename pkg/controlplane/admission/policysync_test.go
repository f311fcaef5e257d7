package admission

import (
	"context"
	"errors"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
)

func attributesFor(gr schema.GroupResource) admission.Attributes {
	return admission.NewAttributesRecord(nil, nil, schema.GroupVersionKind{Group: gr.Group, Version: "v1", Kind: "Thing"}, "", "a",
		gr.WithVersion("v1"), "", admission.Create, nil, false, nil)
}

// The policy plugins are initialized once their informers have synced
// (policysync.go). Until then a request they evaluate waits (and is
// refused if it ends first), never evaluated by a plugin that has no
// policies yet; the resources upstream's plugins never hold pass at once;
// once initialized, requests pass, unless initialization failed.
func TestPolicyPluginsWaitForInformers(t *testing.T) {
	t.Parallel()
	configMaps := schema.GroupResource{Resource: "configmaps"}
	tokenReviews := schema.GroupResource{Group: "authentication.k8s.io", Resource: "tokenreviews"}
	policies := schema.GroupResource{Group: "admissionregistration.k8s.io", Resource: "validatingadmissionpolicies"}

	s := newSyncedInit()
	s.exclude([]schema.GroupResource{tokenReviews})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := s.wait(ctx, attributesFor(configMaps)); !apierrors.IsForbidden(err) {
		t.Errorf("a configmap before initialization, the request ending: %v, want 403", err)
	}
	for _, gr := range []schema.GroupResource{tokenReviews, policies} {
		if err := s.wait(context.Background(), attributesFor(gr)); err != nil {
			t.Errorf("%s before initialization: %v, want no wait", gr, err)
		}
	}
	waited := make(chan error, 1)
	go func() { waited <- s.wait(context.Background(), attributesFor(configMaps)) }()
	select {
	case err := <-waited:
		t.Fatalf("a configmap passed before initialization: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	close(s.done)
	if err := <-waited; err != nil {
		t.Errorf("once initialized: %v", err)
	}

	failed := newSyncedInit()
	failed.err = errors.New("broken")
	close(failed.done)
	if err := failed.wait(context.Background(), attributesFor(configMaps)); !apierrors.IsForbidden(err) {
		t.Errorf("after a failed initialization: %v, want 403", err)
	}
	if failed.waitForReady(func() bool { return true }) {
		t.Error("a plugin whose initialization failed says it is ready")
	}
}

// A plugin with a static manifests dir, or turned off, is initialized at
// once, so that its errors still fail the start; one with informers to
// wait for is initialized only once they have synced.
func TestPolicyPluginsInitializeWhen(t *testing.T) {
	t.Parallel()
	bad := errors.New("bad manifests")
	none := func(informers.SharedInformerFactory) []cache.SharedIndexInformer { return nil }

	s := newSyncedInit()
	s.factory, s.stop = informers.NewSharedInformerFactory(nil, 0), make(chan struct{})
	if err := s.start("/etc/policies", none, func() error { return bad }); !errors.Is(err, bad) {
		t.Errorf("with a static manifests dir: %v, want the plugin's own error", err)
	}
	off := newSyncedInit()
	off.factory, off.stop, off.off = informers.NewSharedInformerFactory(nil, 0), make(chan struct{}), true
	called := false
	if err := off.start("", none, func() error { called = true; return nil }); err != nil || !called {
		t.Errorf("turned off: %v, initialized %v; want at once", err, called)
	}

	stop := make(chan struct{})
	waiting := newSyncedInit()
	waiting.factory, waiting.stop = informers.NewSharedInformerFactory(nil, 0), stop
	unsynced := cache.NewSharedIndexInformer(&cache.ListWatch{}, nil, 0, cache.Indexers{})
	validated := make(chan struct{})
	if err := waiting.start("", func(informers.SharedInformerFactory) []cache.SharedIndexInformer {
		return []cache.SharedIndexInformer{unsynced}
	}, func() error { close(validated); return nil }); err != nil {
		t.Fatal(err)
	}
	select {
	case <-validated:
		t.Fatal("initialized before its informers synced")
	case <-time.After(100 * time.Millisecond):
	}
	close(stop)
	<-waiting.done
	if waiting.err == nil {
		t.Error("the server stopped before the informers synced, and initialization says nothing")
	}
}
