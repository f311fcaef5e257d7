package layering

import (
	"slices"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	rbacvalidation "k8s.io/component-helpers/auth/rbac/validation"

	"github.com/gcp-project/gcp/pkg/controlplane/auth/rbac/bootstrappolicy"
	"github.com/gcp-project/gcp/pkg/controlplane/controllers"
)

// composedPolicy composes s and returns its cluster roles and the subjects
// of its cluster role bindings, by name.
func composedPolicy(t *testing.T, s Stack) (map[string]rbacv1.ClusterRole, map[string][]rbacv1.Subject) {
	t.Helper()
	c, err := s.Compose()
	if err != nil {
		t.Fatal(err)
	}
	roles := map[string]rbacv1.ClusterRole{}
	for _, r := range c.Policy.ClusterRoles {
		if _, ok := roles[r.Name]; ok {
			t.Errorf("cluster role %s twice", r.Name)
		}
		roles[r.Name] = r
	}
	subjects := map[string][]rbacv1.Subject{}
	for _, b := range c.Policy.ClusterRoleBindings {
		if _, ok := subjects[b.Name]; ok {
			t.Errorf("cluster role binding %s twice", b.Name)
		}
		subjects[b.Name] = b.Subjects
	}
	return roles, subjects
}

// TestControllerRolesFollowTheirLayer: a controller's role and binding
// are reconciled while its layer is in the stack, and not once it is
// taken out: without the certificates layer there is no
// system:controller:certificate-controller.
func TestControllerRolesFollowTheirLayer(t *testing.T) {
	const certificateController = bootstrappolicy.ControllerRolePrefix + "certificate-controller"
	roles, subjects := composedPolicy(t, Generic())
	if _, ok := roles[certificateController]; !ok {
		t.Errorf("the generic stack has no role %s", certificateController)
	}
	if _, ok := subjects[certificateController]; !ok {
		t.Errorf("the generic stack has no binding %s", certificateController)
	}

	roles, subjects = composedPolicy(t, Generic().Without(Certificates))
	if _, ok := roles[certificateController]; ok {
		t.Errorf("without the certificates layer, the stack still has role %s", certificateController)
	}
	if _, ok := subjects[certificateController]; ok {
		t.Errorf("without the certificates layer, the stack still has binding %s", certificateController)
	}
	if _, ok := roles[bootstrappolicy.ControllerRolePrefix+"namespace-controller"]; !ok {
		t.Error("without the certificates layer, the stack lost the namespace controller's role")
	}
}

// TestGenericControllerRoles: every controller of the generic stack runs
// as kube-controller-manager's service account for it, bound to its role
// in kube-system, and the roles allow what the controllers do.
func TestGenericControllerRoles(t *testing.T) {
	c, err := Generic().Compose()
	if err != nil {
		t.Fatal(err)
	}
	wantAccounts := map[string]string{
		"namespace-controller":                         "namespace-controller",
		"garbage-collector-controller":                 "generic-garbage-collector",
		"serviceaccount-controller":                    "service-account-controller",
		"root-ca-certificate-publisher-controller":     "root-ca-cert-publisher",
		"resourcequota-controller":                     "resourcequota-controller",
		"clusterrole-aggregation-controller":           "clusterrole-aggregation-controller",
		"validatingadmissionpolicy-status-controller":  "validatingadmissionpolicy-status-controller",
		"certificatesigningrequest-signing-controller": "certificate-controller",
		"certificatesigningrequest-cleaner-controller": "certificate-controller",
	}
	if len(c.Controllers) != len(wantAccounts) {
		t.Errorf("%d controllers, want %d", len(c.Controllers), len(wantAccounts))
	}
	roles, subjects := composedPolicy(t, Generic())
	for _, d := range c.Controllers {
		if d.ServiceAccount != wantAccounts[d.Name] {
			t.Errorf("controller %s runs as %q, want %q", d.Name, d.ServiceAccount, wantAccounts[d.Name])
		}
		name := bootstrappolicy.ControllerRolePrefix + d.ServiceAccount
		if _, ok := roles[name]; !ok {
			t.Errorf("controller %s: no role %s", d.Name, name)
		}
		want := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: "kube-system", Name: d.ServiceAccount}
		if !slices.Equal(subjects[name], []rbacv1.Subject{want}) {
			t.Errorf("controller %s: binding %s has subjects %v, want %v", d.Name, name, subjects[name], want)
		}
	}
	for _, tc := range []struct{ account, verb, group, resource string }{
		{"namespace-controller", "deletecollection", "example.com", "widgets"},
		{"namespace-controller", "update", "", "namespaces/finalize"},
		{"generic-garbage-collector", "patch", "example.com", "widgets"},
		{"service-account-controller", "create", "", "serviceaccounts"},
		{"root-ca-cert-publisher", "update", "", "configmaps"},
		{"clusterrole-aggregation-controller", "escalate", "rbac.authorization.k8s.io", "clusterroles"},
		{"resourcequota-controller", "update", "", "resourcequotas/status"},
		{"certificate-controller", "update", "certificates.k8s.io", "certificatesigningrequests/status"},
		{"certificate-controller", "delete", "certificates.k8s.io", "certificatesigningrequests"},
		{"validatingadmissionpolicy-status-controller", "patch", "admissionregistration.k8s.io", "validatingadmissionpolicies/status"},
	} {
		rule := rbacv1.PolicyRule{Verbs: []string{tc.verb}, APIGroups: []string{tc.group}, Resources: []string{tc.resource}}
		if ok, _ := rbacvalidation.Covers(roles[bootstrappolicy.ControllerRolePrefix+tc.account].Rules, []rbacv1.PolicyRule{rule}); !ok {
			t.Errorf("%s may not %s %s/%s", tc.account, tc.verb, tc.group, tc.resource)
		}
	}
}

// TestSharedServiceAccount: controllers sharing a service account get one
// role with the union of their rules, each rule once.
func TestSharedServiceAccount(t *testing.T) {
	get := rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{"example.dev"}, Resources: []string{"widgets"}}
	del := rbacv1.PolicyRule{Verbs: []string{"delete"}, APIGroups: []string{"example.dev"}, Resources: []string{"widgets"}}
	roles, subjects := composedPolicy(t, Stack{{Name: "mine", Controllers: []controllers.Descriptor{
		{Name: "a", ServiceAccount: "shared", Rules: []rbacv1.PolicyRule{get}},
		{Name: "b", ServiceAccount: "shared", Rules: []rbacv1.PolicyRule{get, del}},
		{Name: "c"},
	}}})
	if len(roles) != 1 || len(subjects) != 1 {
		t.Fatalf("roles %v, bindings %v; want one of each", roles, subjects)
	}
	if got := roles["system:controller:shared"].Rules; len(got) != 2 {
		t.Errorf("shared role has rules %v, want get and delete once each", got)
	}
}
