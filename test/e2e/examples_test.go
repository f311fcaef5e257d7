package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// examplesDir is the repository's examples/, each its own Go module.
var examplesDir = filepath.Join("..", "..", "examples")

// goIn runs the go command in dir and fails the test on error.
func goIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go %s in %s: %v\n%s", strings.Join(args, " "), dir, err, out)
	}
	return string(out)
}

// TestWidgetsExample builds examples/widgets, a control plane of its own
// made from gcp's commands and a stack with a native group
// (widgets.example.dev, JSON storage) and its controller, and drives it as
// its users would: kubectl get, explain, server-side apply, a 422, the
// controller under the RBAC its layer declares, namespace deletion. The
// example's own tests and generated-code check run too, so it cannot rot.
func TestWidgetsExample(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(examplesDir, "widgets")
	bin := filepath.Join(t.TempDir(), "widgets")
	goIn(t, dir, "build", "-o", bin, ".")
	goIn(t, dir, "vet", "./...")
	goIn(t, dir, "test", "./...")
	if out, err := exec.Command("bash", filepath.Join(dir, "hack", "verify-codegen.sh")).CombinedOutput(); err != nil {
		t.Fatalf("examples/widgets generated code is stale: %v\n%s", err, out)
	}

	out, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "widgets v1.") {
		t.Fatalf("widgets version: %v %q", err, out)
	}

	a := startBinary(t, bin, t.TempDir())
	resources := a.kubectl("api-resources", "-o", "name")
	mustContain(t, resources, "widgets.widgets.example.dev", "namespaces", "customresourcedefinitions.apiextensions.k8s.io", "clusterroles.rbac.authorization.k8s.io")
	for _, dropped := range []string{"leases.coordination.k8s.io", "flowschemas.flowcontrol.apiserver.k8s.io"} {
		if strings.Contains(resources, dropped) {
			t.Errorf("the stack drops %s, but it is served", dropped)
		}
	}

	widget := `apiVersion: widgets.example.dev/v1
kind: Widget
metadata: {name: w1, namespace: default}
spec: {size: 3, message: hello}
`
	a.apply(widget, "apply", "--server-side", "-f", "-")
	a.eventually(t, "the widget controller reconciles w1", 30*time.Second, func(out string, err error) bool {
		return err == nil && out == "1 Ready"
	}, "get", "widget", "w1", "-o", "jsonpath={.status.observedGeneration} {.status.phase}")
	mustContain(t, a.kubectl("get", "wd"), "NAME", "SIZE", "COLOR", "PHASE", "w1", "3", "blue", "Ready")
	mustContain(t, a.kubectl("get", "widget", "w1", "-o", "jsonpath={.metadata.managedFields[*].manager}"), "kubectl", "widget-controller")
	mustContain(t, a.kubectl("explain", "widget.spec"), "Size of the widget", "size\t<integer> -required-")

	// A change of spec is a new generation, reconciled again.
	a.apply(strings.Replace(widget, "size: 3", "size: 4", 1), "apply", "--server-side", "-f", "-")
	a.eventually(t, "w1 generation 2 reconciled", 30*time.Second, func(out string, err error) bool {
		return err == nil && out == "2 4"
	}, "get", "widget", "w1", "-o", "jsonpath={.status.observedGeneration} {.spec.size}")

	invalid := `apiVersion: widgets.example.dev/v1
kind: Widget
metadata: {name: bad, namespace: default}
spec: {size: 0, color: purple}
`
	out2, err := a.kubectlEnv(nil, invalid, "create", "-f", "-")
	if err == nil {
		t.Fatal("an invalid widget was created")
	}
	mustContain(t, out2, `The Widget "bad" is invalid`, "spec.size: Required value", `spec.color: Unsupported value: "purple"`)

	// The controller's role comes from its layer, bound to its own
	// service account, and nothing more.
	sa := "--as=system:serviceaccount:kube-system:widget-controller"
	mustContain(t, a.kubectl("auth", "can-i", "update", "widgets.widgets.example.dev", "--subresource=status", sa), "yes")
	if out, _ := a.kubectlErr("auth", "can-i", "delete", "widgets.widgets.example.dev", sa); strings.TrimSpace(out) != "no" {
		t.Errorf("widget-controller may delete widgets: %q", out)
	}

	// The namespace controller empties a namespace of widgets (it asks for
	// protobuf first; a JSON group must answer with JSON, not 406).
	a.kubectl("create", "namespace", "scratch")
	a.apply(strings.Replace(widget, "namespace: default", "namespace: scratch", 1), "apply", "-f", "-")
	a.kubectl("delete", "namespace", "scratch", "--wait=false")
	a.eventually(t, "namespace scratch deleted", 30*time.Second, notFound, "get", "namespace", "scratch")

	// Without the coordination layer there are no Leases to elect a
	// leader with: a separate controller manager says so and exits.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out3, err := exec.CommandContext(ctx, bin, "controllers", "--kubeconfig", filepath.Join(a.dataDir, "controllers.kubeconfig"), "--secure-port", "0").CombinedOutput()
	if err == nil || !strings.Contains(string(out3), "leader election needs coordination.k8s.io/v1 leases") {
		t.Errorf("widgets controllers with leader election and no Lease API: %v\n%s", err, out3)
	}

	if err := a.stop(); err != nil {
		t.Fatalf("widgets start did not stop cleanly: %v\n%s", err, a.log)
	}
	_ = os.Remove(bin)
}

// TestReconcilerExample runs examples/reconciler's tests: a
// controller-runtime reconciler tested against pkg/testserver, with and
// without gcp's controllers, and its generated-code check.
func TestReconcilerExample(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(examplesDir, "reconciler")
	goIn(t, dir, "vet", "./...")
	goIn(t, dir, "test", "-count=1", "./...")
	if out, err := exec.Command("bash", filepath.Join(dir, "hack", "verify-codegen.sh")).CombinedOutput(); err != nil {
		t.Fatalf("examples/reconciler generated code is stale: %v\n%s", err, out)
	}
}
