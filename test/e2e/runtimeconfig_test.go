package e2e

import (
	"strings"
	"testing"
)

// TestStartRuntimeConfig: `gcp start --runtime-config` serves the APIs
// that are off by default, as `gcp apiserver --runtime-config` does.
func TestStartRuntimeConfig(t *testing.T) {
	t.Parallel()
	a := startAllInOne(t, t.TempDir(), "--runtime-config", "coordination.k8s.io/v1beta1=true,internal.apiserver.k8s.io/v1alpha1=true")
	out := a.kubectl("api-resources", "-o", "name")
	for _, r := range []string{"leasecandidates.coordination.k8s.io", "storageversions.internal.apiserver.k8s.io", "flowschemas.flowcontrol.apiserver.k8s.io"} {
		if !strings.Contains(out, r+"\n") {
			t.Errorf("%s not served:\n%s", r, out)
		}
	}
}
