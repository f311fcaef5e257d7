package guards

import (
	"context"
	"fmt"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/gcp-project/gcp/pkg/controlplane/nesting"
)

// TestTooWide: an object wider than nesting.Width allows is refused when it
// is created, or when it replaces a narrower one, but not when it replaces
// one at least as wide (stored before the limit), so that one can be
// written, and shrunk.
func TestTooWide(t *testing.T) {
	configMap := func(keys int) *corev1.ConfigMap {
		cm := &corev1.ConfigMap{Data: map[string]string{}}
		for i := range keys {
			cm.Data[fmt.Sprintf("k%06d", i)] = ""
		}
		return cm
	}
	at, past, further := configMap(nesting.Width), configMap(nesting.Width+1), configMap(nesting.Width+2)
	for _, tt := range []struct {
		name     string
		obj, old runtime.Object
		want     bool
	}{
		{"created at the width", at, nil, false},
		{"created past it", past, nil, true},
		{"grown past it", past, at, true},
		{"grown further past it", further, past, true},
		{"kept as wide", past, past, false},
		{"shrunk, still past it", past, further, false},
	} {
		if got := tooWide(tt.obj, tt.old); got != tt.want {
			t.Errorf("%s: got %v, want %v", tt.name, got, tt.want)
		}
	}
}

// A CRD nesting deeper than the limit is refused when its spec is written,
// not by its status subresource, which cannot change the spec.
func TestCRDDepthOnlyWhereTheSpecIsWritten(t *testing.T) {
	deep := apiextensionsv1.JSONSchemaProps{Type: "string"}
	for range 12 {
		deep = apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"a": deep}}
	}
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "deeps.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
			{Name: "v1", Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &deep}},
		}},
	}
	kind := apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition")
	resource := apiextensionsv1.SchemeGroupVersion.WithResource("customresourcedefinitions")
	g := guardedAdmission{chain: admission.NewChainHandler(), limit: 10}
	for _, c := range []struct {
		op          admission.Operation
		subresource string
		refused     bool
	}{
		{admission.Create, "", true},
		{admission.Update, "", true},
		{admission.Update, "status", false},
	} {
		a := admission.NewAttributesRecord(crd, crd, kind, "", crd.Name, resource, c.subresource, c.op, nil, false, nil)
		if err := g.Validate(context.Background(), a, nil); (err != nil) != c.refused {
			t.Errorf("%s of %q: %v, refused: want %v", c.op, c.subresource, err, c.refused)
		}
	}
}
