package layering

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	genericapiserver "k8s.io/apiserver/pkg/server"
	rbacvalidation "k8s.io/component-helpers/auth/rbac/validation"

	"github.com/gcp-project/gcp/pkg/controlplane/auth/rbac/bootstrappolicy"
	"github.com/gcp-project/gcp/pkg/controlplane/registry"
)

// genericUserRoles is what admin, edit and view granted in the generic
// stack when policy.go listed every group's rules (before each layer
// brought its own), one verb on one resource (group/resource) a line.
var genericUserRoles = map[string][]string{
	"admin": {
		"create /configmaps",
		"create /events",
		"create /secrets",
		"create /serviceaccounts",
		"create /serviceaccounts/token",
		"create authorization.k8s.io/localsubjectaccessreviews",
		"create coordination.k8s.io/leases",
		"create events.k8s.io/events",
		"create rbac.authorization.k8s.io/rolebindings",
		"create rbac.authorization.k8s.io/roles",
		"delete /configmaps",
		"delete /events",
		"delete /secrets",
		"delete /serviceaccounts",
		"delete coordination.k8s.io/leases",
		"delete events.k8s.io/events",
		"delete rbac.authorization.k8s.io/rolebindings",
		"delete rbac.authorization.k8s.io/roles",
		"deletecollection /configmaps",
		"deletecollection /events",
		"deletecollection /secrets",
		"deletecollection /serviceaccounts",
		"deletecollection coordination.k8s.io/leases",
		"deletecollection events.k8s.io/events",
		"deletecollection rbac.authorization.k8s.io/rolebindings",
		"deletecollection rbac.authorization.k8s.io/roles",
		"get /configmaps",
		"get /events",
		"get /namespaces",
		"get /namespaces/status",
		"get /resourcequotas",
		"get /resourcequotas/status",
		"get /secrets",
		"get /serviceaccounts",
		"get coordination.k8s.io/leases",
		"get events.k8s.io/events",
		"get rbac.authorization.k8s.io/rolebindings",
		"get rbac.authorization.k8s.io/roles",
		"impersonate /serviceaccounts",
		"list /configmaps",
		"list /events",
		"list /namespaces",
		"list /namespaces/status",
		"list /resourcequotas",
		"list /resourcequotas/status",
		"list /secrets",
		"list /serviceaccounts",
		"list coordination.k8s.io/leases",
		"list events.k8s.io/events",
		"list rbac.authorization.k8s.io/rolebindings",
		"list rbac.authorization.k8s.io/roles",
		"patch /configmaps",
		"patch /events",
		"patch /secrets",
		"patch /serviceaccounts",
		"patch coordination.k8s.io/leases",
		"patch events.k8s.io/events",
		"patch rbac.authorization.k8s.io/rolebindings",
		"patch rbac.authorization.k8s.io/roles",
		"update /configmaps",
		"update /events",
		"update /secrets",
		"update /serviceaccounts",
		"update coordination.k8s.io/leases",
		"update events.k8s.io/events",
		"update rbac.authorization.k8s.io/rolebindings",
		"update rbac.authorization.k8s.io/roles",
		"watch /configmaps",
		"watch /events",
		"watch /namespaces",
		"watch /namespaces/status",
		"watch /resourcequotas",
		"watch /resourcequotas/status",
		"watch /secrets",
		"watch /serviceaccounts",
		"watch coordination.k8s.io/leases",
		"watch events.k8s.io/events",
		"watch rbac.authorization.k8s.io/rolebindings",
		"watch rbac.authorization.k8s.io/roles",
	},
	"edit": {
		"create /configmaps",
		"create /events",
		"create /secrets",
		"create /serviceaccounts",
		"create /serviceaccounts/token",
		"create coordination.k8s.io/leases",
		"create events.k8s.io/events",
		"delete /configmaps",
		"delete /events",
		"delete /secrets",
		"delete /serviceaccounts",
		"delete coordination.k8s.io/leases",
		"delete events.k8s.io/events",
		"deletecollection /configmaps",
		"deletecollection /events",
		"deletecollection /secrets",
		"deletecollection /serviceaccounts",
		"deletecollection coordination.k8s.io/leases",
		"deletecollection events.k8s.io/events",
		"get /configmaps",
		"get /events",
		"get /namespaces",
		"get /namespaces/status",
		"get /resourcequotas",
		"get /resourcequotas/status",
		"get /secrets",
		"get /serviceaccounts",
		"get coordination.k8s.io/leases",
		"get events.k8s.io/events",
		"impersonate /serviceaccounts",
		"list /configmaps",
		"list /events",
		"list /namespaces",
		"list /namespaces/status",
		"list /resourcequotas",
		"list /resourcequotas/status",
		"list /secrets",
		"list /serviceaccounts",
		"list coordination.k8s.io/leases",
		"list events.k8s.io/events",
		"patch /configmaps",
		"patch /events",
		"patch /secrets",
		"patch /serviceaccounts",
		"patch coordination.k8s.io/leases",
		"patch events.k8s.io/events",
		"update /configmaps",
		"update /events",
		"update /secrets",
		"update /serviceaccounts",
		"update coordination.k8s.io/leases",
		"update events.k8s.io/events",
		"watch /configmaps",
		"watch /events",
		"watch /namespaces",
		"watch /namespaces/status",
		"watch /resourcequotas",
		"watch /resourcequotas/status",
		"watch /secrets",
		"watch /serviceaccounts",
		"watch coordination.k8s.io/leases",
		"watch events.k8s.io/events",
	},
	"view": {
		"get /configmaps",
		"get /events",
		"get /namespaces",
		"get /namespaces/status",
		"get /resourcequotas",
		"get /resourcequotas/status",
		"get /serviceaccounts",
		"get events.k8s.io/events",
		"list /configmaps",
		"list /events",
		"list /namespaces",
		"list /namespaces/status",
		"list /resourcequotas",
		"list /resourcequotas/status",
		"list /serviceaccounts",
		"list events.k8s.io/events",
		"watch /configmaps",
		"watch /events",
		"watch /namespaces",
		"watch /namespaces/status",
		"watch /resourcequotas",
		"watch /resourcequotas/status",
		"watch /serviceaccounts",
		"watch events.k8s.io/events",
	},
}

// atoms spreads rules out into one verb on one resource (or URL) each, so
// rule sets that grant the same compare equal however they are grouped.
func atoms(rules []rbacv1.PolicyRule) []string {
	set := map[string]bool{}
	for _, r := range rules {
		for _, v := range r.Verbs {
			for _, u := range r.NonResourceURLs {
				set[v+" "+u] = true
			}
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					if len(r.ResourceNames) == 0 {
						set[fmt.Sprintf("%s %s/%s", v, g, res)] = true
					}
					for _, n := range r.ResourceNames {
						set[fmt.Sprintf("%s %s/%s/%s", v, g, res, n)] = true
					}
				}
			}
		}
	}
	out := make([]string, 0, len(set))
	for a := range set {
		out = append(out, a)
	}
	sort.Strings(out)
	return out
}

// atomRules turns atoms of resources ("verb group/resource") back into rules.
func atomRules(atoms []string) []rbacv1.PolicyRule {
	var rules []rbacv1.PolicyRule
	for _, a := range atoms {
		verb, gr, _ := strings.Cut(a, " ")
		group, resource, _ := strings.Cut(gr, "/")
		rules = append(rules, rbacv1.PolicyRule{Verbs: []string{verb}, APIGroups: []string{group}, Resources: []string{resource}})
	}
	return rules
}

func aggregatedRoles(t *testing.T, s Stack) map[string]rbacv1.ClusterRole {
	t.Helper()
	c, err := s.Compose()
	if err != nil {
		t.Fatal(err)
	}
	policy, err := c.Policy.Aggregated()
	if err != nil {
		t.Fatal(err)
	}
	roles := map[string]rbacv1.ClusterRole{}
	for _, r := range policy.ClusterRoles {
		if _, dup := roles[r.Name]; dup {
			t.Errorf("clusterrole %s twice", r.Name)
		}
		roles[r.Name] = r
	}
	return roles
}

// The layers' own user roles add up to exactly what admin, edit and view
// granted when the central policy listed them.
func TestGenericUserRolesUnchanged(t *testing.T) {
	roles := aggregatedRoles(t, Generic())
	for name, want := range genericUserRoles {
		if got := atoms(roles[name].Rules); !slices.Equal(got, want) {
			t.Errorf("%s grants\n%q\nwant\n%q", name, got, want)
		}
	}
}

func allows(rules []rbacv1.PolicyRule, verb, group, resource string) bool {
	ok, _ := rbacvalidation.Covers(rules, []rbacv1.PolicyRule{{Verbs: []string{verb}, APIGroups: []string{group}, Resources: []string{resource}}})
	return ok
}

// TestGenericUserRoles: admin, edit and view grant what upstream's do for
// the resources the generic stack serves, and not more.
func TestGenericUserRoles(t *testing.T) {
	roles := aggregatedRoles(t, Generic())
	type check struct {
		role, verb, group, resource string
		want                        bool
	}
	for _, c := range []check{
		{"view", "list", "", "configmaps", true},
		{"view", "watch", "", "serviceaccounts", true},
		{"view", "get", "", "namespaces", true},
		{"view", "get", "", "resourcequotas", true},
		{"view", "get", "events.k8s.io", "events", true},
		{"view", "get", "", "secrets", false},
		{"view", "get", "coordination.k8s.io", "leases", false},
		{"view", "create", "", "configmaps", false},
		{"view", "list", "rbac.authorization.k8s.io", "roles", false},
		{"edit", "get", "", "secrets", true},
		{"edit", "create", "", "secrets", true},
		{"edit", "deletecollection", "", "configmaps", true},
		{"edit", "create", "", "serviceaccounts/token", true},
		{"edit", "impersonate", "", "serviceaccounts", true},
		{"edit", "create", "", "events", true},
		{"edit", "watch", "coordination.k8s.io", "leases", true},
		{"edit", "create", "rbac.authorization.k8s.io", "rolebindings", false},
		{"edit", "update", "", "resourcequotas", false},
		{"edit", "update", "", "namespaces", false},
		{"admin", "create", "rbac.authorization.k8s.io", "rolebindings", true},
		{"admin", "escalate", "rbac.authorization.k8s.io", "roles", false},
		{"admin", "bind", "rbac.authorization.k8s.io", "roles", false},
		{"admin", "create", "authorization.k8s.io", "localsubjectaccessreviews", true},
		{"admin", "create", "", "resourcequotas", false},
		{"admin", "delete", "", "namespaces", false},
		{"admin", "list", "", "pods", false},
	} {
		if got := allows(roles[c.role].Rules, c.verb, c.group, c.resource); got != c.want {
			t.Errorf("%s %s %s/%s: %v, want %v", c.role, c.verb, c.group, c.resource, got, c.want)
		}
	}
}

// gizmos is a native API group as small as Compose needs: one group name.
type gizmos struct{}

func (gizmos) GroupName() string                          { return "gizmos.example.dev" }
func (gizmos) InstallScheme(scheme *runtime.Scheme) error { return nil }
func (gizmos) NewRESTStorage(registry.StorageOptions) (genericapiserver.APIGroupInfo, bool, error) {
	return genericapiserver.APIGroupInfo{}, false, nil
}

// gizmosUserRoles is what a group's package gives its layer's Policy.
func gizmosUserRoles() bootstrappolicy.Policy {
	return bootstrappolicy.UserRoles("gizmos.example.dev", bootstrappolicy.UserRules{
		View: []rbacv1.PolicyRule{bootstrappolicy.NewRule(bootstrappolicy.ReadVerbs()...).Groups("gizmos.example.dev").Resources("gizmos").Rule()},
		Edit: []rbacv1.PolicyRule{bootstrappolicy.NewRule(bootstrappolicy.WriteVerbs()...).Groups("gizmos.example.dev").Resources("gizmos").Rule()},
	})
}

// A native API group is its package plus one line in the stack, its RBAC
// included: admin, edit and view reach its resources through aggregation,
// and what they granted before stays.
func TestAGroupBringsItsUserRoles(t *testing.T) {
	stack := Generic().With(Layer{Name: "gizmos", APIGroups: []registry.APIGroup{gizmos{}}, Policy: gizmosUserRoles()})
	roles := aggregatedRoles(t, stack)
	for _, c := range []struct {
		role, verb string
		want       bool
	}{
		{"view", "list", true}, {"view", "create", false},
		{"edit", "list", true}, {"edit", "create", true}, {"edit", "deletecollection", true},
		{"admin", "watch", true}, {"admin", "delete", true},
	} {
		if ok := allows(roles[c.role].Rules, c.verb, "gizmos.example.dev", "gizmos"); ok != c.want {
			t.Errorf("%s %s gizmos: %v, want %v", c.role, c.verb, ok, c.want)
		}
	}
	for name, want := range genericUserRoles {
		if ok, missing := rbacvalidation.Covers(roles[name].Rules, atomRules(want)); !ok {
			t.Errorf("%s lost %v", name, missing)
		}
	}
	for _, name := range []string{"system:aggregate-to-view:gizmos.example.dev", "system:aggregate-to-edit:gizmos.example.dev"} {
		if _, ok := roles[name]; !ok {
			t.Errorf("clusterrole %s missing", name)
		}
	}
	if _, ok := roles["system:aggregate-to-admin:gizmos.example.dev"]; ok {
		t.Error("a role without rules was added")
	}
	// Without the layer, admin, edit and view do not grant gizmos.
	without := aggregatedRoles(t, Generic())
	for name := range genericUserRoles {
		if allows(without[name].Rules, "get", "gizmos.example.dev", "gizmos") {
			t.Errorf("%s grants gizmos without the gizmos layer", name)
		}
	}
}
