package apiserver

import (
	"encoding/json"
	"net/http"

	"github.com/gcp-project/gcp/pkg/controlplane/version"
)

// withVersion serves GET /version with the Kubernetes version of the k8s.io
// libraries gcp is built on. k8s.io/apiserver's own /version reads
// k8s.io/component-base's ldflags-only variables, which a plain `go build`
// leaves at v0.0.0; kubectl's skew check and the e2e framework parse it.
func withVersion(next http.Handler) http.Handler {
	body, err := json.MarshalIndent(version.Get(), "", "  ")
	if err != nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/version" && r.URL.Path != "/version/" || r.Method != http.MethodGet {
			next.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(body)
	})
}
