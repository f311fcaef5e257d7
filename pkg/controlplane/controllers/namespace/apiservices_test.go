package namespace

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/tools/cache"
)

// TestDiscoveryFailureNamesTheAPIService: the DiscoveryFailed condition
// names the failing group and its APIService's reason and message.
func TestDiscoveryFailureNamesTheAPIService(t *testing.T) {
	store := cache.NewStore(cache.MetaNamespaceKeyFunc)
	_ = store.Add(&unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
		"metadata": map[string]any{"name": "v1alpha1.wardle.example.com"},
		"status": map[string]any{"conditions": []any{map[string]any{
			"type": "Available", "status": "False", "reason": "FailedDiscoveryCheck", "message": "failing or missing response from https://127.0.0.1:9443",
		}}},
	}})
	_ = store.Add(&unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
		"metadata": map[string]any{"name": "v1.fine.example.com"},
		"status":   map[string]any{"conditions": []any{map[string]any{"type": "Available", "status": "True", "reason": "Passed"}}},
	}})
	wardle := schema.GroupVersion{Group: "wardle.example.com", Version: "v1alpha1"}
	err := &discovery.ErrGroupDiscoveryFailed{Groups: map[schema.GroupVersion]error{
		wardle: errors.New("stale GroupVersion discovery: wardle.example.com/v1alpha1"),
		{Group: "fine.example.com", Version: "v1"}: errors.New("stale"),
	}}
	var c conditions
	c.discoveryFailed(err, apiServiceExplainer{store: store}.explain)
	got := c.failing[corev1.NamespaceDeletionDiscoveryFailure].Message
	want := "APIService v1alpha1.wardle.example.com is not Available: FailedDiscoveryCheck: failing or missing response from https://127.0.0.1:9443"
	if !strings.Contains(got, want) || strings.Contains(got, "APIService v1.fine.example.com") {
		t.Fatalf("message %q, want it to contain %q and nothing about the available APIService", got, want)
	}
	if e := (apiServiceExplainer{}).explain(wardle); e != "" {
		t.Fatalf("without APIServices: %q", e)
	}
}
