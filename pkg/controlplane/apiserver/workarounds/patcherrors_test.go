package workarounds

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/mergepatch"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	"k8s.io/client-go/kubernetes/scheme"
)

// TestPatchInputErrorTable feeds WithPatchInputErrors every form of the
// messages in patchInputErrors, made by the upstream functions that make
// them and answered the way k8s.io/apiserver's handler answers an error
// that is not a status (500), and checks the 400 and its message; an
// unknown 500, a 500 for another method and a 4xx pass unchanged.
func TestPatchInputErrorTable(t *testing.T) {
	t.Parallel()
	codecs := serializer.NewCodecFactory(scheme.Scheme)
	ssa := fmt.Errorf("failed to create typed patch object (/v1, Kind=ConfigMap default/target): .data.k: expected string, got &value.valueUnstructured{Value:1}")
	cases := []struct {
		name     string
		method   string
		err      error
		wantCode int
	}{
		{"server-side apply: typed patch object", http.MethodPatch, ssa, http.StatusBadRequest},
		{"server-side apply: as an internal error", http.MethodPatch, apierrors.NewInternalError(ssa), http.StatusBadRequest},
		{"strategic merge: unknown directive", http.MethodPatch, mergepatch.ErrBadPatchType("bogus", map[string]interface{}{"$patch": "bogus"}), http.StatusBadRequest},
		{"strategic merge: directive of the wrong type", http.MethodPatch, mergepatch.ErrBadArgType([]interface{}{}, 5), http.StatusBadRequest},
		{"strategic merge: wrong kind", http.MethodPatch, mergepatch.ErrBadArgKind(map[string]interface{}{}, "s"), http.StatusBadRequest},
		{"strategic merge: invalid type", http.MethodPatch, strategicpatch.InvalidTypeError{Path: "data", Expected: "map", Actual: "string"}, http.StatusBadRequest},
		{"strategic merge: unknown field", http.MethodPatch, strategicpatch.FieldNotFoundError{Path: "spec", Field: "bogus"}, http.StatusBadRequest},
		{"an unknown 500 is left alone", http.MethodPatch, errors.New("etcd exploded"), http.StatusInternalServerError},
		{"a 500 that only contains a known message is left alone", http.MethodPatch, errors.New("conversion: unknown patch type"), http.StatusInternalServerError},
		{"another method's 500 is left alone", http.MethodPut, mergepatch.ErrBadPatchType("bogus", nil), http.StatusInternalServerError},
		{"a 4xx is left alone", http.MethodPatch, apierrors.NewConflict(schema.GroupResource{Resource: "configmaps"}, "target", errors.New("unknown patch type")), http.StatusConflict},
	}
	if len(patchInputErrors) != 5 {
		t.Fatalf("patchInputErrors has %d entries; give each new one a case here", len(patchInputErrors))
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			upstream := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				responsewriters.ErrorNegotiated(c.err, codecs, schema.GroupVersion{Version: "v1"}, w, r)
			})
			rec := httptest.NewRecorder()
			req := httptest.NewRequest(c.method, "/api/v1/namespaces/default/configmaps/target", strings.NewReader("{}"))
			req.Header.Set("Accept", "application/json")
			WithPatchInputErrors(upstream, codecs).ServeHTTP(rec, req)
			if rec.Code != c.wantCode {
				t.Fatalf("got %d, want %d: %s", rec.Code, c.wantCode, rec.Body)
			}
			var status metav1.Status
			if err := json.Unmarshal(rec.Body.Bytes(), &status); err != nil {
				t.Fatalf("body is not a Status: %v: %s", err, rec.Body)
			}
			if want := responsewriters.ErrorToAPIStatus(c.err).Message; status.Message != want {
				t.Errorf("message %q, want upstream's %q", status.Message, want)
			}
			if c.wantCode == http.StatusBadRequest && status.Reason != metav1.StatusReasonBadRequest {
				t.Errorf("reason %q, want BadRequest", status.Reason)
			}
		})
	}
}
