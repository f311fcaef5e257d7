package e2e

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func mustContain(t *testing.T, out string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(out, w) {
			t.Fatalf("output does not contain %q:\n%s", w, out)
		}
	}
}

// TestKubectlWorkflow walks through what a kubectl user does with the
// native resources, in every shape gcp runs in.
func TestKubectlWorkflow(t *testing.T) {
	t.Parallel()
	forEachShape(t, func(t *testing.T, a controlPlane) {

		mustContain(t, a.kubectl("get", "namespaces"), "NAME", "STATUS", "AGE", "default", "kube-system", "kube-public", "Active")
		a.kubectl("create", "namespace", "demo")
		a.kubectl("-n", "demo", "create", "configmap", "app", "--from-literal=color=blue")
		mustContain(t, a.kubectl("-n", "demo", "get", "cm"), "NAME", "DATA", "AGE", "app", "1")
		mustContain(t, a.kubectl("-n", "demo", "get", "configmap", "app", "-o", "wide"), "app")
		mustContain(t, a.kubectl("-n", "demo", "get", "configmap", "app", "-o", "yaml"), "color: blue", "kind: ConfigMap")

		var cm struct {
			Data     map[string]string `json:"data"`
			Metadata struct {
				Labels      map[string]string `json:"labels"`
				Annotations map[string]string `json:"annotations"`
			} `json:"metadata"`
		}
		getCM := func() {
			t.Helper()
			cm.Data, cm.Metadata.Labels, cm.Metadata.Annotations = nil, nil, nil
			if err := json.Unmarshal([]byte(a.kubectl("-n", "demo", "get", "configmap", "app", "-o", "json")), &cm); err != nil {
				t.Fatal(err)
			}
		}

		a.kubectl("-n", "demo", "label", "configmap", "app", "tier=web")
		a.kubectl("-n", "demo", "annotate", "configmap", "app", "owner=alice")
		a.kubectl("-n", "demo", "patch", "configmap", "app", "--type=merge", "-p", `{"data":{"size":"L"}}`)
		a.kubectl("-n", "demo", "patch", "configmap", "app", "--type=json", "-p", `[{"op":"replace","path":"/data/color","value":"green"}]`)
		a.kubectl("-n", "demo", "patch", "configmap", "app", "-p", `{"data":{"shape":"round"}}`) // strategic merge
		getCM()
		if cm.Metadata.Labels["tier"] != "web" || cm.Metadata.Annotations["owner"] != "alice" ||
			cm.Data["size"] != "L" || cm.Data["color"] != "green" || cm.Data["shape"] != "round" {
			t.Fatalf("label/annotate/patch not applied: %+v", cm)
		}

		out, err := a.kubectlEnv([]string{`KUBE_EDITOR=sed -i s/green/purple/`}, "", "-n", "demo", "edit", "configmap", "app")
		if err != nil {
			t.Fatalf("kubectl edit: %v\n%s", err, out)
		}
		getCM()
		if cm.Data["color"] != "purple" {
			t.Fatalf("edit not applied: %v", cm.Data)
		}

		a.kubectl("-n", "demo", "create", "secret", "generic", "creds", "--from-literal=password=s3cret")
		mustContain(t, a.kubectl("-n", "demo", "get", "secrets"), "NAME", "TYPE", "DATA", "creds", "Opaque")
		mustContain(t, a.kubectl("-n", "demo", "get", "secrets", "--field-selector", "type=Opaque"), "creds")
		a.kubectl("-n", "demo", "create", "serviceaccount", "robot")
		mustContain(t, a.kubectl("-n", "demo", "get", "sa"), "robot")

		a.apply(`apiVersion: coordination.k8s.io/v1
kind: Lease
metadata:
  name: leader
  namespace: demo
spec:
  holderIdentity: node-a
  leaseDurationSeconds: 15
`, "apply", "-f", "-")
		mustContain(t, a.kubectl("-n", "demo", "get", "leases"), "leader", "node-a")

		a.apply(`apiVersion: events.k8s.io/v1
kind: Event
metadata:
  name: hello
  namespace: demo
eventTime: "2026-01-01T00:00:00.000000Z"
reportingController: example.com/ctl
reportingInstance: ctl-1
action: Greet
reason: Hello
type: Normal
note: hello world
regarding:
  kind: ConfigMap
  name: app
  namespace: demo
`, "create", "-f", "-")
		mustContain(t, a.kubectl("-n", "demo", "get", "events"), "Hello", "configmap/app", "hello world")

		// Kustomize, which the shipped binary links without Go plugin support (hack/build.sh).
		kustomization := t.TempDir()
		if err := os.WriteFile(filepath.Join(kustomization, "kustomization.yaml"), []byte(`namespace: demo
labels:
- pairs: {from: kustomize}
configMapGenerator:
- name: settings
  literals: [mode=fast]
`), 0o600); err != nil {
			t.Fatal(err)
		}
		mustContain(t, a.kubectl("apply", "-k", kustomization), "configmap/settings-")
		mustContain(t, a.kubectl("-n", "demo", "get", "configmaps", "-l", "from=kustomize", "-o", "jsonpath={.items[*].data.mode}"), "fast")

		// Delete.
		a.kubectl("-n", "demo", "delete", "configmap", "app")
		if out, err := a.kubectlErr("-n", "demo", "get", "configmap", "app"); err == nil || !strings.Contains(out, "NotFound") {
			t.Fatalf("configmap still there after delete: %v\n%s", err, out)
		}

		// Discovery and OpenAPI.
		mustContain(t, a.kubectl("api-resources"), "configmaps", "cm", "namespaces", "ns", "leases", "customresourcedefinitions", "apiservices")
		mustContain(t, a.kubectl("api-versions"), "v1", "coordination.k8s.io/v1", "events.k8s.io/v1", "apiextensions.k8s.io/v1", "apiregistration.k8s.io/v1")
		mustContain(t, a.kubectl("explain", "configmap.data"), "KIND:", "ConfigMap", "FIELD:", "data")
		// kubectl's messages in the user's language: gcp loads the catalogs
		// only in kubectl's process (commands/kubectl/translations).
		german, err := a.kubectlEnv([]string{"LC_ALL=", "LC_MESSAGES=", "LANG=de_DE.UTF-8"}, "", "--help")
		if err != nil {
			t.Fatalf("kubectl --help: %v\n%s", err, german)
		}
		mustContain(t, german, "Zeige eine oder mehrere Resourcen")
		mustContain(t, a.kubectl("get", "--raw", "/openapi/v3"), `"api/v1"`, `"apis/coordination.k8s.io/v1"`)
		mustContain(t, a.kubectl("get", "--raw", "/version"), `"gitVersion": "v1.37.2"`, `"minor": "37"`)
		var versions struct {
			Client struct{ GitVersion string } `json:"clientVersion"`
			Server struct{ GitVersion string } `json:"serverVersion"`
		}
		if err := json.Unmarshal([]byte(a.kubectl("version", "-o", "json")), &versions); err != nil {
			t.Fatal(err)
		}
		if versions.Client.GitVersion != "v1.37.2" || versions.Server.GitVersion != "v1.37.2" {
			t.Fatalf("kubectl version: %+v", versions)
		}
	})
}

// TestServerSideApply shows field ownership: a second manager changing a
// field the first owns is a conflict until it forces.
func TestServerSideApply(t *testing.T) {
	t.Parallel()
	forEachShape(t, func(t *testing.T, a controlPlane) {
		manifest := func(color string) string {
			return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ssa\n  namespace: default\ndata:\n  color: " + color + "\n"
		}
		a.apply(manifest("blue"), "apply", "--server-side", "--field-manager=alice", "-f", "-")
		out, err := a.kubectlEnv(nil, manifest("red"), "apply", "--server-side", "--field-manager=bob", "-f", "-")
		if err == nil || !strings.Contains(out, "conflict") {
			t.Fatalf("want a conflict for bob, got %v:\n%s", err, out)
		}
		a.apply(manifest("red"), "apply", "--server-side", "--field-manager=bob", "--force-conflicts", "-f", "-")
		mustContain(t, a.kubectl("get", "cm", "ssa", "-o", "jsonpath={.data.color}"), "red")
		mustContain(t, a.kubectl("get", "cm", "ssa", "-o", "yaml", "--show-managed-fields"), "manager: bob")
	})
}

// TestWatchSeesUpdate runs `kubectl get -w` and changes the object.
func TestWatchSeesUpdate(t *testing.T) {
	t.Parallel()
	forEachShape(t, func(t *testing.T, a controlPlane) {
		a.kubectl("create", "configmap", "watched", "--from-literal=a=1")
		cmd := exec.Command(gcpBinary, "kubectl", "--kubeconfig", a.kubeconfig(), "get", "configmap", "watched", "-w", "-o", "jsonpath={.data.a}{\"\\n\"}")
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
		lines := make(chan string)
		go func() {
			s := bufio.NewScanner(stdout)
			for s.Scan() {
				lines <- s.Text()
			}
			close(lines)
		}()
		next := func() string {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatal("watch ended")
				}
				return l
			case <-time.After(30 * time.Second):
				t.Fatal("no watch output within 30s")
			}
			return ""
		}
		if l := next(); l != "1" {
			t.Fatalf("first watch line: %q, want 1", l)
		}
		a.kubectl("patch", "configmap", "watched", "--type=merge", "-p", `{"data":{"a":"2"}}`)
		if l := next(); l != "2" {
			t.Fatalf("watch line after update: %q, want 2", l)
		}
	})
}
