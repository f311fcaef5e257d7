package e2e

import (
	"strings"
	"testing"
	"time"
)

// TestCascadingDeletionWithKubectl: kubectl's three --cascade modes.
func TestCascadingDeletionWithKubectl(t *testing.T) {
	t.Parallel()
	forEachShape(t, func(t *testing.T, a controlPlane) {
		owned := func(owner, name string) string {
			uid := strings.TrimSpace(a.kubectl("get", "configmap", owner, "-o", "jsonpath={.metadata.uid}"))
			return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\n  namespace: default\n  ownerReferences:\n  - {apiVersion: v1, kind: ConfigMap, name: " + owner +
				", uid: " + uid + ", blockOwnerDeletion: true}\n"
		}
		for _, mode := range []string{"background", "foreground", "orphan"} {
			owner, dep := mode+"-owner", mode+"-dependent"
			a.kubectl("create", "configmap", owner)
			a.apply(owned(owner, dep), "apply", "-f", "-")
			a.kubectl("delete", "configmap", owner, "--cascade="+mode, "--wait=false")
			a.eventually(t, mode+": owner gone", 30*time.Second, notFound, "get", "configmap", owner)
			switch mode {
			case "orphan":
				a.eventually(t, "orphan: owner reference removed", 30*time.Second, func(out string, err error) bool { return err == nil && strings.TrimSpace(out) == "" },
					"get", "configmap", dep, "-o", "jsonpath={.metadata.ownerReferences}")
			default:
				a.eventually(t, mode+": dependent deleted", 30*time.Second, notFound, "get", "configmap", dep)
			}
		}
	})
}
