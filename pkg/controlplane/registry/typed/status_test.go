package typed

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// TestStatusStrategy: an update through the status strategy keeps the
// stored spec and, per StatusMetadata, the request's metadata, the
// stored labels and the like, or all the stored metadata but managed
// fields; it never bumps the generation, warns of nothing, and resets
// spec (and metadata unless the request's is taken).
func TestStatusStrategy(t *testing.T) {
	ctx := context.Background()
	main := &Strategy[*corev1.Namespace]{
		Spec:            func(ns *corev1.Namespace) any { return ns.Spec },
		PrepareUpdateFn: func(_ context.Context, ns, old *corev1.Namespace) { ns.Status = old.Status },
		WarnUpdate:      func(context.Context, *corev1.Namespace, *corev1.Namespace) []string { return []string{"main"} },
	}
	validated := false
	validate := func(ns, old *corev1.Namespace) field.ErrorList { validated = true; return nil }
	keepSpec := func(ns, old *corev1.Namespace) { ns.Spec = old.Spec }

	old := &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{Name: "n", Generation: 3, Labels: map[string]string{"l": "old"}, UID: "u"},
		Spec:       corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{"kubernetes"}},
	}
	sent := func() *corev1.Namespace {
		ns := old.DeepCopy()
		ns.Labels = map[string]string{"l": "new"}
		ns.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "status-writer"}}
		ns.Spec.Finalizers = nil
		ns.Status.Phase = corev1.NamespaceTerminating
		return ns
	}
	for _, c := range []struct {
		meta        StatusMetadata
		wantLabel   string
		wantManaged int
		wantReset   []string
	}{
		{StatusTakesMetadata, "new", 1, []string{"spec"}},
		{StatusResetsMetadata, "old", 1, []string{"metadata", "spec"}},
		{StatusKeepsMetadata, "old", 1, []string{"metadata", "spec"}},
	} {
		s := StatusStrategy(main, "v1", c.meta, keepSpec, validate)
		ns := sent()
		s.PrepareForUpdate(ctx, ns, old)
		if len(ns.Spec.Finalizers) != 1 || ns.Status.Phase != corev1.NamespaceTerminating {
			t.Errorf("meta %d: spec %v status %v, want the stored spec and the sent status", c.meta, ns.Spec, ns.Status)
		}
		if ns.Labels["l"] != c.wantLabel || len(ns.ManagedFields) != c.wantManaged || ns.Generation != 3 {
			t.Errorf("meta %d: labels %v, managed fields %d, generation %d; want label %q, %d, 3", c.meta, ns.Labels, len(ns.ManagedFields), ns.Generation, c.wantLabel, c.wantManaged)
		}
		validated = false
		s.ValidateUpdate(ctx, ns, old)
		if !validated {
			t.Errorf("meta %d: validate not called", c.meta)
		}
		if w := s.WarningsOnUpdate(ctx, ns, old); len(w) != 0 {
			t.Errorf("meta %d: warnings %v, want none", c.meta, w)
		}
		want := fieldpath.NewSet()
		for _, f := range c.wantReset {
			want.Insert(fieldpath.MakePathOrDie(f))
		}
		if got := s.GetResetFields()["v1"]; got == nil || !got.Equals(want) {
			t.Errorf("meta %d: reset fields %v, want %v", c.meta, got, want)
		}
	}
	if main.WarnUpdate == nil || main.ResetFields != nil {
		t.Errorf("main strategy changed")
	}
}
