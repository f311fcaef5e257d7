package integration

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func quotaSpec(hard map[corev1.ResourceName]string) corev1.ResourceQuotaSpec {
	list := corev1.ResourceList{}
	for name, value := range hard {
		list[name] = resource.MustParse(value)
	}
	return corev1.ResourceQuotaSpec{Hard: list}
}

// TestResourceQuotaLifecycle creates, reads, lists, updates and deletes a
// quota. The status a client sends with the object is dropped on create
// and update; only resourcequotas/status writes it, leaving the spec.
func TestResourceQuotaLifecycle(t *testing.T) {
	t.Parallel()
	s := startGeneric(t)
	ctx := context.Background()
	createNamespace(t, s.Client, "quotas")
	quotas := s.Client.CoreV1().ResourceQuotas("quotas")

	q := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "compute"},
		Spec:       quotaSpec(map[corev1.ResourceName]string{"pods": "10", "requests.cpu": "2", "limits.cpu": "4"}),
		Status:     corev1.ResourceQuotaStatus{Hard: corev1.ResourceList{"pods": resource.MustParse("99")}},
	}
	created, err := quotas.Create(ctx, q, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(created.Status.Hard) != 0 || len(created.Status.Used) != 0 {
		t.Fatalf("status set on create: %+v", created.Status)
	}
	got, err := quotas.Get(ctx, "compute", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pods := got.Spec.Hard[corev1.ResourcePods]; pods.Value() != 10 {
		t.Fatalf("spec.hard.pods = %s", pods.String())
	}
	list, err := quotas.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || list.Items[0].Name != "compute" {
		t.Fatalf("list: %+v", list.Items)
	}

	got.Spec.Hard[corev1.ResourcePods] = resource.MustParse("20")
	got.Status.Hard = corev1.ResourceList{"pods": resource.MustParse("99")}
	updated, err := quotas.Update(ctx, got, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pods := updated.Spec.Hard[corev1.ResourcePods]; pods.Value() != 20 || len(updated.Status.Hard) != 0 {
		t.Fatalf("after update: spec %v status %v", updated.Spec.Hard, updated.Status)
	}

	withStatus := updated.DeepCopy()
	withStatus.Spec.Hard[corev1.ResourcePods] = resource.MustParse("1")
	withStatus.Status = corev1.ResourceQuotaStatus{
		Hard: updated.Spec.Hard.DeepCopy(),
		Used: corev1.ResourceList{"pods": resource.MustParse("3"), "requests.cpu": resource.MustParse("500m")},
	}
	statusWritten, err := quotas.UpdateStatus(ctx, withStatus, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pods := statusWritten.Spec.Hard[corev1.ResourcePods]; pods.Value() != 20 {
		t.Fatalf("status update changed spec.hard.pods to %s", pods.String())
	}
	if used := statusWritten.Status.Used[corev1.ResourcePods]; used.Value() != 3 || len(statusWritten.Status.Hard) != 3 {
		t.Fatalf("status not written: %+v", statusWritten.Status)
	}

	bad := statusWritten.DeepCopy()
	bad.Status.Used[corev1.ResourcePods] = resource.MustParse("-1")
	if _, err := quotas.UpdateStatus(ctx, bad, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "status.used[pods]") {
		t.Fatalf("negative status.used: %v, want 422 at status.used[pods]", err)
	}

	if err := quotas.Delete(ctx, "compute", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := quotas.Get(ctx, "compute", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("deleted quota: %v, want NotFound", err)
	}
}

// TestResourceQuotaInvalid: invalid quotas are rejected with 422 and the
// field path of the problem, and nothing is stored.
func TestResourceQuotaInvalid(t *testing.T) {
	t.Parallel()
	s := startGeneric(t)
	ctx := context.Background()
	createNamespace(t, s.Client, "quotas")
	quotas := s.Client.CoreV1().ResourceQuotas("quotas")

	cases := []struct {
		name  string
		spec  corev1.ResourceQuotaSpec
		field string
	}{
		{"negative", quotaSpec(map[corev1.ResourceName]string{"requests.memory": "-1Gi"}), "spec.hard[requests.memory]"},
		{"bad-name", quotaSpec(map[corev1.ResourceName]string{"widgets": "1"}), "spec.hard[widgets]"},
		{"fractional-count", quotaSpec(map[corev1.ResourceName]string{"configmaps": "1500m"}), "spec.hard[configmaps]"},
		{"bad-scope", func() corev1.ResourceQuotaSpec {
			spec := quotaSpec(map[corev1.ResourceName]string{"pods": "1"})
			spec.Scopes = []corev1.ResourceQuotaScope{"Sometimes"}
			return spec
		}(), "spec.scopes"},
		{"scope-not-for-resource", func() corev1.ResourceQuotaSpec {
			spec := quotaSpec(map[corev1.ResourceName]string{"secrets": "1"})
			spec.Scopes = []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeBestEffort}
			return spec
		}(), "spec.scopes"},
		{"bad-operator", func() corev1.ResourceQuotaSpec {
			spec := quotaSpec(map[corev1.ResourceName]string{"pods": "1"})
			spec.ScopeSelector = &corev1.ScopeSelector{MatchExpressions: []corev1.ScopedResourceSelectorRequirement{
				{ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: "Near", Values: []string{"high"}},
			}}
			return spec
		}(), "spec.scopeSelector.matchExpressions.operator"},
	}
	for _, c := range cases {
		_, err := quotas.Create(ctx, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: c.name}, Spec: c.spec}, metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) {
			t.Errorf("%s: %v, want 422", c.name, err)
			continue
		}
		var fields []string
		for _, cause := range err.(apierrors.APIStatus).Status().Details.Causes {
			fields = append(fields, cause.Field)
		}
		if !slices.Contains(fields, c.field) {
			t.Errorf("%s: causes at %q, want %q", c.name, fields, c.field)
		}
	}
	list, err := quotas.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 0 {
		t.Fatalf("invalid quotas stored: %+v", list.Items)
	}

	valid, err := quotas.Create(ctx, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "scoped"}, Spec: func() corev1.ResourceQuotaSpec {
		spec := quotaSpec(map[corev1.ResourceName]string{"pods": "1"})
		spec.Scopes = []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeTerminating}
		return spec
	}()}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	valid.Spec.Scopes = []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeNotTerminating}
	if _, err := quotas.Update(ctx, valid, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.scopes") {
		t.Fatalf("changing scopes: %v, want 422 at spec.scopes", err)
	}
}

// TestResourceQuotaTable: `kubectl get quota` gets NAME REQUEST LIMIT AGE,
// with "resource: used/hard" from the status.
func TestResourceQuotaTable(t *testing.T) {
	t.Parallel()
	s := startGeneric(t)
	ctx := context.Background()
	createNamespace(t, s.Client, "quotas")
	quotas := s.Client.CoreV1().ResourceQuotas("quotas")
	q, err := quotas.Create(ctx, &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "compute"},
		Spec:       quotaSpec(map[corev1.ResourceName]string{"pods": "10", "requests.cpu": "2", "limits.memory": "2Gi"}),
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	q.Status = corev1.ResourceQuotaStatus{
		Hard: q.Spec.Hard.DeepCopy(),
		Used: corev1.ResourceList{"pods": resource.MustParse("3"), "requests.cpu": resource.MustParse("500m"), "limits.memory": resource.MustParse("1Gi")},
	}
	if _, err := quotas.UpdateStatus(ctx, q, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	raw, err := s.Client.CoreV1().RESTClient().Get().Namespace("quotas").Resource("resourcequotas").
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").Do(ctx).Raw()
	if err != nil {
		t.Fatal(err)
	}
	var tbl metav1.Table
	if err := json.Unmarshal(raw, &tbl); err != nil {
		t.Fatal(err)
	}
	var columns []string
	for _, c := range tbl.ColumnDefinitions {
		columns = append(columns, c.Name)
	}
	if !slices.Equal(columns, []string{"Name", "Request", "Limit", "Age"}) || len(tbl.Rows) != 1 {
		t.Fatalf("columns %q, %d rows", columns, len(tbl.Rows))
	}
	cells := tbl.Rows[0].Cells
	if cells[0] != "compute" || cells[1] != "pods: 3/10, requests.cpu: 500m/2" || cells[2] != "limits.memory: 1Gi/2Gi" {
		t.Fatalf("cells %q", cells)
	}
}
