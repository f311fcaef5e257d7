package integration

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestTerminatingNamespaceOutlivesStatusWrites: writing the status of a
// namespace that is being deleted keeps it while spec.finalizers is not
// empty (the namespace controller reports progress that way); removing
// the last finalizer through finalize deletes it.
func TestTerminatingNamespaceOutlivesStatusWrites(t *testing.T) {
	t.Parallel()
	s := startGeneric(t)
	ctx := context.Background()
	namespaces := s.Client.CoreV1().Namespaces()
	createNamespace(t, s.Client, "going")
	if err := namespaces.Delete(ctx, "going", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	ns, err := namespaces.Get(ctx, "going", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ns.Status.Conditions = []corev1.NamespaceCondition{{Type: corev1.NamespaceContentRemaining, Status: corev1.ConditionTrue, Reason: "SomeResourcesRemain"}}
	if _, err := namespaces.UpdateStatus(ctx, ns, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	ns, err = namespaces.Get(ctx, "going", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the status write deleted the namespace: %v", err)
	}
	if ns.Status.Phase != corev1.NamespaceTerminating || len(ns.Status.Conditions) != 1 || len(ns.Spec.Finalizers) != 1 {
		t.Fatalf("namespace after the status write: %+v", ns)
	}
	ns.Spec.Finalizers = nil
	if _, err := namespaces.Finalize(ctx, ns, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := namespaces.Get(ctx, "going", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("finalized namespace: %v, want NotFound", err)
	}
}
