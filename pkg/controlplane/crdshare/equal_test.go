package crdshare

import (
	"reflect"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// TestEqualNodeSeesEveryField sets each field of a schema in turn (a
// pointer to a zero value, an empty but not nil slice or map, or a non-zero
// value) and checks that equalNode tells it from the unset schema, so a
// field added to JSONSchemaProps upstream cannot be shared by mistake.
func TestEqualNodeSeesEveryField(t *testing.T) {
	typ := reflect.TypeFor[apiextensionsv1.JSONSchemaProps]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		var set apiextensionsv1.JSONSchemaProps
		v := reflect.ValueOf(&set).Elem().Field(i)
		switch f.Type.Kind() {
		case reflect.String:
			v.SetString("x")
		case reflect.Bool:
			v.SetBool(true)
		case reflect.Pointer:
			v.Set(reflect.New(f.Type.Elem()))
		case reflect.Slice:
			v.Set(reflect.MakeSlice(f.Type, 0, 0))
		case reflect.Map:
			v.Set(reflect.MakeMap(f.Type))
		default:
			t.Fatalf("field %s: kind %s is not handled by this test", f.Name, f.Type.Kind())
		}
		var unset apiextensionsv1.JSONSchemaProps
		if equalNode(&unset, &set) || equalNode(&set, &unset) {
			t.Errorf("equalNode does not tell a schema with %s set from one without", f.Name)
		}
		same := set
		if !equalNode(&set, &same) {
			t.Errorf("equalNode: a copy of a schema with %s set is not equal to it", f.Name)
		}
	}
}
