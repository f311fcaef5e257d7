package openapi

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/kube-openapi/pkg/builder"
	"k8s.io/kube-openapi/pkg/builder3"
	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/gcp-project/gcp/pkg/controlplane/composition"
	gcpopenapi "github.com/gcp-project/gcp/pkg/controlplane/openapi"

	v1 "example.dev/widgets/apis/widgets/v1"
	"example.dev/widgets/registry"
)

func ref(path string) spec.Ref { return spec.MustCreateRef(path) }

// TestSpecsBuildWithGCP merges the generated definitions into gcp's as a
// composition does
// and builds the OpenAPI v2 and v3 definitions of Widget and WidgetList as
// the server does: every reference (ObjectMeta, Condition, ...) must
// resolve, and the kinds carry their group/version/kind.
func TestSpecsBuildWithGCP(t *testing.T) {
	defs := composition.Composition{OpenAPIDefinitions: []common.GetOpenAPIDefinitions{GetOpenAPIDefinitions}}.GetOpenAPIDefinitions()
	scheme := runtime.NewScheme()
	if err := (registry.APIGroup{}).InstallScheme(scheme); err != nil {
		t.Fatal(err)
	}
	namer := gcpopenapi.NewDefinitionNamer(scheme)
	names := []string{v1.Widget{}.OpenAPIModelName(), v1.WidgetList{}.OpenAPIModelName()}

	v2, err := builder.BuildOpenAPIDefinitionsForResources(&common.Config{GetDefinitions: defs, GetDefinitionName: namer.GetDefinitionName}, names...)
	if err != nil {
		t.Fatalf("v2: %v", err)
	}
	v3, err := builder3.BuildOpenAPIDefinitionsForResources(&common.OpenAPIV3Config{GetDefinitions: defs, GetDefinitionName: namer.GetDefinitionName}, names...)
	if err != nil {
		t.Fatalf("v3: %v", err)
	}
	for _, name := range []string{"dev.example.widgets.v1.Widget", "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", "io.k8s.apimachinery.pkg.apis.meta.v1.Condition"} {
		if _, ok := v2.Definitions[name]; !ok {
			t.Errorf("v2: %s missing", name)
		}
		if _, ok := v3[name]; !ok {
			t.Errorf("v3: %s missing", name)
		}
	}
	if gvk := v2.Definitions["dev.example.widgets.v1.Widget"].Extensions["x-kubernetes-group-version-kind"]; gvk == nil {
		t.Error("v2: Widget has no x-kubernetes-group-version-kind")
	}
}
