package integration

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"

	"github.com/gcp-project/gcp/pkg/controlplane/controllers/namespace"
	"github.com/gcp-project/gcp/pkg/testserver"
)

// TestConversionWebhookDown: when a CRD's conversion webhook cannot be
// reached, reads that need a conversion fail naming the webhook and why
// it failed, not calling the stored objects corrupt; so do the
// conditions of a namespace whose deletion needs them.
func TestConversionWebhookDown(t *testing.T) {
	t.Parallel()
	s := startGeneric(t)
	runControllers(t, s, namespace.Descriptor())
	ctx := context.Background()

	hook := httptest.NewTLSServer(http.HandlerFunc(convertByRenaming))
	t.Cleanup(hook.Close)
	url := hook.URL + "/convert"
	preserve := &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptr.To(true)}}
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "gears.down.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "down.example.com", Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "gears", Kind: "Gear"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
				{Name: "v1", Served: true, Storage: true, Schema: preserve},
				{Name: "v2", Served: true, Schema: preserve},
			},
			Conversion: &apiextensionsv1.CustomResourceConversion{
				Strategy: apiextensionsv1.WebhookConverter,
				Webhook: &apiextensionsv1.WebhookConversion{
					ConversionReviewVersions: []string{"v1"},
					ClientConfig: &apiextensionsv1.WebhookClientConfig{
						URL:      &url,
						CABundle: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: hook.Certificate().Raw}),
					},
				},
			},
		},
	}
	if err := testserver.InstallCRDs(ctx, s.AdminConfig, 30*time.Second, crd); err != nil {
		t.Fatal(err)
	}
	const ns = "gears"
	createNamespace(t, s.Client, ns)
	dyn := dynamic.NewForConfigOrDie(s.AdminConfig)
	v1 := dyn.Resource(schema.GroupVersionResource{Group: "down.example.com", Version: "v1", Resource: "gears"}).Namespace(ns)
	v2 := dyn.Resource(schema.GroupVersionResource{Group: "down.example.com", Version: "v2", Resource: "gears"}).Namespace(ns)
	if _, err := v1.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "down.example.com/v1", "kind": "Gear", "metadata": map[string]any{"name": "g"},
	}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := v2.Get(ctx, "g", metav1.GetOptions{}); err != nil {
		t.Fatalf("reading v2 through the webhook while it is up: %v", err)
	}

	hook.Close()
	// An object written in the stored version needs no webhook; its
	// reads in the other version do.
	if _, err := v1.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "down.example.com/v1", "kind": "Gear", "metadata": map[string]any{"name": "g2"},
	}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	wantMessage := func(what string, err error) {
		t.Helper()
		if err == nil {
			t.Fatalf("%s with the conversion webhook down: no error", what)
		}
		msg := err.Error()
		t.Logf("%s: %d %s", what, statusCode(err), msg)
		if strings.Contains(msg, "corrupt") || !strings.Contains(msg, "conversion webhook") || !strings.Contains(msg, url) ||
			!strings.Contains(msg, "connection refused") {
			t.Fatalf("%s with the conversion webhook down: %q; want it to name the conversion webhook %s and the failure, not call the object corrupt", what, msg, url)
		}
		if code := statusCode(err); code < 500 {
			t.Fatalf("%s with the conversion webhook down: %d, want a 5xx (a server-side fault)", what, code)
		}
	}
	_, err := v2.Get(ctx, "g2", metav1.GetOptions{})
	wantMessage("get v2", err)
	_, err = v2.List(ctx, metav1.ListOptions{})
	wantMessage("list v2", err)

	// The namespace controller deletes through the preferred version, v2.
	if err := s.Client.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	var cond *corev1.NamespaceCondition
	nsEventually(t, 30*time.Second, "a namespace condition about the gears", func() (bool, error) {
		n, err := s.Client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for i, c := range n.Status.Conditions {
			if c.Status == corev1.ConditionTrue && strings.Contains(c.Message, "gears") {
				cond = &n.Status.Conditions[i]
				return true, nil
			}
		}
		return false, nil
	})
	t.Logf("namespace condition %s: %s", cond.Type, cond.Message)
	if strings.Contains(cond.Message, "corrupt") || !strings.Contains(cond.Message, url) {
		t.Fatalf("namespace condition %s: %q; want it to name the conversion webhook %s, not call the object corrupt", cond.Type, cond.Message, url)
	}
}

// convertByRenaming is a conversion webhook that only sets apiVersion.
func convertByRenaming(w http.ResponseWriter, r *http.Request) {
	var review apiextensionsv1.ConversionReview
	if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
		http.Error(w, "bad review", http.StatusBadRequest)
		return
	}
	resp := &apiextensionsv1.ConversionResponse{UID: review.Request.UID, Result: metav1.Status{Status: metav1.StatusSuccess}}
	for _, raw := range review.Request.Objects {
		var obj map[string]any
		_ = json.Unmarshal(raw.Raw, &obj)
		obj["apiVersion"] = review.Request.DesiredAPIVersion
		b, _ := json.Marshal(obj)
		resp.ConvertedObjects = append(resp.ConvertedObjects, runtime.RawExtension{Raw: b})
	}
	review.Response, review.Request = resp, nil
	_ = json.NewEncoder(w).Encode(review)
}

// statusCode is the HTTP status of a client's error, 0 if it has none.
func statusCode(err error) int {
	var s apierrors.APIStatus
	if errors.As(err, &s) {
		return int(s.Status().Code)
	}
	return 0
}
