package apiserver

import (
	"io"
	"slices"
	"strings"
	"testing"

	"k8s.io/apiserver/pkg/admission"
	mutatingadmissionpolicy "k8s.io/apiserver/pkg/admission/plugin/policy/mutating"
	genericoptions "k8s.io/apiserver/pkg/server/options"

	gcpadmission "github.com/gcp-project/gcp/pkg/controlplane/admission"
)

// TestAdmissionFor: the plugin order keeps only what the composition
// supports, and enabling anything else is an error naming it.
func TestAdmissionFor(t *testing.T) {
	o := genericoptions.NewAdmissionOptions()
	o.RecommendedPluginOrder = []string{"A", "B", "C"}
	got, err := admissionFor(o, gcpadmission.Named("C", "A"))
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
	if _, err := admissionFor(o, gcpadmission.Named("A", "C")); err == nil || !strings.Contains(err.Error(), "B needs an API this server does not serve") {
		t.Fatalf("enabling an unsupported plugin: got %v", err)
	}
}

// TestAdmissionForLayerPlugins: a layer's own plugin is registered and
// runs after gcp's built-in plugins, before the policies and webhooks;
// adding it twice changes nothing.
func TestAdmissionForLayerPlugins(t *testing.T) {
	o := genericoptions.NewAdmissionOptions()
	o.Plugins = admission.NewPlugins()
	gcpadmission.Register(o.Plugins)
	o.RecommendedPluginOrder = gcpadmission.RecommendedOrder()
	mine := gcpadmission.Plugin{Name: "Mine", Factory: func(io.Reader) (admission.Interface, error) { return nopPlugin{}, nil }}
	supported := append(gcpadmission.Named(gcpadmission.RecommendedOrder()...), mine)
	for range 2 {
		got, err := admissionFor(o, supported)
		if err != nil {
			t.Fatal(err)
		}
		at, policies := slices.Index(got.RecommendedPluginOrder, "Mine"), slices.Index(got.RecommendedPluginOrder, mutatingadmissionpolicy.PluginName)
		if at < 0 || at != policies-1 || strings.Count(strings.Join(got.RecommendedPluginOrder, ","), "Mine") != 1 {
			t.Fatalf("order %v: want Mine once, just before %s", got.RecommendedPluginOrder, mutatingadmissionpolicy.PluginName)
		}
	}
	if !slices.Contains(o.Plugins.Registered(), "Mine") {
		t.Fatal("Mine is not registered")
	}
}

type nopPlugin struct{}

func (nopPlugin) Handles(admission.Operation) bool { return false }
