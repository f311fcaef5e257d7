package integration

import (
	"encoding/json"
	"net/http"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestResourceVersionAheadOfTheStore holds the one client input answered
// with a 5xx: a resourceVersion the store has not reached is waited for
// (3 s in k8s.io/apiserver's watch cache) and then answered 504 with the
// ResourceVersionTooLarge cause and a Retry-After, as Kubernetes does, so
// that client-go retries, and its reflector relists
// (k8s.io/apiserver/pkg/storage.IsTooLargeResourceVersion).
// docs/security.md names this exception.
func TestResourceVersionAheadOfTheStore(t *testing.T) {
	t.Parallel()
	s := startGeneric(t)
	// Raw requests: client-go would retry the 504 ten times.
	for _, path := range []string{
		"/api/v1/namespaces/default/configmaps?resourceVersion=999999999999&resourceVersionMatch=NotOlderThan",
		"/api/v1/namespaces/default?resourceVersion=999999999999",
	} {
		code, body := rawRequest(t, s.AdminConfig, http.MethodGet, path, "", nil)
		var status metav1.Status
		if err := json.Unmarshal([]byte(body), &status); err != nil {
			t.Fatalf("GET %s: got %d %q: %v", path, code, body, err)
		}
		tooLarge := status.Details != nil && status.Details.RetryAfterSeconds > 0 && len(status.Details.Causes) > 0 && status.Details.Causes[0].Type == metav1.CauseTypeResourceVersionTooLarge
		if code != http.StatusGatewayTimeout || status.Code != http.StatusGatewayTimeout || !tooLarge {
			t.Errorf("GET %s: got %d %s, want 504 with a retry-after and cause %s", path, code, body, metav1.CauseTypeResourceVersionTooLarge)
		}
	}
}
