package main

import (
	"archive/tar"
	"bytes"
	"os/exec"
	"reflect"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/utils/ptr"
)

func crdYAML(group, plural string) string {
	return `---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: ` + plural + "." + group + `
spec:
  group: ` + group + `
  names: {kind: Thing, plural: ` + plural + `}
  scope: Namespaced
  versions:
  - name: v1alpha1
    served: true
    storage: false
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {size: {type: integer}}}
`
}

// TestReadCRDTarTakesTheFirstFilesByName: the YAML files of the stream,
// sorted by name, the first limit of them decoded, anything else skipped.
func TestReadCRDTarTakesTheFirstFilesByName(t *testing.T) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	add := func(name, body string) {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.WriteHeader(&tar.Header{Name: "./", Typeflag: tar.TypeDir, Mode: 0o755}); err != nil {
		t.Fatal(err)
	}
	add("./c.example.com_cs.yaml", crdYAML("c.example.com", "cs"))
	add("./README.md", "not a CRD")
	add("./a.example.com_as.yaml", crdYAML("a.example.com", "as"))
	add("./b.example.com_bs.yml", crdYAML("b.example.com", "bs"))
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	set, err := readCRDTar(&buf, 2)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, crd := range set.crds {
		names = append(names, crd.Name)
	}
	if want := []string{"as.a.example.com", "bs.b.example.com"}; !slices.Equal(names, want) {
		t.Errorf("CRDs %v, want %v", names, want)
	}
	if set.files != 3 {
		t.Errorf("%d files, want 3", set.files)
	}
	if want := int64(len(crdYAML("a.example.com", "as")) + len(crdYAML("b.example.com", "bs"))); set.yamlBytes != want {
		t.Errorf("%d bytes of YAML, want %d", set.yamlBytes, want)
	}
	crd := set.crds[0]
	if gvr := storageGVR(crd); gvr.String() != "a.example.com/v1, Resource=as" {
		t.Errorf("storage resource %v", gvr)
	}
	if keys := servedResources(set.crds); len(keys) != 4 || !keys["a.example.com/v1alpha1/as"] || !keys["b.example.com/v1/bs"] {
		t.Errorf("served resources %v", keys)
	}
}

// TestReadCRDSetReadsAnArchive reads one of the sets themselves.
func TestReadCRDSetReadsAnArchive(t *testing.T) {
	if _, err := exec.LookPath("xz"); err != nil {
		t.Skip("no xz here")
	}
	set, err := readCRDSet("crdsets/config-connector.tar.xz", 3)
	if err != nil {
		t.Fatal(err)
	}
	if set.name != "config-connector" || len(set.crds) != 3 || set.files != 613 {
		t.Fatalf("set %q: %d CRDs of %d files, want config-connector: 3 of 613", set.name, len(set.crds), set.files)
	}
	for _, crd := range set.crds {
		if !strings.HasSuffix(crd.Spec.Group, ".cnrm.cloud.google.com") || storageVersion(crd) == nil {
			t.Errorf("CRD %s: group %s", crd.Name, crd.Spec.Group)
		}
	}
}

func object(props map[string]apiextensionsv1.JSONSchemaProps, required ...string) apiextensionsv1.JSONSchemaProps {
	return apiextensionsv1.JSONSchemaProps{Type: "object", Properties: props, Required: required}
}

func arrayOf(items apiextensionsv1.JSONSchemaProps) apiextensionsv1.JSONSchemaProps {
	return apiextensionsv1.JSONSchemaProps{Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &items}}
}

// TestDeepestPath goes through arrays' items, not maps' values, and of
// equally deep paths takes the first by name.
func TestDeepestPath(t *testing.T) {
	str := apiextensionsv1.JSONSchemaProps{Type: "string"}
	s := object(map[string]apiextensionsv1.JSONSchemaProps{
		"metadata": {Type: "object"},
		"spec": object(map[string]apiextensionsv1.JSONSchemaProps{
			"b": arrayOf(object(map[string]apiextensionsv1.JSONSchemaProps{"x": object(map[string]apiextensionsv1.JSONSchemaProps{"y": str})})),
			"a": object(map[string]apiextensionsv1.JSONSchemaProps{"z": object(map[string]apiextensionsv1.JSONSchemaProps{"y": str})}),
			"labels": {Type: "object", AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Schema: ptr.To(object(map[string]apiextensionsv1.JSONSchemaProps{
				"p": object(map[string]apiextensionsv1.JSONSchemaProps{"q": object(map[string]apiextensionsv1.JSONSchemaProps{"r": str})}),
			}))}},
		}),
	})
	if got, want := deepestPath(&s), []string{"spec", "a", "z", "y"}; !slices.Equal(got, want) {
		t.Errorf("deepest path %v, want %v", got, want)
	}
	deeper := object(map[string]apiextensionsv1.JSONSchemaProps{"spec": object(map[string]apiextensionsv1.JSONSchemaProps{
		"list": arrayOf(arrayOf(object(map[string]apiextensionsv1.JSONSchemaProps{"a": object(map[string]apiextensionsv1.JSONSchemaProps{"b": object(map[string]apiextensionsv1.JSONSchemaProps{"c": str})})}))),
	})})
	crd := func(name string, schema apiextensionsv1.JSONSchemaProps) *apiextensionsv1.CustomResourceDefinition {
		return &apiextensionsv1.CustomResourceDefinition{Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: name, Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
			{Name: "v1", Served: true, Storage: true, Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &schema}},
		}}}
	}
	target := deepestField([]*apiextensionsv1.CustomResourceDefinition{crd("first", s), crd("second", deeper), crd("third", deeper)})
	if target.crd.Spec.Group != "second" || !slices.Equal(target.path, []string{"spec", "list", "a", "b", "c"}) {
		t.Errorf("deepest field %s %v, want the second CRD's spec.list.a.b.c", target.crd.Spec.Group, target.path)
	}
}

// TestMinimalObject fills in what is required, within bounds, and the
// field a Crossplane-style CEL rule asks has() of.
func TestMinimalObject(t *testing.T) {
	forProvider := object(map[string]apiextensionsv1.JSONSchemaProps{
		"location": {Type: "string"},
		"tier":     {Type: "string", Enum: []apiextensionsv1.JSON{{Raw: []byte(`"Basic"`)}, {Raw: []byte(`"Premium"`)}}},
		"count":    {Type: "integer", Minimum: ptr.To(2.5)},
		"tags":     arrayOf(apiextensionsv1.JSONSchemaProps{Type: "string", MinLength: ptr.To[int64](3)}),
		"names": func() apiextensionsv1.JSONSchemaProps {
			a := arrayOf(apiextensionsv1.JSONSchemaProps{Type: "string"})
			a.MinItems = ptr.To[int64](2)
			return a
		}(),
		"ref":      {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"name": {Type: "string"}, "external": {Type: "string"}}, OneOf: []apiextensionsv1.JSONSchemaProps{{Required: []string{"name"}}, {Required: []string{"external"}}}},
		"optional": {Type: "boolean"},
	}, "tier", "count", "names", "ref")
	spec := object(map[string]apiextensionsv1.JSONSchemaProps{"forProvider": forProvider, "initProvider": object(map[string]apiextensionsv1.JSONSchemaProps{"location": {Type: "string"}})}, "forProvider")
	spec.XValidations = apiextensionsv1.ValidationRules{{Rule: "!('*' in self.managementPolicies) || has(self.forProvider.location) || (has(self.initProvider) && has(self.initProvider.location))"}}
	root := object(map[string]apiextensionsv1.JSONSchemaProps{"spec": spec}, "spec")
	crd := &apiextensionsv1.CustomResourceDefinition{Spec: apiextensionsv1.CustomResourceDefinitionSpec{
		Group: "example.com", Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: "Thing"},
		Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true, Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &root}}},
	}}
	got := minimalObject(crd, "o", "ns")
	want := map[string]any{
		"apiVersion": "example.com/v1", "kind": "Thing", "metadata": map[string]any{"name": "o", "namespace": "ns"},
		"spec": map[string]any{"forProvider": map[string]any{
			"location": "x", "tier": "Basic", "count": int64(3), "names": []any{"x", "x"}, "ref": map[string]any{"name": "x"},
		}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("minimal object\n%v\nwant\n%v", got, want)
	}
}

func TestSpread(t *testing.T) {
	if got := spread(100, 4); !slices.Equal(got, []int{0, 25, 50, 75}) {
		t.Errorf("spread(100, 4) = %v", got)
	}
	if got := spread(3, 20); !slices.Equal(got, []int{0, 1, 2}) {
		t.Errorf("spread(3, 20) = %v", got)
	}
}

// TestListPicksTakesDifferentCRDs: the lists without a limit go to CRDs
// the kubectl lists did not touch.
func TestListPicksTakesDifferentCRDs(t *testing.T) {
	for _, n := range []int{100, 30, 10} {
		crds := make([]*apiextensionsv1.CustomResourceDefinition, n)
		for i := range crds {
			crds[i] = &apiextensionsv1.CustomResourceDefinition{}
		}
		kubectls, fulls := listPicks(crds)
		seen := map[*apiextensionsv1.CustomResourceDefinition]bool{}
		for _, crd := range append(kubectls, fulls...) {
			if seen[crd] {
				t.Fatalf("%d CRDs: one picked twice", n)
			}
			seen[crd] = true
		}
		if wantK, wantF := min(n, 20), min(n-min(n, 20), 20); len(kubectls) != wantK || len(fulls) != wantF {
			t.Errorf("%d CRDs: %d and %d picked, want %d and %d", n, len(kubectls), len(fulls), wantK, wantF)
		}
	}
}

func TestBiggestGroup(t *testing.T) {
	crd := func(group, version string) *apiextensionsv1.CustomResourceDefinition {
		return &apiextensionsv1.CustomResourceDefinition{Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: group,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: version, Served: true, Storage: true}}}}
	}
	g, v, n := biggestGroup([]*apiextensionsv1.CustomResourceDefinition{crd("b", "v1"), crd("a", "v1"), crd("b", "v1beta1"), crd("a", "v2"), crd("b", "v1beta1"), crd("a", "v2"), crd("c", "v1")})
	if g != "a" || v != "v2" || n != 3 {
		t.Errorf("biggest group %s/%s with %d CRDs, want a/v2 with 3 (a and b tie, a is first)", g, v, n)
	}
}

func TestRatio(t *testing.T) {
	for _, c := range []struct {
		g, u float64
		want string
	}{
		{1, 2, "0.50"}, {2.16, 0.023, "93.9"}, {99.6, 1, "100"}, {250, 2, "125"}, {1, 0, "–"}, {0, 1, "–"}, {-3, 4, "–"}, {9.996, 1, "10.0"},
	} {
		if got := ratio(c.g, c.u); got != c.want {
			t.Errorf("ratio(%v, %v) = %q, want %q", c.g, c.u, got, c.want)
		}
	}
}
