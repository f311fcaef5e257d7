package bootstrappolicy

import (
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	rbacvalidation "k8s.io/component-helpers/auth/rbac/validation"
)

// TestPolicyIsWellFormed: unique names, every binding's role exists, every
// rule has verbs, every object carries the bootstrap label and autoupdate.
func TestPolicyIsWellFormed(t *testing.T) {
	roles := map[string]rbacv1.ClusterRole{}
	for _, r := range ClusterRoles() {
		if _, dup := roles[r.Name]; dup {
			t.Errorf("clusterrole %s twice", r.Name)
		}
		roles[r.Name] = r
		if r.Labels["kubernetes.io/bootstrapping"] != "rbac-defaults" || r.Annotations[rbacv1.AutoUpdateAnnotationKey] != "true" {
			t.Errorf("clusterrole %s: labels %v annotations %v", r.Name, r.Labels, r.Annotations)
		}
		for i, rule := range r.Rules {
			if len(rule.Verbs) == 0 {
				t.Errorf("clusterrole %s rule %d has no verbs", r.Name, i)
			}
		}
	}
	names := map[string]bool{}
	for _, b := range ClusterRoleBindings() {
		if names[b.Name] {
			t.Errorf("clusterrolebinding %s twice", b.Name)
		}
		names[b.Name] = true
		if _, ok := roles[b.RoleRef.Name]; !ok || b.RoleRef.Kind != "ClusterRole" {
			t.Errorf("clusterrolebinding %s refers to missing %s %s", b.Name, b.RoleRef.Kind, b.RoleRef.Name)
		}
	}
	for ns, rbs := range NamespaceRoleBindings() {
		for _, b := range rbs {
			found := false
			for _, r := range NamespaceRoles()[ns] {
				found = found || (b.RoleRef.Kind == "Role" && r.Name == b.RoleRef.Name)
			}
			if !found {
				t.Errorf("rolebinding %s/%s refers to missing role %s", ns, b.Name, b.RoleRef.Name)
			}
		}
	}
	for ns, rs := range NamespaceRoles() {
		for _, r := range rs {
			for _, rule := range r.Rules {
				if len(rule.NonResourceURLs) > 0 {
					t.Errorf("role %s/%s has non-resource URLs", ns, r.Name)
				}
			}
		}
	}
	for _, name := range ControllerNames() {
		if _, ok := roles["system:controller:"+name]; !ok {
			t.Errorf("no role for controller %s", name)
		}
	}
}

// TestAggregatedRolesNest: admin covers edit covers view, and each covers
// the bootstrap role aggregated into it.
func TestAggregatedRolesNest(t *testing.T) {
	roles := map[string][]rbacv1.PolicyRule{}
	for _, r := range ClusterRoles() {
		roles[r.Name] = r.Rules
	}
	for _, pair := range [][2]string{{"admin", "edit"}, {"edit", "view"}, {"admin", "system:aggregate-to-admin"}, {"edit", "system:aggregate-to-edit"}, {"view", "system:aggregate-to-view"}} {
		if ok, missing := rbacvalidation.Covers(roles[pair[0]], roles[pair[1]]); !ok {
			t.Errorf("%s does not cover %s: missing %v", pair[0], pair[1], missing)
		}
	}
	if ok, _ := rbacvalidation.Covers(roles["view"], []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"secrets"}}}); ok {
		t.Error("view can read secrets")
	}
}
