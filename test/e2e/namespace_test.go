package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gcp-project/gcp/test/poll"
)

const gadgetCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: gadgets, singular: gadget, kind: Gadget}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
`

// eventually polls kubectl args until check holds for the output.
func (a *allInOne) eventually(t *testing.T, what string, timeout time.Duration, check func(out string, err error) bool, args ...string) {
	t.Helper()
	poll.Until(t, 100*time.Millisecond, timeout, func() error {
		if out, err := a.kubectlErr(args...); !check(out, err) {
			return fmt.Errorf("%s: last output (%v):\n%s", what, err, out)
		}
		return nil
	})
}

func notFound(out string, err error) bool { return err != nil && strings.Contains(out, "NotFound") }

// TestNamespaceLifecycleWithKubectl: a new namespace gets its default
// ServiceAccount and kube-root-ca.crt; deleting it removes everything in it,
// custom resources of two CRDs included, then the namespace itself.
func TestNamespaceLifecycleWithKubectl(t *testing.T) {
	t.Parallel()
	forEachShape(t, func(t *testing.T, a controlPlane) {
		a.apply(widgetCRD+"---\n"+gadgetCRD, "apply", "-f", "-")
		a.kubectl("wait", "--for=condition=Established", "crd/widgets.example.com", "crd/gadgets.example.com", "--timeout=60s")

		a.kubectl("create", "namespace", "demo")
		a.eventually(t, "default service account", 30*time.Second, func(_ string, err error) bool { return err == nil }, "-n", "demo", "get", "serviceaccount", "default")
		a.eventually(t, "kube-root-ca.crt", 30*time.Second, func(out string, err error) bool { return err == nil && strings.Contains(out, "BEGIN CERTIFICATE") },
			"-n", "demo", "get", "configmap", "kube-root-ca.crt", "-o", "jsonpath={.data.ca\\.crt}")

		a.kubectl("-n", "demo", "create", "configmap", "c1", "--from-literal=k=v")
		a.kubectl("-n", "demo", "create", "secret", "generic", "s1", "--from-literal=k=v")
		a.apply(`apiVersion: coordination.k8s.io/v1
kind: Lease
metadata: {name: l1, namespace: demo}
---
apiVersion: example.com/v1
kind: Widget
metadata: {name: w1, namespace: demo}
spec: {size: 1}
---
apiVersion: example.com/v1
kind: Gadget
metadata: {name: g1, namespace: demo, finalizers: [example.com/hold]}
`, "apply", "-f", "-")

		a.kubectl("delete", "namespace", "demo", "--wait=false")
		// The finalizer holds the namespace, and the namespace says why.
		a.eventually(t, "NamespaceFinalizersRemaining", 30*time.Second, func(out string, _ error) bool { return strings.Contains(out, "example.com/hold") },
			"get", "namespace", "demo", "-o", `jsonpath={.status.conditions[?(@.type=="NamespaceFinalizersRemaining")].message}`)
		for _, r := range []string{"configmap/c1", "secret/s1", "lease/l1", "widget/w1"} {
			a.eventually(t, r+" deleted", 30*time.Second, notFound, "-n", "demo", "get", r)
		}
		a.kubectl("-n", "demo", "patch", "gadget", "g1", "--type=merge", "-p", `{"metadata":{"finalizers":null}}`)
		a.eventually(t, "namespace gone", 30*time.Second, notFound, "get", "namespace", "demo")
	})
}
