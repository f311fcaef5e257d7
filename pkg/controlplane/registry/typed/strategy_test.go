package typed

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestStrategySpecGeneration: with Spec set, creates start at generation 1
// and an update bumps it only when the spec changed after PrepareUpdateFn.
func TestStrategySpecGeneration(t *testing.T) {
	ctx := context.Background()
	s := &Strategy[*corev1.ResourceQuota]{Spec: func(q *corev1.ResourceQuota) any { return q.Spec }}
	hard := func(n int64) corev1.ResourceQuotaSpec {
		return corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"configmaps": *resourceQuantity(n)}}
	}

	q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Generation: 7}, Spec: hard(1)}
	s.PrepareForCreate(ctx, q)
	if q.Generation != 1 {
		t.Fatalf("create: generation %d, want 1", q.Generation)
	}

	old := q.DeepCopy()
	same := q.DeepCopy()
	same.Labels = map[string]string{"a": "b"}
	s.PrepareForUpdate(ctx, same, old)
	if same.Generation != 1 {
		t.Errorf("metadata-only update: generation %d, want 1", same.Generation)
	}

	changed := q.DeepCopy()
	changed.Spec = hard(2)
	s.PrepareForUpdate(ctx, changed, old)
	if changed.Generation != 2 {
		t.Errorf("spec update: generation %d, want 2", changed.Generation)
	}

	// A status strategy restores the spec first: no bump.
	status := *s
	status.PrepareUpdateFn = func(_ context.Context, q, old *corev1.ResourceQuota) { q.Spec = old.Spec }
	restored := q.DeepCopy()
	restored.Spec = hard(3)
	status.PrepareForUpdate(ctx, restored, old)
	if restored.Generation != 1 {
		t.Errorf("status update: generation %d, want 1", restored.Generation)
	}

	// Without Spec the strategy leaves the generation alone.
	plain := &Strategy[*corev1.ResourceQuota]{}
	untouched := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Generation: 5}}
	plain.PrepareForCreate(ctx, untouched)
	if untouched.Generation != 5 {
		t.Errorf("no Spec: generation %d, want 5", untouched.Generation)
	}
}

func resourceQuantity(n int64) *resource.Quantity { return resource.NewQuantity(n, resource.DecimalSI) }
