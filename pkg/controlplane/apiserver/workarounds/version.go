package workarounds

import (
	"encoding/json"
	"net/http"

	"github.com/gcp-project/gcp/pkg/controlplane/version"
)

// WithVersion serves GET /version with the Kubernetes version of the k8s.io
// libraries gcp is built on. k8s.io/apiserver's own /version
// (routes.Version, pkg/server/routes/version.go) reads
// k8s.io/component-base/version's ldflags-only variables, which a plain
// `go build` or `go install` leaves at v0.0.0; kubectl's skew check and the
// e2e framework parse it. Upstream builds set the ldflags in their own
// scripts (hack/lib/version.sh), so there is no upstream issue: a library
// user has to do this. test/e2e TestKubectlWorkflow (`kubectl get --raw
// /version`) and pkg/controlplane/version's tests hold it.
func WithVersion(next http.Handler) http.Handler {
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
