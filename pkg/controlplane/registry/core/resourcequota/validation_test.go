package resourcequota

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func quota(name string, hard map[string]string) *corev1.ResourceQuota {
	q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", ResourceVersion: "1"}}
	q.Spec.Hard = resources(hard)
	return q
}

func resources(m map[string]string) corev1.ResourceList {
	if m == nil {
		return nil
	}
	list := corev1.ResourceList{}
	for k, v := range m {
		list[corev1.ResourceName(k)] = resource.MustParse(v)
	}
	return list
}

func withScopes(q *corev1.ResourceQuota, scopes ...corev1.ResourceQuotaScope) *corev1.ResourceQuota {
	q.Spec.Scopes = scopes
	return q
}

func withSelector(q *corev1.ResourceQuota, reqs ...corev1.ScopedResourceSelectorRequirement) *corev1.ResourceQuota {
	q.Spec.ScopeSelector = &corev1.ScopeSelector{MatchExpressions: reqs}
	return q
}

func TestValidate(t *testing.T) {
	const (
		hard       = "spec.hard"
		scopes     = "spec.scopes"
		expression = "spec.scopeSelector.matchExpressions"
	)
	cases := []struct {
		name string
		q    *corev1.ResourceQuota
		want map[string]field.ErrorType // field path -> type; empty means valid
	}{
		{"empty", quota("q", nil), nil},
		{"standard names", quota("q", map[string]string{
			"pods": "10", "configmaps": "5", "secrets": "5", "resourcequotas": "1", "services": "2",
			"requests.cpu": "500m", "limits.memory": "1Gi", "requests.hugepages-2Mi": "1Gi", "requests.storage": "10Gi",
		}), nil},
		{"object counts", quota("q", map[string]string{"count/widgets.example.com": "3", "count/deployments.apps": "2", "count/configmaps": "1"}), nil},
		{"domain-prefixed", quota("q", map[string]string{"example.com/gpu": "4", "requests.example.com/gpu": "4"}), nil},
		{"pod scopes", withScopes(quota("q", map[string]string{"pods": "1", "requests.cpu": "1"}), corev1.ResourceQuotaScopeNotTerminating, corev1.ResourceQuotaScopeNotBestEffort), nil},
		{"scope selector", withSelector(quota("q", map[string]string{"pods": "1"}),
			corev1.ScopedResourceSelectorRequirement{ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: corev1.ScopeSelectorOpIn, Values: []string{"high"}},
			corev1.ScopedResourceSelectorRequirement{ScopeName: corev1.ResourceQuotaScopeBestEffort, Operator: corev1.ScopeSelectorOpExists}), nil},

		{"bad name", quota("Not_Valid", nil), map[string]field.ErrorType{"metadata.name": field.ErrorTypeInvalid}},
		{"missing namespace", &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "q"}}, map[string]field.ErrorType{"metadata.namespace": field.ErrorTypeRequired}},
		{"unknown resource", quota("q", map[string]string{"widgets": "1"}), map[string]field.ErrorType{hard + "[widgets]": field.ErrorTypeInvalid}},
		{"storage is not a quota resource", quota("q", map[string]string{"storage": "1Gi"}), map[string]field.ErrorType{hard + "[storage]": field.ErrorTypeInvalid}},
		{"unqualified name", quota("q", map[string]string{"a b": "1"}), map[string]field.ErrorType{hard + "[a b]": field.ErrorTypeInvalid}},
		{"negative", quota("q", map[string]string{"requests.cpu": "-1"}), map[string]field.ErrorType{hard + "[requests.cpu]": field.ErrorTypeInvalid}},
		{"fractional count", quota("q", map[string]string{"pods": "1500m"}), map[string]field.ErrorType{hard + "[pods]": field.ErrorTypeInvalid}},
		{"fractional extended resource", quota("q", map[string]string{"example.com/gpu": "500m"}), map[string]field.ErrorType{hard + "[example.com/gpu]": field.ErrorTypeInvalid}},
		{"unknown scope", withScopes(quota("q", nil), "Sometimes"), map[string]field.ErrorType{scopes: field.ErrorTypeInvalid}},
		{"scope not for resource", withScopes(quota("q", map[string]string{"configmaps": "1"}), corev1.ResourceQuotaScopeTerminating), map[string]field.ErrorType{scopes: field.ErrorTypeInvalid}},
		{"best effort limits only pods", withScopes(quota("q", map[string]string{"requests.cpu": "1"}), corev1.ResourceQuotaScopeBestEffort), map[string]field.ErrorType{scopes: field.ErrorTypeInvalid}},
		{"conflicting scopes", withScopes(quota("q", map[string]string{"pods": "1"}), corev1.ResourceQuotaScopeBestEffort, corev1.ResourceQuotaScopeNotBestEffort), map[string]field.ErrorType{scopes: field.ErrorTypeInvalid}},
		{"selector unknown scope", withSelector(quota("q", nil), corev1.ScopedResourceSelectorRequirement{ScopeName: "Sometimes", Operator: corev1.ScopeSelectorOpExists}),
			map[string]field.ErrorType{expression + ".scopeName": field.ErrorTypeInvalid}},
		{"selector In without values", withSelector(quota("q", nil), corev1.ScopedResourceSelectorRequirement{ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: corev1.ScopeSelectorOpIn}),
			map[string]field.ErrorType{expression + ".values": field.ErrorTypeRequired}},
		{"selector Exists with values", withSelector(quota("q", nil), corev1.ScopedResourceSelectorRequirement{ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: corev1.ScopeSelectorOpExists, Values: []string{"x"}}),
			map[string]field.ErrorType{expression + ".values": field.ErrorTypeInvalid}},
		{"selector bad operator", withSelector(quota("q", nil), corev1.ScopedResourceSelectorRequirement{ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: "Near", Values: []string{"x"}}),
			map[string]field.ErrorType{expression + ".operator": field.ErrorTypeInvalid}},
		{"selector BestEffort needs Exists", withSelector(quota("q", nil), corev1.ScopedResourceSelectorRequirement{ScopeName: corev1.ResourceQuotaScopeBestEffort, Operator: corev1.ScopeSelectorOpIn, Values: []string{"x"}}),
			map[string]field.ErrorType{expression + ".operator": field.ErrorTypeInvalid}},
		{"selector conflicting", withSelector(quota("q", nil),
			corev1.ScopedResourceSelectorRequirement{ScopeName: corev1.ResourceQuotaScopeTerminating, Operator: corev1.ScopeSelectorOpExists},
			corev1.ScopedResourceSelectorRequirement{ScopeName: corev1.ResourceQuotaScopeNotTerminating, Operator: corev1.ScopeSelectorOpExists}),
			map[string]field.ErrorType{expression: field.ErrorTypeInvalid}},
		{"bad status", func() *corev1.ResourceQuota {
			q := quota("q", nil)
			q.Status.Used = resources(map[string]string{"pods": "-1"})
			return q
		}(), map[string]field.ErrorType{"status.used[pods]": field.ErrorTypeInvalid}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assertErrors(t, Validate(c.q), c.want)
		})
	}
}

func TestValidateUpdate(t *testing.T) {
	old := withScopes(quota("q", map[string]string{"pods": "1"}), corev1.ResourceQuotaScopeTerminating)
	grown := old.DeepCopy()
	grown.Spec.Hard = resources(map[string]string{"pods": "5"})
	assertErrors(t, ValidateUpdate(grown, old), nil)
	rescoped := old.DeepCopy()
	rescoped.Spec.Scopes = []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeNotTerminating}
	assertErrors(t, ValidateUpdate(rescoped, old), map[string]field.ErrorType{"spec.scopes": field.ErrorTypeInvalid})
	negative := old.DeepCopy()
	negative.Spec.Hard = resources(map[string]string{"pods": "-5"})
	assertErrors(t, ValidateUpdate(negative, old), map[string]field.ErrorType{"spec.hard[pods]": field.ErrorTypeInvalid})
}

func TestValidateStatusUpdate(t *testing.T) {
	old := quota("q", map[string]string{"pods": "1"})
	q := old.DeepCopy()
	q.Status.Hard = resources(map[string]string{"pods": "1"})
	q.Status.Used = resources(map[string]string{"pods": "0"})
	assertErrors(t, ValidateStatusUpdate(q, old), nil)
	q.Status.Hard = resources(map[string]string{"widgets": "1"})
	q.Status.Used = resources(map[string]string{"pods": "0.5"})
	assertErrors(t, ValidateStatusUpdate(q, old), map[string]field.ErrorType{"status.hard[widgets]": field.ErrorTypeInvalid, "status.used[pods]": field.ErrorTypeInvalid})
	q = old.DeepCopy()
	q.ResourceVersion = ""
	assertErrors(t, ValidateStatusUpdate(q, old), map[string]field.ErrorType{"metadata.resourceVersion": field.ErrorTypeInvalid, "resourceVersion": field.ErrorTypeRequired})
}

func TestSetDefaultsRoundsToMilli(t *testing.T) {
	q := quota("q", map[string]string{"requests.cpu": "100u"})
	SetDefaults(q)
	if got := q.Spec.Hard[corev1.ResourceRequestsCPU]; got.String() != "1m" {
		t.Fatalf("requests.cpu = %s, want 1m", got.String())
	}
}

func TestWarnings(t *testing.T) {
	q := quota("q", map[string]string{"requests.cpu": "2", "limits.cpu": "1", "memory": "1Gi", "limits.memory": "2Gi"})
	if w := Warnings(q); len(w) != 1 || !strings.Contains(w[0], "requests.cpu (2) should be less than limits.cpu (1)") {
		t.Fatalf("warnings %q", w)
	}
}

func assertErrors(t *testing.T, errs field.ErrorList, want map[string]field.ErrorType) {
	t.Helper()
	got := map[string]field.ErrorType{}
	for _, e := range errs {
		got[e.Field] = e.Type
	}
	if len(got) != len(want) {
		t.Fatalf("errors %v, want %v", errs, want)
	}
	for f, typ := range want {
		if got[f] != typ {
			t.Fatalf("errors %v, want %s at %q", errs, typ, f)
		}
	}
}

func TestTable(t *testing.T) {
	q := quota("compute", nil)
	q.Status.Hard = resources(map[string]string{"pods": "10", "requests.cpu": "2", "limits.memory": "2Gi", "limits.cpu": "4"})
	q.Status.Used = resources(map[string]string{"pods": "3", "requests.cpu": "500m", "limits.cpu": "1"})
	tbl, err := TableConvertor().ConvertToTable(t.Context(), &corev1.ResourceQuotaList{Items: []corev1.ResourceQuota{*q}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range tbl.ColumnDefinitions {
		names = append(names, c.Name)
	}
	if strings.Join(names, ",") != "Name,Request,Limit,Age" || len(tbl.Rows) != 1 {
		t.Fatalf("table %v rows %v", names, tbl.Rows)
	}
	cells := tbl.Rows[0].Cells
	if cells[0] != "compute" || cells[1] != "pods: 3/10, requests.cpu: 500m/2" || cells[2] != "limits.cpu: 1/4, limits.memory: 0/2Gi" {
		t.Fatalf("cells %q", cells)
	}
}
