package integration

import (
	"net/http"
	"strings"
	"testing"
)

// TestBodyResourceVersionIsAClientError: a resourceVersion in an update's
// or a patch's body that is not a number is 400 naming
// metadata.resourceVersion for every storage the server builds (native,
// custom resources, CRDs, APIServices); k8s.io/apiserver's Store.Update
// passes the parse error on as a 500. It holds the storage-side
// workaround in pkg/controlplane/apiserver/workarounds/bodyresourceversion.go.
func TestBodyResourceVersionIsAClientError(t *testing.T) {
	t.Parallel()
	s := startGeneric(t)
	widget := createTypedCRD(t, s)
	if code, body := rawRequest(t, s.AdminConfig, http.MethodPost, widget, "application/json",
		[]byte(`{"apiVersion":"patchinput.example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"size":1}}`)); code != http.StatusCreated {
		t.Fatalf("create widget: %d %s", code, body)
	}
	const merge = "application/merge-patch+json"
	const badRV = `{"metadata":{"resourceVersion":"x"}}`
	for _, c := range []struct{ method, path, contentType, body string }{
		{http.MethodPatch, "/api/v1/namespaces/default", merge, badRV},
		{http.MethodPut, widget + "/w", "application/json", `{"apiVersion":"patchinput.example.com/v1","kind":"Widget","metadata":{"name":"w","resourceVersion":"x"},"spec":{"size":2}}`},
		{http.MethodPatch, widget + "/w", merge, badRV},
		{http.MethodPatch, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.patchinput.example.com", merge, badRV},
		{http.MethodPatch, "/apis/apiregistration.k8s.io/v1/apiservices/v1.", merge, badRV},
	} {
		code, body := rawRequest(t, s.AdminConfig, c.method, c.path, c.contentType, []byte(c.body))
		if code != http.StatusBadRequest || !strings.Contains(body, "metadata.resourceVersion") {
			t.Errorf("%s %s: want 400 naming metadata.resourceVersion, got %d: %.300s", c.method, c.path, code, body)
		}
	}
}
