package layering

import (
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/gcp-project/gcp/pkg/controlplane/auth/rbac/bootstrappolicy"
	"github.com/gcp-project/gcp/pkg/controlplane/composition"
	"github.com/gcp-project/gcp/pkg/controlplane/controllers"
)

// TestComposeFilters: the layers' handler chain filters, in stack order.
func TestComposeFilters(t *testing.T) {
	c, err := Stack{{Name: "a", Filters: []composition.Filter{{Name: "a1"}, {Name: "a2"}}}, {Name: "b"}, {Name: "c", Filters: []composition.Filter{{Name: "c1"}}}}.Compose()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range c.Filters {
		names = append(names, f.Name)
	}
	if got := strings.Join(names, ","); got != "a1,a2,c1" {
		t.Errorf("filters %s, want a1,a2,c1", got)
	}
}

func TestGenericComposes(t *testing.T) {
	c, err := Generic().Compose()
	if err != nil {
		t.Fatal(err)
	}
	if len(c.APIGroups) == 0 || len(c.Controllers) == 0 || !c.APIExtensions || !c.Aggregator || len(c.Policy.ClusterRoles) == 0 {
		t.Fatalf("generic composition is missing parts: %d groups, %d controllers, CRDs %v, aggregation %v, %d cluster roles",
			len(c.APIGroups), len(c.Controllers), c.APIExtensions, c.Aggregator, len(c.Policy.ClusterRoles))
	}
}

func TestComposeRejectsDuplicates(t *testing.T) {
	hook := func(genericapiserver.PostStartHookContext) error { return nil }
	ctrl := controllers.Descriptor{Name: "namespace-controller"}
	for name, c := range map[string]struct {
		stack Stack
		want  string
	}{
		"layer":      {Stack{{Name: "a"}, {Name: "a"}}, `layer "a" appears twice`},
		"group":      {Generic().With(Layer{Name: "mine", APIGroups: Generic()[0].APIGroups}), `API group "" is served by layers "core" and "mine"`},
		"hook":       {Stack{{Name: "a", PostStartHooks: map[string]genericapiserver.PostStartHookFunc{"h": hook}}, {Name: "b", PostStartHooks: map[string]genericapiserver.PostStartHookFunc{"h": hook}}}, `post-start hook "h"`},
		"filter":     {Stack{{Name: "a", Filters: []composition.Filter{{Name: "f"}}}, {Name: "b", Filters: []composition.Filter{{Name: "f"}}}}, `handler chain filter "f" is in layers "a" and "b"`},
		"controller": {Generic().With(Layer{Name: "mine", Controllers: []controllers.Descriptor{ctrl}}), `controller "namespace-controller" is in layers "core" and "mine"`},
		"alias is a name": {Generic().With(Layer{Name: "mine", Controllers: []controllers.Descriptor{{Name: "mine-controller", Aliases: []string{"namespace-controller"}}}}),
			`alias "namespace-controller" of controller "mine-controller" (layer "mine") is the name of a controller`},
		"alias is an alias": {Generic().With(Layer{Name: "mine", Controllers: []controllers.Descriptor{{Name: "mine-controller", Aliases: []string{"namespace"}}}}),
			`alias "namespace" of controller "mine-controller" (layer "mine") is an alias of controller "namespace-controller" too`},
		"name is an alias": {Generic().With(Layer{Name: "mine", Controllers: []controllers.Descriptor{{Name: "namespace"}}}),
			`controller "namespace" (layer "mine") is named as an alias of controller "namespace-controller"`},
		"alias is its own name": {Stack{{Name: "a", Controllers: []controllers.Descriptor{{Name: "x", Aliases: []string{"x"}}}}},
			`alias "x" of controller "x" (layer "a") is the name of a controller`},
	} {
		if _, err := c.stack.Compose(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", name, err, c.want)
		}
	}
}

// TestLayerPolicyAndDefinitions: a layer's RBAC joins the bootstrap
// policy; its OpenAPI definitions join gcp's, and redefining one of gcp's
// is refused.
func TestLayerPolicyAndDefinitions(t *testing.T) {
	mine := Layer{
		Name:   "widgets",
		Policy: bootstrappolicy.ControllerPolicy("widget-controller", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{"example.dev"}, Resources: []string{"widgets"}}),
		OpenAPIDefinitions: func(common.ReferenceCallback) map[string]common.OpenAPIDefinition {
			return map[string]common.OpenAPIDefinition{"dev.example.v1.Widget": {}}
		},
	}
	c, err := Generic().With(mine).Compose()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range c.Policy.ClusterRoles {
		found = found || r.Name == "system:controller:widget-controller"
	}
	generic, err := Generic().Compose()
	if err != nil {
		t.Fatal(err)
	}
	if !found || len(c.Policy.ClusterRoles) != len(generic.Policy.ClusterRoles)+1 {
		t.Errorf("policy has %d cluster roles (widget role found: %v), want the generic ones plus one", len(c.Policy.ClusterRoles), found)
	}
	defs := c.GetOpenAPIDefinitions()(func(string) spec.Ref { return spec.Ref{} })
	if _, ok := defs["dev.example.v1.Widget"]; !ok {
		t.Error("the layer's definition is not in the merged definitions")
	}
	if _, ok := defs["io.k8s.api.core.v1.ConfigMap"]; !ok {
		t.Error("gcp's definitions are not in the merged definitions")
	}

	// A layer's copy of one of gcp's definitions (openapi-gen writes the
	// meta types a package uses) does not replace gcp's.
	copied := mine
	copied.Name, copied.Policy = "copied", bootstrappolicy.Policy{}
	copied.OpenAPIDefinitions = func(common.ReferenceCallback) map[string]common.OpenAPIDefinition {
		return map[string]common.OpenAPIDefinition{"io.k8s.api.core.v1.ConfigMap": {}}
	}
	if c, err = Generic().With(copied).Compose(); err != nil {
		t.Fatal(err)
	}
	if def := c.GetOpenAPIDefinitions()(func(string) spec.Ref { return spec.Ref{} })["io.k8s.api.core.v1.ConfigMap"]; len(def.Schema.Properties) == 0 {
		t.Error("a layer's copy replaced gcp's ConfigMap definition")
	}
}
