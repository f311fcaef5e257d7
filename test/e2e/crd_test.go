package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gcp-project/gcp/test/poll"
)

const widgetCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names:
    plural: widgets
    singular: widget
    kind: Widget
    shortNames: [wd]
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size:
                type: integer
                minimum: 1
`

// TestCustomResources: CRD create -> Established -> custom resource CRUD,
// validation by the CRD schema, then restart with every object kept.
func TestCustomResourcesAndRestart(t *testing.T) {
	t.Parallel()
	dataDir := t.TempDir()
	a := startAllInOne(t, dataDir)
	a.apply(widgetCRD, "apply", "-f", "-")
	a.kubectl("wait", "--for=condition=Established", "crd/widgets.example.com", "--timeout=60s")

	// Discovery may lag the Established condition by a moment.
	poll.Until(t, 200*time.Millisecond, 30*time.Second, func() error {
		if out, err := a.kubectlErr("api-resources", "--api-group=example.com"); err != nil || !strings.Contains(out, "widgets") {
			return fmt.Errorf("widgets not in discovery: %v\n%s", err, out)
		}
		return nil
	})
	a.apply("apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w1\n  namespace: default\nspec:\n  size: 3\n", "apply", "-f", "-")
	mustContain(t, a.kubectl("get", "wd", "w1", "-o", "jsonpath={.spec.size}"), "3")
	out, err := a.kubectlEnv(nil, "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w2\n  namespace: default\nspec:\n  size: 0\n", "create", "-f", "-")
	if err == nil || !strings.Contains(out, "spec.size") {
		t.Fatalf("invalid widget accepted: %v\n%s", err, out)
	}
	a.kubectl("patch", "widget", "w1", "--type=merge", "-p", `{"spec":{"size":5}}`)
	mustContain(t, a.kubectl("explain", "widget.spec.size"), "integer")
	a.kubectl("create", "configmap", "kept", "--from-literal=k=v")

	if err := a.stop(); err != nil {
		t.Fatalf("gcp start did not exit 0 on SIGTERM: %v\n%s", err, a.log)
	}
	b := startAllInOne(t, dataDir)
	mustContain(t, b.kubectl("get", "widget", "w1", "-o", "jsonpath={.spec.size}"), "5")
	mustContain(t, b.kubectl("get", "configmap", "kept", "-o", "jsonpath={.data.k}"), "v")
	b.kubectl("delete", "widget", "w1")
}
