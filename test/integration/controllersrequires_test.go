package integration

import (
	"strings"
	"testing"

	"github.com/gcp-project/gcp/pkg/controlplane/apiserver/options"
	"github.com/gcp-project/gcp/pkg/controlplane/controllers/clusterroleaggregation"
	"github.com/gcp-project/gcp/pkg/controlplane/controllers/csrcleaner"
	"github.com/gcp-project/gcp/pkg/controlplane/controllers/csrsigning"
	"github.com/gcp-project/gcp/pkg/layering"
	"github.com/gcp-project/gcp/pkg/testserver"
)

// TestControllersOfDisabledGroupNotStarted: with certificates.k8s.io turned
// off by --runtime-config, the CSR controllers (Descriptor.Requires) are
// not started, each saying so in one line, instead of their informers
// failing to watch for ever and keeping the controllers from syncing;
// the other controllers run.
func TestControllersOfDisabledGroupNotStarted(t *testing.T) {
	t.Parallel()
	log := &syncBuffer{}
	testserver.Start(t, testserver.Options{
		Stack:       layering.Generic(),
		Controllers: []string{"*"},
		LogOutput:   log,
		APIServer: func(o *options.Options) {
			o.APIEnablement.RuntimeConfig["certificates.k8s.io/v1"] = "false"
		},
	})
	lines := strings.Split(log.String(), "\n")
	for _, name := range []string{csrcleaner.Name, csrsigning.Name} {
		n := 0
		for _, line := range lines {
			if strings.Contains(line, "Controller not started") && strings.Contains(line, `controller="`+name+`"`) {
				n++
				if !strings.Contains(line, "certificatesigningrequests.certificates.k8s.io/v1") {
					t.Errorf("line %q does not name the missing resource", line)
				}
			}
		}
		if n != 1 {
			t.Errorf("%d lines say %s was not started, want 1", n, name)
		}
	}
	for _, line := range lines {
		if strings.Contains(line, "Failed to watch") && strings.Contains(line, "CertificateSigningRequest") {
			t.Errorf("a controller watches CSRs: %s", line)
		}
		if strings.Contains(line, "Controller not started") && strings.Contains(line, clusterroleaggregation.Name) {
			t.Errorf("a controller of a served group was not started: %s", line)
		}
	}
}
