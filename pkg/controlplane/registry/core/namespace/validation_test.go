package namespace

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestValidate(t *testing.T) {
	for name, want := range map[string]bool{"demo": true, "a.b": false, "UPPER": false, "x-1": true} {
		errs := Validate(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
		if (len(errs) == 0) != want {
			t.Errorf("namespace %q: errors %v, want valid=%v", name, errs, want)
		}
	}
	errs := Validate(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Spec: corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{"bogus"}}})
	if len(errs) != 1 || errs[0].Field != "spec.finalizers[0]" {
		t.Fatalf("bad spec finalizer: %v", errs)
	}
}

func TestStatusPhaseRules(t *testing.T) {
	old := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "a", ResourceVersion: "1"}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}}
	terminating := old.DeepCopy()
	terminating.Status.Phase = corev1.NamespaceTerminating
	if errs := ValidateStatusUpdate(terminating, old); len(errs) != 1 || errs[0].Field != "status.Phase" {
		t.Fatalf("Terminating without deletionTimestamp: %v", errs)
	}
	now := metav1.Now()
	deleting := terminating.DeepCopy()
	deleting.DeletionTimestamp = &now
	oldDeleting := old.DeepCopy()
	oldDeleting.DeletionTimestamp = &now
	if errs := ValidateStatusUpdate(deleting, oldDeleting); len(errs) != 0 {
		t.Fatalf("Terminating with deletionTimestamp: %v", errs)
	}
}

func TestSetDefaults(t *testing.T) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "demo"}}
	SetDefaults(ns)
	if ns.Labels[corev1.LabelMetadataName] != "demo" || ns.Status.Phase != corev1.NamespaceActive {
		t.Fatalf("got %+v", ns)
	}
}

func TestDeletionFinalizers(t *testing.T) {
	orphan, foreground := metav1.DeletePropagationOrphan, metav1.DeletePropagationForeground
	cases := []struct {
		name    string
		current []string
		opts    metav1.DeleteOptions
		want    []string
	}{
		{"none", nil, metav1.DeleteOptions{}, nil},
		{"orphan policy", []string{"x/y"}, metav1.DeleteOptions{PropagationPolicy: &orphan}, []string{"x/y", metav1.FinalizerOrphanDependents}},
		{"foreground replaces orphan", []string{metav1.FinalizerOrphanDependents}, metav1.DeleteOptions{PropagationPolicy: &foreground}, []string{metav1.FinalizerDeleteDependents}},
		{"unset keeps existing", []string{metav1.FinalizerOrphanDependents}, metav1.DeleteOptions{}, []string{metav1.FinalizerOrphanDependents}},
	}
	for _, c := range cases {
		got := deletionFinalizers(c.current, &c.opts)
		if len(got) != len(c.want) {
			t.Fatalf("%s: got %v want %v", c.name, got, c.want)
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Fatalf("%s: got %v want %v", c.name, got, c.want)
			}
		}
	}
}
