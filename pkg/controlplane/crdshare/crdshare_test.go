package crdshare

import (
	"fmt"
	"math/rand"
	"reflect"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

// randomSchema builds a schema from a small vocabulary, so that a few
// hundred of them repeat subtrees as real CRD sets do, and so that nil and
// empty maps and slices, pointers to zero values and every kind of child
// occur.
func randomSchema(r *rand.Rand, depth int) apiextensionsv1.JSONSchemaProps {
	words := []string{"", "a", "The name of the thing.", "object", "string"}
	p := apiextensionsv1.JSONSchemaProps{
		Description: words[r.Intn(len(words))],
		Type:        []string{"object", "string", "array", "integer"}[r.Intn(4)],
	}
	switch r.Intn(8) {
	case 0:
		p.Properties = map[string]apiextensionsv1.JSONSchemaProps{} // empty, not nil
	case 1:
		p.Required = []string{}
	case 2:
		p.Maximum = ptr.To(0.0)
	case 3:
		p.XPreserveUnknownFields = ptr.To(r.Intn(2) == 0)
	case 4:
		p.Enum = []apiextensionsv1.JSON{{Raw: []byte(`"x"`)}}
	case 5:
		p.XValidations = apiextensionsv1.ValidationRules{{Rule: "self.a > 0", Reason: ptr.To([]apiextensionsv1.FieldValueErrorReason{apiextensionsv1.FieldValueInvalid, apiextensionsv1.FieldValueForbidden}[r.Intn(2)])}}
	case 6:
		p.Default = &apiextensionsv1.JSON{Raw: []byte(`{}`)}
	}
	if depth == 0 {
		return p
	}
	switch r.Intn(6) {
	case 0, 1, 2:
		n := r.Intn(4)
		if n > 0 || r.Intn(2) == 0 {
			p.Properties = map[string]apiextensionsv1.JSONSchemaProps{}
		}
		for i := range n {
			p.Properties[fmt.Sprint("f", i)] = randomSchema(r, depth-1)
		}
	case 3:
		c := randomSchema(r, depth-1)
		p.Items = &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &c}
	case 4:
		c := randomSchema(r, depth-1)
		p.AdditionalProperties = &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true, Schema: &c}
	case 5:
		p.AllOf = []apiextensionsv1.JSONSchemaProps{randomSchema(r, depth-1), randomSchema(r, depth-1)}
		c := randomSchema(r, depth-1)
		p.Not = &c
	}
	return p
}

func randomCRD(r *rand.Rand, i int) *apiextensionsv1.CustomResourceDefinition {
	crd := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("crd", i)}}
	for _, v := range []string{"v1", "v2"} {
		root := randomSchema(r, 4)
		crd.Spec.Versions = append(crd.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{
			Name: v, Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &root},
		})
	}
	crd.Spec.Versions = append(crd.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{Name: "v3"})
	return crd
}

// TestTransformKeepsEveryCRDAsDecoded checks that a CRD reads exactly as
// before it was shared (reflect.DeepEqual tells nil from empty), and that
// the CRDs held earlier are not changed by later arrivals.
func TestTransformKeepsEveryCRDAsDecoded(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	var store []interface{}
	s := New(func() []interface{} { return store })
	var want []*apiextensionsv1.CustomResourceDefinition
	for i := range 500 {
		crd := randomCRD(r, i)
		want = append(want, crd.DeepCopy())
		got, err := s.Transform(crd)
		if err != nil {
			t.Fatal(err)
		}
		store = append(store, got)
	}
	for i, obj := range store {
		if !reflect.DeepEqual(obj, want[i]) {
			t.Fatalf("%s differs from what was decoded", want[i].Name)
		}
	}
}

// TestTransformShares checks that equal subtrees of different CRDs end up
// the same memory, and that unequal ones do not.
func TestTransformShares(t *testing.T) {
	s := New(func() []interface{} { return nil })
	leaf := func(d string) apiextensionsv1.JSONSchemaProps {
		return apiextensionsv1.JSONSchemaProps{Type: "string", Description: d}
	}
	crd := func(name string, props map[string]apiextensionsv1.JSONSchemaProps) *apiextensionsv1.CustomResourceDefinition {
		return &apiextensionsv1.CustomResourceDefinition{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: apiextensionsv1.CustomResourceDefinitionSpec{Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": {Type: "object", Properties: props}},
				}},
			}}},
		}
	}
	a, _ := s.Transform(crd("a", map[string]apiextensionsv1.JSONSchemaProps{"x": leaf("the x")}))
	b, _ := s.Transform(crd("b", map[string]apiextensionsv1.JSONSchemaProps{"x": leaf("the x")}))
	c, _ := s.Transform(crd("c", map[string]apiextensionsv1.JSONSchemaProps{"x": leaf("the y")}))
	empty, _ := s.Transform(crd("d", map[string]apiextensionsv1.JSONSchemaProps{}))
	none, _ := s.Transform(crd("e", nil))
	spec := func(obj interface{}) map[string]apiextensionsv1.JSONSchemaProps {
		return obj.(*apiextensionsv1.CustomResourceDefinition).Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties
	}
	root := func(obj interface{}) *apiextensionsv1.JSONSchemaProps {
		return obj.(*apiextensionsv1.CustomResourceDefinition).Spec.Versions[0].Schema.OpenAPIV3Schema
	}
	if root(a) != root(b) {
		t.Error("two equal schemas are not shared")
	}
	if root(a) == root(c) || sameMap(spec(a), spec(c)) {
		t.Error("two different schemas are shared")
	}
	if spec(empty) == nil || spec(none) != nil {
		t.Error("an empty map became nil or a nil one empty")
	}
	if _, err := s.Transform(cache.DeletedFinalStateUnknown{Key: "a", Obj: a}); err != nil {
		t.Errorf("a tombstone: %v", err)
	}
}

// TestSharerForgetsWhatNoCRDHolds checks that CRDs created and deleted
// without end leave the Sharer's size bounded by what the store holds, and
// that relearning leaves the store's objects untouched.
func TestSharerForgetsWhatNoCRDHolds(t *testing.T) {
	r := rand.New(rand.NewSource(2))
	var store []interface{}
	s := New(func() []interface{} { return store })
	most := 0
	for i := range 3000 {
		crd := randomCRD(r, i)
		got, _ := s.Transform(crd)
		store = append(store, got)
		if len(store) > 10 { // the store holds the last ten
			store = store[1:]
		}
		most = max(most, s.size())
	}
	before := make([]*apiextensionsv1.CustomResourceDefinition, len(store))
	for i, obj := range store {
		before[i] = obj.(*apiextensionsv1.CustomResourceDefinition).DeepCopy()
	}
	s.mu.Lock()
	s.relearn()
	s.mu.Unlock()
	for i, obj := range store {
		if !reflect.DeepEqual(obj, before[i]) {
			t.Fatal("relearning changed a stored CRD")
		}
	}
	if limit := 2*s.learned + minForget; most > limit+2000 {
		t.Errorf("the Sharer held %d entries for 10 CRDs (%d after relearning)", most, s.learned)
	}
}

// TestTransformSharesWhateverAMapsOrder: equal schemas whose maps iterate
// in different orders (Go's maps start each iteration somewhere else) are
// shared, here through the dependencies, which hash like Properties.
func TestTransformSharesWhateverAMapsOrder(t *testing.T) {
	s := New(func() []interface{} { return nil })
	withDependencies := func(name string) *apiextensionsv1.CustomResourceDefinition {
		deps := apiextensionsv1.JSONSchemaDependencies{}
		for _, k := range []string{"a", "b", "c", "d", "e"} {
			deps[k] = apiextensionsv1.JSONSchemaPropsOrStringArray{Schema: &apiextensionsv1.JSONSchemaProps{Type: "string", Description: k}}
		}
		return &apiextensionsv1.CustomResourceDefinition{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: apiextensionsv1.CustomResourceDefinitionSpec{Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", Dependencies: deps,
				}},
			}}},
		}
	}
	root := func(obj interface{}) *apiextensionsv1.JSONSchemaProps {
		return obj.(*apiextensionsv1.CustomResourceDefinition).Spec.Versions[0].Schema.OpenAPIV3Schema
	}
	first, _ := s.Transform(withDependencies("first"))
	for i := range 20 {
		if next, _ := s.Transform(withDependencies(fmt.Sprint("next", i))); root(next) != root(first) {
			t.Fatalf("equal schema number %d was not shared", i+1)
		}
	}
}
