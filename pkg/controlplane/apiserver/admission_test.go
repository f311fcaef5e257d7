package apiserver

import (
	"slices"
	"strings"
	"testing"

	genericoptions "k8s.io/apiserver/pkg/server/options"
)

// TestAdmissionFor: the plugin order keeps only what the composition
// supports, and enabling anything else is an error naming it.
func TestAdmissionFor(t *testing.T) {
	o := genericoptions.NewAdmissionOptions()
	o.RecommendedPluginOrder = []string{"A", "B", "C"}
	got, err := admissionFor(o, []string{"C", "A"})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"A", "C"}; !slices.Equal(got.RecommendedPluginOrder, want) {
		t.Fatalf("order %v, want %v", got.RecommendedPluginOrder, want)
	}
	if !slices.Equal(o.RecommendedPluginOrder, []string{"A", "B", "C"}) {
		t.Fatalf("options changed: %v", o.RecommendedPluginOrder)
	}

	o.EnablePlugins = []string{"B"}
	if _, err := admissionFor(o, []string{"A", "C"}); err == nil || !strings.Contains(err.Error(), "B needs an API this server does not serve") {
		t.Fatalf("enabling an unsupported plugin: got %v", err)
	}
}
