package nesting

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// keysOf is a map of n keys.
func keysOf(n int) map[string]string {
	m := make(map[string]string, n)
	for i := range n {
		m[fmt.Sprintf("k%06d", i)] = ""
	}
	return m
}

// TestObjectLoad: the load of a typed object is its maps' lengths squared
// and summed, wherever they are; of an unstructured one, its objects'
// members, managed fields not counted.
func TestObjectLoad(t *testing.T) {
	type inner struct{ M map[string]int }
	type embedded struct{ E map[string]int }
	type private struct{ m map[string]int }
	type node struct {
		Next *node
		M    map[string]int
	}
	type holder struct {
		embedded
		Items []inner
		Any   any
		Ptr   *inner
		P     private
		N     *node
	}
	schema := apiextensionsv1.JSONSchemaProps{Properties: map[string]apiextensionsv1.JSONSchemaProps{
		"a": {Properties: map[string]apiextensionsv1.JSONSchemaProps{"x": {}, "y": {}, "z": {}}},
		"b": {},
	}}
	for _, tt := range []struct {
		name string
		obj  any
		want int
	}{
		{"a ConfigMap", &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Labels: keysOf(2), Annotations: keysOf(3),
				ManagedFields: []metav1.ManagedFieldsEntry{{FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:data":{"f:k000000":{}}}`)}}}},
			Data: keysOf(100), BinaryData: map[string][]byte{"b": nil},
		}, 4 + 9 + 100*100 + 1},
		{"a Secret", &corev1.Secret{Data: map[string][]byte{"a": nil}, StringData: keysOf(5)}, 1 + 25},
		{"maps in lists, pointers, interfaces and embedded structs", &holder{
			embedded: embedded{E: map[string]int{"a": 1, "b": 2}},
			Items:    []inner{{M: map[string]int{"a": 1}}, {M: map[string]int{"a": 1, "b": 2, "c": 3}}},
			Any:      map[string]any{"a": map[string]any{"b": 1, "c": 2}},
			Ptr:      &inner{M: map[string]int{"a": 1}},
			P:        private{m: map[string]int{"a": 1, "b": 2}},
			N:        &node{Next: &node{M: map[string]int{"a": 1, "b": 2}}},
		}, 4 + 1 + 9 + 1 + 4 + 1 + 4},
		{"a CRD's schema, maps within maps", &apiextensionsv1.CustomResourceDefinition{Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &schema}}},
		}}, 4 + 9},
		{"unstructured", &unstructured{map[string]any{
			"metadata": map[string]any{"name": "a", "labels": map[string]any{"a": "b"}, "managedFields": []any{map[string]any{"fieldsV1": map[string]any{"f:x": map[string]any{}}}}},
			"x":        map[string]any{"a": []any{map[string]any{"b": 1, "c": 2}}},
		}}, 4 + 9 + 1 + 1 + 4},
		{"nothing", (*corev1.ConfigMap)(nil), 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := ObjectLoad(tt.obj); got != tt.want {
				t.Errorf("got %d, want %d", got, tt.want)
			}
		})
	}
}

// BenchmarkObjectLoad is what measuring the object a write makes adds to
// each write: an ordinary ConfigMap (a few keys, labels and annotations,
// managed fields), one at the width, and, for comparison, the conversion
// to unstructured that a walk of its JSON form would need first.
//
//	go test ./pkg/controlplane/nesting -run '^$' -bench ObjectLoad
func BenchmarkObjectLoad(b *testing.B) {
	ordinary := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: "default", Labels: keysOf(3), Annotations: keysOf(2),
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate,
				FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:data":{".":{},"f:a":{},"f:b":{}}}`)}}}},
		Data: keysOf(10),
	}
	wide := ordinary.DeepCopy()
	wide.Data = keysOf(Width - 10)
	for _, bc := range []struct {
		name string
		obj  runtime.Object
	}{{"configmap", ordinary}, {"configmap-at-width", wide}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if ObjectLoad(bc.obj) > Width*Width {
					b.Fatal("too wide")
				}
			}
		})
	}
	for _, bc := range []struct {
		name string
		obj  runtime.Object
	}{{"configmap-keys", ordinary}, {"configmap-at-width-keys", wide}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if ObjectKey(bc.obj) > KeyLength {
					b.Fatal("too long")
				}
			}
		})
	}
	b.Run("configmap-to-unstructured", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := runtime.DefaultUnstructuredConverter.ToUnstructured(ordinary); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestObjectKey: the longest key of any map of an object, typed or not,
// managed fields not counted.
func TestObjectKey(t *testing.T) {
	type named string
	type embedded struct{ E map[named]int }
	type hidden struct{ H map[string]int }
	type holder struct {
		embedded
		hidden
		M   map[string]map[string]int
		Int map[int]string
	}
	for _, tt := range []struct {
		name string
		obj  any
		want int
	}{
		{"a ConfigMap's data", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"abc": ""}}, Data: map[string]string{"abcdef": ""}}, 6},
		{"a Secret's data", &corev1.Secret{Data: map[string][]byte{"abcdefg": nil}}, 7},
		{"a label", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"abcd": ""}}}, 4},
		{"other maps", &holder{
			embedded: embedded{E: map[named]int{"abcdefgh": 1}},
			hidden:   hidden{H: map[string]int{"abcdefghijk": 1}},
			M:        map[string]map[string]int{"a": {"abcdefghi": 1}},
			Int:      map[int]string{1234567890: ""},
		}, 11},
		{"unstructured", &unstructured{map[string]any{
			"metadata": map[string]any{"name": "a", "managedFields": []any{map[string]any{"fieldsV1": map[string]any{"f:abcdefghijklmnop": map[string]any{}}}}},
			"x":        []any{map[string]any{"abcdefghijklmno": 1}},
		}}, 15},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := ObjectKey(tt.obj); got != tt.want {
				t.Errorf("got %d, want %d", got, tt.want)
			}
		})
	}
}
