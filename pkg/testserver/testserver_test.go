package testserver

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
)

const crds = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gizmos.example.dev}
spec:
  group: example.dev
  scope: Namespaced
  names: {plural: gizmos, singular: gizmo, kind: Gizmo}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
---
# an empty document is skipped
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: doodads.example.dev}
spec:
  group: example.dev
  scope: Cluster
  names: {plural: doodads, singular: doodad, kind: Doodad}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
`

// TestCRDsAndControllers: CRDs from a directory are usable as soon as
// Start returns, and with controllers on a new namespace gets its
// default ServiceAccount.
func TestCRDsAndControllers(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "crds.yaml"), []byte(crds), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte("not a CRD"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := Start(t, Options{CRDPaths: []string{dir}, Controllers: []string{"*"}})
	ctx := context.Background()

	dyn := dynamic.NewForConfigOrDie(s.AdminConfig)
	gizmo := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.dev/v1", "kind": "Gizmo", "metadata": map[string]any{"name": "g"}}}
	if _, err := dyn.Resource(schema.GroupVersionResource{Group: "example.dev", Version: "v1", Resource: "gizmos"}).Namespace("default").Create(ctx, gizmo, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating a custom resource right after Start: %v", err)
	}
	doodad := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.dev/v1", "kind": "Doodad", "metadata": map[string]any{"name": "d"}}}
	if _, err := dyn.Resource(schema.GroupVersionResource{Group: "example.dev", Version: "v1", Resource: "doodads"}).Create(ctx, doodad, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the second file document's resource: %v", err)
	}

	if _, err := s.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "fresh"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := s.Client.CoreV1().ServiceAccounts("fresh").Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("no default ServiceAccount in a new namespace with controllers on: %v", err)
	}
}

// TestRunAndStop: without a testing.TB the server lives in a temporary
// directory that Stop removes; Stop is idempotent.
func TestRunAndStop(t *testing.T) {
	t.Parallel()
	s, err := Run(context.Background(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	dir := s.DataDir
	if _, err := s.Client.CoreV1().Namespaces().Get(context.Background(), "default", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := s.Stop(); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("data dir %s left behind: %v", dir, err)
	}
}

// TestBadCRDFile: a document that is not a CRD is an error naming the
// file and document, before anything starts.
func TestBadCRDFile(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(file, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Run(context.Background(), Options{CRDPaths: []string{file}})
	if err == nil || !strings.Contains(err.Error(), "bad.yaml, document 1: ConfigMap \"x\" is not an apiextensions.k8s.io/v1 CustomResourceDefinition") {
		t.Fatalf("got %v", err)
	}
}
