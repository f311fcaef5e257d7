package rbac

import (
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/gcp-project/gcp/test/fielderrors"
)

func TestValidateRoles(t *testing.T) {
	meta := metav1.ObjectMeta{Name: "r", Namespace: "ns"}
	cluster := metav1.ObjectMeta{Name: "system:r"}
	res := rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"configmaps"}}
	url := rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz"}}
	sel := []metav1.LabelSelector{{MatchLabels: map[string]string{"a": "b"}}}
	for _, tc := range []struct {
		name string
		errs field.ErrorList
		want string
	}{
		{"valid role", ValidateRole(&rbacv1.Role{ObjectMeta: meta, Rules: []rbacv1.PolicyRule{res}}), ""},
		{"role needs a namespace", ValidateRole(&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "r"}}), "metadata.namespace"},
		{"role name with slash", ValidateRole(&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "a/b", Namespace: "ns"}}), "metadata.name"},
		{"no verbs", ValidateRole(&rbacv1.Role{ObjectMeta: meta, Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"x"}}}}), "rules[0].verbs"},
		{"no api groups or resources", ValidateRole(&rbacv1.Role{ObjectMeta: meta, Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}}}}), "rules[0].apiGroups,rules[0].resources"},
		{"urls in a role", ValidateRole(&rbacv1.Role{ObjectMeta: meta, Rules: []rbacv1.PolicyRule{url}}), "rules[0].nonResourceURLs"},
		{"urls in a cluster role", ValidateClusterRole(&rbacv1.ClusterRole{ObjectMeta: cluster, Rules: []rbacv1.PolicyRule{url}}), ""},
		{"urls and resources", ValidateClusterRole(&rbacv1.ClusterRole{ObjectMeta: cluster, Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}, NonResourceURLs: []string{"/x"}, Resources: []string{"y"}}}}), "rules[0].nonResourceURLs"},
		{"cluster role must not have a namespace", ValidateClusterRole(&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns"}}), "metadata.namespace"},
		{"aggregation rule", ValidateClusterRole(&rbacv1.ClusterRole{ObjectMeta: cluster, AggregationRule: &rbacv1.AggregationRule{ClusterRoleSelectors: sel}}), ""},
		{"empty aggregation rule", ValidateClusterRole(&rbacv1.ClusterRole{ObjectMeta: cluster, AggregationRule: &rbacv1.AggregationRule{}}), "aggregationRule.clusterRoleSelectors"},
		{"bad aggregation selector", ValidateClusterRole(&rbacv1.ClusterRole{ObjectMeta: cluster, AggregationRule: &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"a b": "c"}}}}}), "aggregationRule.clusterRoleSelectors[0].matchLabels"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := strings.Join(fielderrors.Fields(tc.errs), ","); !strings.HasPrefix(got, tc.want) || (tc.want == "") != (got == "") {
				t.Errorf("fields %q, want %q (%v)", got, tc.want, tc.errs)
			}
		})
	}
}

func TestValidateBindings(t *testing.T) {
	ref := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"}
	user := rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}
	sa := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: "robot"}
	rb := func(ref rbacv1.RoleRef, subjects ...rbacv1.Subject) *rbacv1.RoleBinding {
		return &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "ns"}, RoleRef: ref, Subjects: subjects}
	}
	crb := func(ref rbacv1.RoleRef, subjects ...rbacv1.Subject) *rbacv1.ClusterRoleBinding {
		return &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "b"}, RoleRef: ref, Subjects: subjects}
	}
	roleRef := ref
	roleRef.Kind = "Role"
	for _, tc := range []struct {
		name string
		errs field.ErrorList
		want string
	}{
		{"valid", ValidateRoleBinding(rb(ref, user, sa)), ""},
		{"role ref to a role", ValidateRoleBinding(rb(roleRef, user)), ""},
		{"cluster binding to a role", ValidateClusterRoleBinding(crb(roleRef, user)), "roleRef.kind"},
		{"wrong ref group", ValidateRoleBinding(rb(rbacv1.RoleRef{APIGroup: "x", Kind: "Role", Name: "r"})), "roleRef.apiGroup"},
		{"no ref name", ValidateRoleBinding(rb(rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role"})), "roleRef.name"},
		{"unknown subject kind", ValidateRoleBinding(rb(ref, rbacv1.Subject{Kind: "Robot", Name: "r"})), "subjects[0].kind"},
		{"user without api group", ValidateRoleBinding(rb(ref, rbacv1.Subject{Kind: rbacv1.UserKind, Name: "u"})), "subjects[0].apiGroup"},
		{"service account with api group", ValidateRoleBinding(rb(ref, rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, APIGroup: rbacv1.GroupName, Name: "r"})), "subjects[0].apiGroup"},
		{"service account bad name", ValidateRoleBinding(rb(ref, rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: "Robot!"})), "subjects[0].name"},
		{"service account without namespace in a cluster binding", ValidateClusterRoleBinding(crb(ref, sa)), "subjects[0].namespace"},
		{"subject without name", ValidateRoleBinding(rb(ref, rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName})), "subjects[0].name"},
		{"roleRef changed", validateRoleRefUnchanged(roleRef, ref), "roleRef"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := strings.Join(fielderrors.Fields(tc.errs), ","); got != tc.want {
				t.Errorf("fields %q, want %q (%v)", got, tc.want, tc.errs)
			}
		})
	}
}

func TestBindingDefaults(t *testing.T) {
	ref := rbacv1.RoleRef{Kind: "ClusterRole", Name: "view"}
	subjects := []rbacv1.Subject{{Kind: rbacv1.UserKind, Name: "u"}, {Kind: rbacv1.GroupKind, Name: "g"}, {Kind: rbacv1.ServiceAccountKind, Name: "s", Namespace: "n"}}
	setBindingDefaults(&ref, subjects)
	if ref.APIGroup != rbacv1.GroupName || subjects[0].APIGroup != rbacv1.GroupName || subjects[1].APIGroup != rbacv1.GroupName || subjects[2].APIGroup != "" {
		t.Fatalf("defaults: %+v %+v", ref, subjects)
	}
}
