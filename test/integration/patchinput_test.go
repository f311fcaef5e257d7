package integration

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gcp-project/gcp/pkg/testserver"
	"github.com/gcp-project/gcp/test/poll"
)

// TestPatchInputIsAClientError: patches that cannot be applied because of
// what the client sent are 400 naming the field (k8s.io/apiserver answers
// 500), on native and custom resources, and change nothing.
func TestPatchInputIsAClientError(t *testing.T) {
	t.Parallel()
	s := startGeneric(t)
	ctx := context.Background()
	if _, err := s.Client.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "target"}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	widget := createTypedCRD(t, s)
	code, body := rawRequest(t, s.AdminConfig, http.MethodPost, widget, "application/json",
		[]byte(`{"apiVersion":"patchinput.example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"size":1}}`))
	if code != http.StatusCreated {
		t.Fatalf("create widget: %d %s", code, body)
	}

	const cm = "/api/v1/namespaces/default/configmaps/target"
	const apply = "application/apply-patch+yaml"
	const smp = "application/strategic-merge-patch+json"
	for _, tc := range []struct {
		name, path, contentType, body, want string
	}{
		{"apply: wrong type", cm + "?fieldManager=t", apply, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: target}\ndata: {k: 1}\n", ".data.k"},
		{"apply: unknown field", cm + "?fieldManager=t", apply, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: target}\nbogusTop: 1\n", ".bogusTop"},
		{"apply to a custom resource: wrong type", widget + "/w?fieldManager=t", apply,
			"apiVersion: patchinput.example.com/v1\nkind: Widget\nmetadata: {name: w}\nspec: {size: big}\n", ".spec.size"},
		{"strategic merge: unknown directive", cm, smp, `{"$patch":"bogus"}`, "unknown patch type"},
		{"strategic merge: merge directive on a map", cm, smp, `{"$patch":"merge"}`, "unknown patch type"},
		{"strategic merge: directive of the wrong type", cm, smp, `{"metadata":{"$setElementOrder/finalizers":5}}`, "expected a []interface {}"},
	} {
		code, body := rawRequest(t, s.AdminConfig, http.MethodPatch, tc.path, tc.contentType, []byte(tc.body))
		if code != http.StatusBadRequest || !strings.Contains(body, tc.want) {
			t.Errorf("%s: want 400 naming %q, got %d: %.300s", tc.name, tc.want, code, body)
		}
	}
	got, err := s.Client.CoreV1().ConfigMaps("default").Get(ctx, "target", metav1.GetOptions{})
	if err != nil || got.Data["k"] != "v" || len(got.Data) != 1 {
		t.Fatalf("configmap after rejected patches: %v, %v", got.Data, err)
	}
	// A good patch still works.
	if code, body := rawRequest(t, s.AdminConfig, http.MethodPatch, cm, smp, []byte(`{"data":{"k2":"v2"}}`)); code != http.StatusOK {
		t.Fatalf("valid patch: %d %s", code, body)
	}
}

// createTypedCRD creates widgets.patchinput.example.com with an integer
// spec.size, waits until it serves, and returns the widgets' collection
// path in default.
func createTypedCRD(t *testing.T, s *testserver.Server) string {
	t.Helper()
	ctx := context.Background()
	client := apiextensionsclient.NewForConfigOrDie(s.AdminConfig)
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.patchinput.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "patchinput.example.com",
			Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Kind: "Widget"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"size": {Type: "integer"}}},
					},
				}},
			}},
		},
	}
	if _, err := client.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	path := "/apis/patchinput.example.com/v1/namespaces/default/widgets"
	poll.Until(t, 100*time.Millisecond, 30*time.Second, func() error {
		if code, _ := rawRequest(t, s.AdminConfig, http.MethodGet, path, "", nil); code != http.StatusOK {
			return fmt.Errorf("widgets not served: %d", code)
		}
		return nil
	})
	return path
}
