package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/gcp-project/gcp/pkg/testserver"
	"github.com/gcp-project/gcp/test/poll"
)

// twinCRD is a cluster-scoped CRD Twin in group whose schema is the same
// for every group: a required size of at most 10 that must not be 7 (a CEL
// rule), and a name defaulted to "plain". Twins in two groups are what
// crdshare makes share one schema in the server's informer.
func twinCRD(group string) *apiextensionsv1.CustomResourceDefinition {
	spec := apiextensionsv1.JSONSchemaProps{
		Type: "object", Description: "What the twin wants.", Required: []string{"size"},
		Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"size": {Type: "integer", Description: "How big.", Maximum: ptrTo(10.0)},
			"name": {Type: "string", Default: &apiextensionsv1.JSON{Raw: []byte(`"plain"`)}},
		},
		XValidations: apiextensionsv1.ValidationRules{{Rule: "self.size != 7", Message: "not seven"}},
	}
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "twins." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group,
			Scope: apiextensionsv1.ClusterScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "twins", Kind: "Twin"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": spec},
				}},
			}},
		},
	}
}

// createTwin creates a Twin of the given size and returns it, or the error.
func createTwin(dyn dynamic.Interface, group, name string, size int) (*unstructured.Unstructured, error) {
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": group + "/v1", "kind": "Twin",
		"metadata": map[string]any{"name": name},
		"spec":     map[string]any{"size": int64(size)},
	}}
	gvr := schema.GroupVersionResource{Group: group, Version: "v1", Resource: "twins"}
	return dyn.Resource(gvr).Create(context.Background(), obj, metav1.CreateOptions{})
}

// wantInvalid checks that err is a 422 whose message has every want.
func wantInvalid(t *testing.T, what string, err error, want ...string) {
	t.Helper()
	if !apierrors.IsInvalid(err) {
		t.Fatalf("%s: got %v, want a 422", what, err)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Fatalf("%s: %q does not say %q", what, err, w)
		}
	}
}

// TestTwinCRDsStayApartWhenOneChanges: two CRDs with the same schema (which
// the server's CRD informer holds shared, crdshare) validate, default and
// run CEL alike; when one's schema changes and the other is deleted, each
// keeps answering by its own schema alone.
func TestTwinCRDsStayApartWhenOneChanges(t *testing.T) {
	t.Parallel()
	s := startGeneric(t)
	ctx := context.Background()
	a, b := twinCRD("twin-a.example.com"), twinCRD("twin-b.example.com")
	if err := testserver.InstallCRDs(ctx, s.AdminConfig, time.Minute, a, b); err != nil {
		t.Fatal(err)
	}
	dyn := dynamic.NewForConfigOrDie(s.AdminConfig)
	for _, group := range []string{a.Spec.Group, b.Spec.Group} {
		_, err := createTwin(dyn, group, "big", 11)
		wantInvalid(t, group+" size 11", err, "spec.size", "less than or equal to 10")
		_, err = createTwin(dyn, group, "seven", 7)
		wantInvalid(t, group+" size 7", err, "spec", "not seven")
		got, err := createTwin(dyn, group, "small", 3)
		if err != nil {
			t.Fatalf("%s size 3: %v", group, err)
		}
		if name, _, _ := unstructured.NestedString(got.Object, "spec", "name"); name != "plain" {
			t.Fatalf("%s: spec.name defaulted to %q, want plain", group, name)
		}
	}

	// B's size may now reach 100 and its name defaults to fancy.
	crds := apiextensionsclient.NewForConfigOrDie(s.AdminConfig).ApiextensionsV1().CustomResourceDefinitions()
	current, err := crds.Get(ctx, b.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	spec := current.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
	spec.Properties["size"] = apiextensionsv1.JSONSchemaProps{Type: "integer", Description: "How big.", Maximum: ptrTo(100.0)}
	spec.Properties["name"] = apiextensionsv1.JSONSchemaProps{Type: "string", Default: &apiextensionsv1.JSON{Raw: []byte(`"fancy"`)}}
	if _, err := crds.Update(ctx, current, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	i := 0
	poll.Until(t, 100*time.Millisecond, 30*time.Second, func() error {
		i++
		got, err := createTwin(dyn, b.Spec.Group, fmt.Sprint("bigger-", i), 50)
		if err != nil {
			return err
		}
		if name, _, _ := unstructured.NestedString(got.Object, "spec", "name"); name != "fancy" {
			return fmt.Errorf("spec.name defaulted to %q, want fancy", name)
		}
		return nil
	})

	// A is as it was, while B exists and once B is gone.
	checkA := func(when string) {
		t.Helper()
		_, err := createTwin(dyn, a.Spec.Group, "bigger", 50)
		wantInvalid(t, "A's size 50 "+when, err, "spec.size", "less than or equal to 10")
		_, err = createTwin(dyn, a.Spec.Group, "seven", 7)
		wantInvalid(t, "A's size 7 "+when, err, "not seven")
		got, err := createTwin(dyn, a.Spec.Group, "small-"+strings.ToLower(strings.ReplaceAll(when, " ", "-")), 4)
		if err != nil {
			t.Fatalf("A's size 4 %s: %v", when, err)
		}
		if name, _, _ := unstructured.NestedString(got.Object, "spec", "name"); name != "plain" {
			t.Fatalf("A %s: spec.name defaulted to %q, want plain", when, name)
		}
	}
	checkA("after B changed")
	if err := crds.Delete(ctx, b.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 100*time.Millisecond, 30*time.Second, func() error {
		if _, err := crds.Get(ctx, b.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("B not gone yet: %v", err)
		}
		return nil
	})
	checkA("after B went")
}
