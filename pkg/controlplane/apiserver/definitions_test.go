package apiserver

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/gcp-project/gcp/pkg/controlplane/composition"
	"github.com/gcp-project/gcp/pkg/controlplane/openapi"
	"github.com/gcp-project/gcp/pkg/controlplane/registry"
	"github.com/gcp-project/gcp/pkg/controlplane/registry/core"
	"github.com/gcp-project/gcp/pkg/controlplane/registry/typed"
)

// gadget is a native type without generated OpenAPI definitions.
type gadget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
}

func (g *gadget) DeepCopyObject() runtime.Object {
	out := *g
	g.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	return &out
}

type gadgetGroup struct{}

func (gadgetGroup) GroupName() string { return "gadgets.example.dev" }
func (gadgetGroup) InstallScheme(s *runtime.Scheme) error {
	typed.AddVersionedAsInternal(s, schema.GroupVersion{Group: "gadgets.example.dev", Version: "v1"}, &gadget{})
	return nil
}
func (gadgetGroup) NewRESTStorage(registry.StorageOptions) (genericapiserver.APIGroupInfo, bool, error) {
	return genericapiserver.APIGroupInfo{}, false, nil
}

// TestCheckDefinitions: a served kind without an OpenAPI definition is an
// error before anything starts, naming the kind and the missing model;
// gcp's own groups have all of theirs.
func TestCheckDefinitions(t *testing.T) {
	groups := []registry.APIGroup{core.APIGroup{}, gadgetGroup{}}
	scheme, err := NewScheme(groups)
	if err != nil {
		t.Fatal(err)
	}
	err = checkDefinitions(scheme, groups, openapi.GetOpenAPIDefinitions)
	want := "gadgets.example.dev/v1, Kind=gadget (github.com/gcp-project/gcp/pkg/controlplane/apiserver.gadget)"
	if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "ConfigMap") {
		t.Fatalf("got %v, want an error naming only %s", err, want)
	}

	comp := composition.Composition{APIGroups: groups[:1]}
	if err := checkDefinitions(scheme, groups[:1], comp.GetOpenAPIDefinitions()); err != nil {
		t.Fatalf("core group: %v", err)
	}
}

// TestCheckDefinitionsDependencies: a definition referring to a type by Go
// path, as openapi-gen writes it when the type's package is not among its
// inputs, is an error before anything starts that names the missing
// definition, who refers to it and the package to add to openapi-gen's
// inputs, rather than kube-openapi's advice to add +k8s:openapi-gen=true
// once etcd runs.
func TestCheckDefinitionsDependencies(t *testing.T) {
	const gadget = "github.com/gcp-project/gcp/pkg/controlplane/apiserver.gadget"
	const objectMeta = "k8s.io/apimachinery/pkg/apis/meta/v1.ObjectMeta"
	generated := func(metaName string) common.GetOpenAPIDefinitions {
		return func(ref common.ReferenceCallback) map[string]common.OpenAPIDefinition {
			return map[string]common.OpenAPIDefinition{gadget: {
				Schema: spec.Schema{SchemaProps: spec.SchemaProps{
					Type:       []string{"object"},
					Properties: map[string]spec.Schema{"metadata": {SchemaProps: spec.SchemaProps{Ref: ref(metaName)}}},
				}},
				Dependencies: []string{metaName},
			}}
		}
	}
	groups := []registry.APIGroup{core.APIGroup{}, gadgetGroup{}}
	scheme, err := NewScheme(groups)
	if err != nil {
		t.Fatal(err)
	}

	comp := composition.Composition{APIGroups: groups, OpenAPIDefinitions: []common.GetOpenAPIDefinitions{generated(objectMeta)}}
	err = checkDefinitions(scheme, groups, comp.GetOpenAPIDefinitions())
	for _, want := range []string{objectMeta + " (referred to by " + gadget + ")", "pass k8s.io/apimachinery/pkg/apis/meta/v1 to openapi-gen"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("got %v, want an error with %q", err, want)
		}
	}

	comp.OpenAPIDefinitions = []common.GetOpenAPIDefinitions{generated("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")}
	if err := checkDefinitions(scheme, groups, comp.GetOpenAPIDefinitions()); err != nil {
		t.Errorf("with the canonical name: %v", err)
	}
}
