package bootstrappolicy

import (
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	rbacvalidation "k8s.io/component-helpers/auth/rbac/validation"
)

func checkMeta(t *testing.T, what string, m metav1.ObjectMeta) {
	t.Helper()
	if m.Labels[BootstrappingLabel] != BootstrappingLabelValue {
		t.Errorf("%s %s: labels %v", what, m.Name, m.Labels)
	}
	if m.Annotations[rbacv1.AutoUpdateAnnotationKey] != "true" {
		t.Errorf("%s %s: annotations %v", what, m.Name, m.Annotations)
	}
}

func checkRules(t *testing.T, what, name string, rules []rbacv1.PolicyRule, namespaced bool) {
	t.Helper()
	for i, r := range rules {
		switch {
		case len(r.Verbs) == 0:
			t.Errorf("%s %s rule %d has no verbs", what, name, i)
		case len(r.NonResourceURLs) > 0 && (namespaced || len(r.Resources) > 0 || len(r.APIGroups) > 0):
			t.Errorf("%s %s rule %d mixes non-resource URLs with resources or is namespaced: %v", what, name, i, r)
		case len(r.NonResourceURLs) == 0 && (len(r.Resources) == 0 || len(r.APIGroups) == 0):
			t.Errorf("%s %s rule %d names no resources or groups: %v", what, name, i, r)
		}
	}
}

// testPolicy is the default policy with user roles of two owners, as a
// stack's layers bring them (the generic stack's are tested in
// pkg/layering, which composes it).
func testPolicy() Policy {
	return Default().Merge(UserRoles("", UserRules{
		View: []rbacv1.PolicyRule{
			NewRule(ReadVerbs()...).Groups("").Resources("configmaps").Rule(),
			NewRule(ReadVerbs()...).Groups("").Resources("namespaces").Rule(),
		},
		Edit: []rbacv1.PolicyRule{
			NewRule(ReadVerbs()...).Groups("").Resources("secrets").Rule(),
			NewRule(WriteVerbs()...).Groups("").Resources("configmaps", "secrets").Rule(),
		},
	})).Merge(UserRoles("example.com", UserRules{
		View:  []rbacv1.PolicyRule{NewRule(ReadVerbs()...).Groups("example.com").Resources("widgets").Rule()},
		Admin: []rbacv1.PolicyRule{NewRule(ReadWriteVerbs()...).Groups("example.com").Resources("widgetpolicies").Rule()},
	}))
}

// clusterRolesByName are testPolicy's cluster roles, aggregated.
func clusterRolesByName(t *testing.T) map[string]rbacv1.ClusterRole {
	roles := map[string]rbacv1.ClusterRole{}
	for _, r := range mustAggregate(t, testPolicy()).ClusterRoles {
		if _, dup := roles[r.Name]; dup {
			t.Errorf("clusterrole %s twice", r.Name)
		}
		roles[r.Name] = r
	}
	return roles
}

// TestPolicyIsWellFormed: unique names, every binding's role exists, every
// rule has verbs, non-resource URLs only in cluster roles, every object
// carries the bootstrap label and autoupdate annotation.
func TestPolicyIsWellFormed(t *testing.T) {
	roles := clusterRolesByName(t)
	for _, r := range roles {
		checkMeta(t, "clusterrole", r.ObjectMeta)
		checkRules(t, "clusterrole", r.Name, r.Rules, false)
		if r.Namespace != "" {
			t.Errorf("clusterrole %s has namespace %q", r.Name, r.Namespace)
		}
		if r.AggregationRule == nil && len(r.Rules) == 0 {
			t.Errorf("clusterrole %s grants nothing", r.Name)
		}
	}
	names := map[string]bool{}
	for _, b := range ClusterRoleBindings() {
		checkMeta(t, "clusterrolebinding", b.ObjectMeta)
		if names[b.Name] {
			t.Errorf("clusterrolebinding %s twice", b.Name)
		}
		names[b.Name] = true
		if _, ok := roles[b.RoleRef.Name]; !ok || b.RoleRef.Kind != "ClusterRole" || b.RoleRef.APIGroup != rbacv1.GroupName {
			t.Errorf("clusterrolebinding %s refers to missing %v", b.Name, b.RoleRef)
		}
		if len(b.Subjects) == 0 {
			t.Errorf("clusterrolebinding %s has no subjects", b.Name)
		}
	}
	nsRoles := NamespaceRoles()
	for ns, rs := range nsRoles {
		seen := map[string]bool{}
		for _, r := range rs {
			checkMeta(t, "role", r.ObjectMeta)
			checkRules(t, "role", ns+"/"+r.Name, r.Rules, true)
			if r.Namespace != ns || seen[r.Name] {
				t.Errorf("role %s/%s: namespace %q, duplicate %v", ns, r.Name, r.Namespace, seen[r.Name])
			}
			seen[r.Name] = true
		}
	}
	for ns, rbs := range NamespaceRoleBindings() {
		seen := map[string]bool{}
		for _, b := range rbs {
			checkMeta(t, "rolebinding", b.ObjectMeta)
			if b.Namespace != ns || seen[b.Name] {
				t.Errorf("rolebinding %s/%s: namespace %q, duplicate %v", ns, b.Name, b.Namespace, seen[b.Name])
			}
			seen[b.Name] = true
			found := false
			switch b.RoleRef.Kind {
			case "Role":
				for _, r := range nsRoles[ns] {
					found = found || r.Name == b.RoleRef.Name
				}
			case "ClusterRole":
				_, found = roles[b.RoleRef.Name]
			}
			if !found || b.RoleRef.APIGroup != rbacv1.GroupName {
				t.Errorf("rolebinding %s/%s refers to missing %v", ns, b.Name, b.RoleRef)
			}
		}
	}
}

// TestPolicyIsFresh: callers get their own copies.
func TestPolicyIsFresh(t *testing.T) {
	a := ClusterRoles()
	a[0].Rules[0].Verbs[0] = "mutated"
	a[0].Labels["x"] = "y"
	for _, r := range ClusterRoles() {
		for _, rule := range r.Rules {
			for _, v := range rule.Verbs {
				if v == "mutated" {
					t.Fatalf("clusterrole %s shares state with an earlier call", r.Name)
				}
			}
		}
		if r.Labels["x"] != "" {
			t.Fatalf("clusterrole %s shares labels with an earlier call", r.Name)
		}
	}
	edit := func() []rbacv1.PolicyRule {
		for _, r := range mustAggregate(t, testPolicy()).ClusterRoles {
			if r.Name == "edit" {
				return r.Rules
			}
		}
		return nil
	}
	e := edit()
	e[0].Resources[0] = "mutated"
	if edit()[0].Resources[0] == "mutated" {
		t.Fatal("aggregated rules share state")
	}
	NamespaceRoles()[systemNamespace][0].Rules[0].ResourceNames[0] = "mutated"
	if NamespaceRoles()[systemNamespace][0].Rules[0].ResourceNames[0] == "mutated" {
		t.Fatal("namespace roles share state")
	}
}

func allows(rules []rbacv1.PolicyRule, verb, group, resource string) bool {
	ok, _ := rbacvalidation.Covers(rules, []rbacv1.PolicyRule{{Verbs: []string{verb}, APIGroups: []string{group}, Resources: []string{resource}}})
	return ok
}

// TestAggregatedRoles: admin covers edit covers view, each covers the
// roles aggregated into it and has no rule they do not, and the labels
// nest as upstream's. (What the generic stack's grant is tested in
// pkg/layering.)
func TestAggregatedRoles(t *testing.T) {
	roles := clusterRolesByName(t)
	labelled := func(label string) []rbacv1.PolicyRule {
		var rules []rbacv1.PolicyRule
		for _, r := range roles {
			if r.Labels[label] == "true" && r.AggregationRule == nil {
				rules = append(rules, r.Rules...)
			}
		}
		return rules
	}
	for _, pair := range [][2]string{
		{"admin", "edit"}, {"edit", "view"}, {"admin", "view"},
		{"admin", "system:aggregate-to-admin:example.com"}, {"edit", "system:aggregate-to-edit"}, {"view", "system:aggregate-to-view"},
		{"view", "system:aggregate-to-view:example.com"},
	} {
		if ok, missing := rbacvalidation.Covers(roles[pair[0]].Rules, roles[pair[1]].Rules); !ok || len(roles[pair[1]].Rules) == 0 {
			t.Errorf("%s does not cover %s: missing %v", pair[0], pair[1], missing)
		}
	}
	// Every rule of an aggregated role comes from a role it aggregates.
	if ok, extra := rbacvalidation.Covers(labelled(AggregateToView), roles["view"].Rules); !ok {
		t.Errorf("view has rules no aggregated role has: %v", extra)
	}
	if ok, extra := rbacvalidation.Covers(append(labelled(AggregateToEdit), roles["view"].Rules...), roles["edit"].Rules); !ok {
		t.Errorf("edit has rules no aggregated role has: %v", extra)
	}
	if ok, extra := rbacvalidation.Covers(append(labelled(AggregateToAdmin), roles["edit"].Rules...), roles["admin"].Rules); !ok {
		t.Errorf("admin has rules no aggregated role has: %v", extra)
	}
	if _, ok := roles["system:aggregate-to-edit:example.com"]; ok {
		t.Error("UserRoles made a role without rules")
	}

	labels := map[string]map[string]string{
		"edit":                                  {AggregateToAdmin: "true"},
		"view":                                  {AggregateToEdit: "true"},
		"system:aggregate-to-edit":              {AggregateToEdit: "true"},
		"system:aggregate-to-view":              {AggregateToView: "true"},
		"system:aggregate-to-admin:example.com": {AggregateToAdmin: "true"},
	}
	for name, want := range labels {
		for k, v := range want {
			if roles[name].Labels[k] != v {
				t.Errorf("%s: labels %v, want %s=%s", name, roles[name].Labels, k, v)
			}
		}
	}
	for name, sel := range map[string]string{"admin": AggregateToAdmin, "edit": AggregateToEdit, "view": AggregateToView} {
		ar := roles[name].AggregationRule
		if ar == nil || len(ar.ClusterRoleSelectors) != 1 || ar.ClusterRoleSelectors[0].MatchLabels[sel] != "true" {
			t.Errorf("%s: aggregation rule %v", name, ar)
		}
	}
}

func TestWellKnownRolesAndBindings(t *testing.T) {
	roles := clusterRolesByName(t)
	urlsOf := func(name string) string {
		var u []string
		for _, r := range roles[name].Rules {
			u = append(u, r.NonResourceURLs...)
		}
		return strings.Join(u, " ")
	}
	for name, want := range map[string][]string{
		"system:discovery":                        {"/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez", "/readyz", "/openapi", "/openapi/*", "/version", "/version/"},
		"system:public-info-viewer":               {"/healthz", "/livez", "/readyz", "/version", "/version/"},
		"system:monitoring":                       {"/metrics", "/metrics/slis", "/readyz/*"},
		"system:service-account-issuer-discovery": {"/.well-known/openid-configuration", "/.well-known/openid-configuration/", "/openid/v1/jwks", "/openid/v1/jwks/"},
		"cluster-admin":                           {"*"},
	} {
		for _, u := range want {
			ok, _ := rbacvalidation.Covers(roles[name].Rules, []rbacv1.PolicyRule{{Verbs: []string{"get"}, NonResourceURLs: []string{u}}})
			if !ok {
				t.Errorf("%s does not allow GET %s (has %s)", name, u, urlsOf(name))
			}
		}
	}
	if ok, _ := rbacvalidation.Covers(roles["system:public-info-viewer"].Rules, []rbacv1.PolicyRule{{Verbs: []string{"get"}, NonResourceURLs: []string{"/apis"}}}); ok {
		t.Error("system:public-info-viewer allows /apis")
	}
	for _, c := range []struct{ role, verb, group, resource string }{
		{"cluster-admin", "delete", "example.com", "widgets"},
		{"system:basic-user", "create", "authorization.k8s.io", "selfsubjectaccessreviews"},
		{"system:basic-user", "create", "authorization.k8s.io", "selfsubjectrulesreviews"},
		{"system:basic-user", "create", "authentication.k8s.io", "selfsubjectreviews"},
		{"system:auth-delegator", "create", "authentication.k8s.io", "tokenreviews"},
		{"system:auth-delegator", "create", "authorization.k8s.io", "subjectaccessreviews"},
		{ControllersUser, "create", "", "events"},
		{ControllersUser, "patch", "events.k8s.io", "events"},
		{ControllersUser, "create", "coordination.k8s.io", "leases"},
		{ControllersUser, "create", "", "serviceaccounts/token"},
		{ControllersUser, "get", "", "serviceaccounts"},
		{ControllersUser, "watch", "example.com", "widgets"},
	} {
		if !allows(roles[c.role].Rules, c.verb, c.group, c.resource) {
			t.Errorf("%s does not allow %s %s/%s", c.role, c.verb, c.group, c.resource)
		}
	}
	// The manager may update only its own lease cluster-wide.
	if allows(roles[ControllersUser].Rules, "update", "coordination.k8s.io", "leases") {
		t.Error("system:gcp-controllers may update any lease")
	}
	if ok, _ := rbacvalidation.Covers(roles[ControllersUser].Rules, []rbacv1.PolicyRule{{Verbs: []string{"get", "update"},
		APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, ResourceNames: []string{controllersLease}}}); !ok {
		t.Error("system:gcp-controllers may not update its lease")
	}

	subjects := map[string][]rbacv1.Subject{}
	for _, b := range ClusterRoleBindings() {
		subjects[b.Name] = b.Subjects
	}
	group := func(n string) rbacv1.Subject { return groupSubject(n) }
	for name, want := range map[string][]rbacv1.Subject{
		"cluster-admin":                           {group("system:masters")},
		"system:discovery":                        {group("system:authenticated")},
		"system:basic-user":                       {group("system:authenticated")},
		"system:public-info-viewer":               {group("system:authenticated"), group("system:unauthenticated")},
		"system:monitoring":                       {group("system:monitoring")},
		"system:service-account-issuer-discovery": {group("system:serviceaccounts")},
		ControllersUser:                           {userSubject(ControllersUser)},
	} {
		if len(subjects[name]) != len(want) {
			t.Errorf("clusterrolebinding %s: subjects %v, want %v", name, subjects[name], want)
			continue
		}
		for i := range want {
			if subjects[name][i] != want[i] {
				t.Errorf("clusterrolebinding %s: subjects %v, want %v", name, subjects[name], want)
			}
		}
	}
	// No binding grants the aggregated user-facing roles by default.
	for _, b := range ClusterRoleBindings() {
		switch b.RoleRef.Name {
		case "admin", "edit", "view", "system:auth-delegator":
			t.Errorf("clusterrolebinding %s binds %s", b.Name, b.RoleRef.Name)
		}
	}

	var reader *rbacv1.Role
	for _, r := range NamespaceRoles()["kube-system"] {
		if r.Name == "extension-apiserver-authentication-reader" {
			reader = &r
		}
	}
	if reader == nil || allows(reader.Rules, "get", "", "configmaps") {
		t.Fatalf("kube-system/extension-apiserver-authentication-reader: %v", reader)
	}
	if ok, _ := rbacvalidation.Covers(reader.Rules, []rbacv1.PolicyRule{{Verbs: []string{"get", "list", "watch"},
		APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{"extension-apiserver-authentication"}}}); !ok {
		t.Errorf("kube-system/extension-apiserver-authentication-reader: %v", reader)
	}
}

// mustAggregate is p.Aggregated(), failing t on an error.
func mustAggregate(t *testing.T, p Policy) Policy {
	t.Helper()
	out, err := p.Aggregated()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestAggregatedRefusesABadSelector: a layer's aggregating role whose
// selector does not parse is an error naming it, not a panic.
func TestAggregatedRefusesABadSelector(t *testing.T) {
	p := testPolicy()
	p.ClusterRoles = append(p.ClusterRoles, rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "broken"},
		AggregationRule: &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{
			MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "k", Operator: "Sometimes"}},
		}}},
	})
	if _, err := p.Aggregated(); err == nil || !strings.Contains(err.Error(), "clusterrole broken") {
		t.Errorf("got %v, want an error naming clusterrole broken", err)
	}
}
