package openapi

import (
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apiopenapi "k8s.io/apiserver/pkg/endpoints/openapi"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	"k8s.io/kube-openapi/pkg/builder"
	"k8s.io/kube-openapi/pkg/builder3"
	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

const (
	refPrefix      = "#/definitions/"
	addPackageHint = "add its package to OPENAPI_INPUT_PKGS in hack/update-codegen.sh and run it"
)

// testRef is the reference callback the OpenAPI v2 builder passes to
// GetOpenAPIDefinitions when names are not rewritten.
func testRef(name string) spec.Ref {
	return spec.MustCreateRef(refPrefix + common.EscapeJsonPointer(name))
}

// servedScheme registers every group/version whose types hack/update-codegen.sh
// generates definitions for, the way the server registers them: each
// versioned type also under its group's __internal version (docs/architecture.md,
// decision 2).
func servedScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		admissionregistrationv1.AddToScheme,
		apiextensionsv1.AddToScheme,
		apiregistrationv1.AddToScheme,
		authenticationv1.AddToScheme,
		authorizationv1.AddToScheme,
		autoscalingv1.AddToScheme,
		certificatesv1.AddToScheme,
		coordinationv1.AddToScheme,
		corev1.AddToScheme,
		eventsv1.AddToScheme,
		flowcontrolv1.AddToScheme,
		rbacv1.AddToScheme,
	} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	for gvk, typ := range s.AllKnownTypes() {
		obj := reflect.New(typ).Interface().(runtime.Object)
		internal := gvk.GroupKind().WithVersion(runtime.APIVersionInternal)
		if unversioned, _ := s.IsUnversioned(obj); unversioned || gvk.Version == runtime.APIVersionInternal || s.Recognizes(internal) {
			continue
		}
		s.AddKnownTypeWithName(internal, obj)
	}
	return s
}

// refsIn returns the distinct definition names that the JSON form of v
// refers to.
func refsIn(t *testing.T, v any) []string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var tree any
	if err := json.Unmarshal(data, &tree); err != nil {
		t.Fatal(err)
	}
	refs := map[string]bool{}
	var walk func(any)
	walk = func(n any) {
		switch n := n.(type) {
		case map[string]any:
			if r, ok := n["$ref"].(string); ok {
				name, ok := strings.CutPrefix(r, refPrefix)
				if !ok {
					t.Errorf("reference %q does not start with %q", r, refPrefix)
				}
				refs[strings.NewReplacer("~1", "/", "~0", "~").Replace(name)] = true
			}
			for _, c := range n {
				walk(c)
			}
		case []any:
			for _, c := range n {
				walk(c)
			}
		}
	}
	walk(tree)
	return slices.Sorted(maps.Keys(refs))
}

func TestDefinitionReferencesResolve(t *testing.T) {
	t.Parallel()
	defs := GetOpenAPIDefinitions(testRef)
	total := 0
	for name, def := range defs {
		for _, dep := range def.Dependencies {
			if _, ok := defs[dep]; !ok {
				t.Errorf("%s depends on %s, which has no definition; %s", name, dep, addPackageHint)
			}
		}
		for _, ref := range refsIn(t, def.Schema) {
			total++
			if _, ok := defs[ref]; !ok {
				t.Errorf("%s refers to %s, which has no definition; %s", name, ref, addPackageHint)
			}
			// The spec builders copy a definition's dependencies, not its refs.
			if !slices.Contains(def.Dependencies, ref) {
				t.Errorf("%s refers to %s without listing it as a dependency", name, ref)
			}
		}
	}
	if total == 0 {
		t.Fatal("found no references at all; the walk is broken")
	}
}

func TestEveryServedKindHasADefinition(t *testing.T) {
	t.Parallel()
	s := servedScheme(t)
	defs := GetOpenAPIDefinitions(testRef)
	for gvk := range s.AllKnownTypes() {
		if gvk.Version == runtime.APIVersionInternal {
			continue
		}
		name, err := s.ToOpenAPIDefinitionName(gvk)
		if err != nil {
			t.Errorf("%v: %v", gvk, err)
			continue
		}
		if _, ok := defs[name]; !ok {
			t.Errorf("%v: no definition named %q", gvk, name)
		}
	}
}

// gvkExtension is the x-kubernetes-group-version-kind value the namer
// attaches to the definition of a kind served in the given group/versions.
func gvkExtension(gvks ...schema.GroupVersionKind) []any {
	var ext []any
	for _, gvk := range gvks {
		ext = append(ext, map[string]any{"group": gvk.Group, "version": gvk.Version, "kind": gvk.Kind})
	}
	return ext
}

// jsonValue round-trips v through JSON so extension values of any Go type
// compare by content.
func jsonValue(t *testing.T, v any) any {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestSpecsCarryGroupVersionKinds builds OpenAPI v2 and v3 definitions the
// way the generic apiserver does (DefaultOpenAPIConfig and
// DefaultOpenAPIV3Config wire the same two functions). openapi-gen emits no
// x-kubernetes-group-version-kind; the namer adds it from the scheme, and
// server-side apply and kubectl find a kind's schema by it.
func TestSpecsCarryGroupVersionKinds(t *testing.T) {
	t.Parallel()
	namer := NewDefinitionNamer(servedScheme(t))
	want := map[string][]any{
		"io.k8s.api.core.v1.ConfigMap":   gvkExtension(corev1.SchemeGroupVersion.WithKind("ConfigMap")),
		"io.k8s.api.rbac.v1.ClusterRole": gvkExtension(rbacv1.SchemeGroupVersion.WithKind("ClusterRole")),
		"io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition": gvkExtension(
			apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition")),
		"io.k8s.kube-aggregator.pkg.apis.apiregistration.v1.APIService": gvkExtension(
			apiregistrationv1.SchemeGroupVersion.WithKind("APIService")),
	}
	names := make([]string, 0, len(want))
	for name := range want {
		names = append(names, name)
	}

	v2, err := builder.BuildOpenAPIDefinitionsForResources(&common.Config{
		GetDefinitions:    GetOpenAPIDefinitions,
		GetDefinitionName: namer.GetDefinitionName,
	}, names...)
	if err != nil {
		t.Fatal(err)
	}
	v3, err := builder3.BuildOpenAPIDefinitionsForResources(&common.OpenAPIV3Config{
		GetDefinitions:    GetOpenAPIDefinitions,
		GetDefinitionName: namer.GetDefinitionName,
	}, names...)
	if err != nil {
		t.Fatal(err)
	}

	for name, ext := range want {
		for version, schemas := range map[string]map[string]spec.Schema{
			"v2": v2.Definitions,
			"v3": derefSchemas(v3),
		} {
			def, ok := schemas[name]
			if !ok {
				t.Errorf("%s: %s missing", version, name)
				continue
			}
			if got := jsonValue(t, def.Extensions["x-kubernetes-group-version-kind"]); !reflect.DeepEqual(got, jsonValue(t, ext)) {
				t.Errorf("%s: %s has x-kubernetes-group-version-kind %v, want %v", version, name, got, ext)
			}
		}
	}
	// Dependencies are pulled in with the kinds.
	objectMeta := metav1.ObjectMeta{}.OpenAPIModelName()
	if _, ok := v2.Definitions[objectMeta]; !ok {
		t.Errorf("v2: %s missing", objectMeta)
	}
	if _, ok := v3[objectMeta]; !ok {
		t.Errorf("v3: %s missing", objectMeta)
	}
}

func derefSchemas(in map[string]*spec.Schema) map[string]spec.Schema {
	out := make(map[string]spec.Schema, len(in))
	for k, v := range in {
		out[k] = *v
	}
	return out
}

// TestNewDefinitionNamerHidesInternalVersions checks the reason
// NewDefinitionNamer exists: k8s.io/apiserver's namer publishes __internal
// registrations of external types, ours does not. If the first assertion
// starts failing, upstream changed and NewDefinitionNamer can go.
func TestNewDefinitionNamerHidesInternalVersions(t *testing.T) {
	t.Parallel()
	s := servedScheme(t)
	name := corev1.ConfigMap{}.OpenAPIModelName()

	_, upstream := apiopenapi.NewDefinitionNamer(s).GetDefinitionName(name)
	want := gvkExtension(
		schema.GroupVersionKind{Version: runtime.APIVersionInternal, Kind: "ConfigMap"},
		corev1.SchemeGroupVersion.WithKind("ConfigMap"),
	)
	if got := jsonValue(t, upstream["x-kubernetes-group-version-kind"]); !reflect.DeepEqual(jsonValue(t, want), got) {
		t.Errorf("k8s.io/apiserver's namer: x-kubernetes-group-version-kind = %v, want %v", got, want)
	}

	_, ours := NewDefinitionNamer(s).GetDefinitionName(name)
	want = gvkExtension(corev1.SchemeGroupVersion.WithKind("ConfigMap"))
	if got := jsonValue(t, ours["x-kubernetes-group-version-kind"]); !reflect.DeepEqual(jsonValue(t, want), got) {
		t.Errorf("NewDefinitionNamer: x-kubernetes-group-version-kind = %v, want %v", got, want)
	}

	// Types without a kind get no extension.
	if _, ext := NewDefinitionNamer(s).GetDefinitionName(metav1.ObjectMeta{}.OpenAPIModelName()); ext != nil {
		t.Errorf("ObjectMeta: extensions = %v, want none", ext)
	}
}
