package bootstrappolicy

import (
	rbacv1 "k8s.io/api/rbac/v1"
)

// Policy is a set of RBAC objects reconciled at every start like the
// bootstrap policy: created when missing, missing rules and subjects added,
// nothing users added removed. A layer brings the roles its APIs and
// controllers need as a Policy.
type Policy struct {
	ClusterRoles        []rbacv1.ClusterRole
	ClusterRoleBindings []rbacv1.ClusterRoleBinding
	// Roles and RoleBindings are keyed by namespace; a missing namespace
	// is created.
	Roles        map[string][]rbacv1.Role
	RoleBindings map[string][]rbacv1.RoleBinding
}

// Merge returns p plus other.
func (p Policy) Merge(other Policy) Policy {
	out := Policy{
		ClusterRoles:        append(append([]rbacv1.ClusterRole(nil), p.ClusterRoles...), other.ClusterRoles...),
		ClusterRoleBindings: append(append([]rbacv1.ClusterRoleBinding(nil), p.ClusterRoleBindings...), other.ClusterRoleBindings...),
		Roles:               map[string][]rbacv1.Role{},
		RoleBindings:        map[string][]rbacv1.RoleBinding{},
	}
	for _, m := range []map[string][]rbacv1.Role{p.Roles, other.Roles} {
		for ns, roles := range m {
			out.Roles[ns] = append(out.Roles[ns], roles...)
		}
	}
	for _, m := range []map[string][]rbacv1.RoleBinding{p.RoleBindings, other.RoleBindings} {
		for ns, bindings := range m {
			out.RoleBindings[ns] = append(out.RoleBindings[ns], bindings...)
		}
	}
	return out
}

// Default is gcp's bootstrap policy: kube-apiserver's default roles and
// bindings for the resources gcp serves, and the controller manager's own
// role; each controller's role comes with its descriptor (layering adds it).
func Default() Policy {
	return Policy{
		ClusterRoles:        ClusterRoles(),
		ClusterRoleBindings: ClusterRoleBindings(),
		Roles:               NamespaceRoles(),
		RoleBindings:        NamespaceRoleBindings(),
	}
}

// ControllerPolicy is the RBAC of one controller running with its own
// credentials (the controller manager's default): ClusterRole
// system:controller:<serviceAccount> with rules, bound to ServiceAccount
// kube-system/<serviceAccount>, the identity
// c.ClientBuilder.Client(serviceAccount) gives the controller.
func ControllerPolicy(serviceAccount string, rules ...rbacv1.PolicyRule) Policy {
	name := ControllerRolePrefix + serviceAccount
	return Policy{
		ClusterRoles:        []rbacv1.ClusterRole{clusterRole(name, nil, rules...)},
		ClusterRoleBindings: []rbacv1.ClusterRoleBinding{clusterBinding(name, serviceAccountSubject(systemNamespace, serviceAccount))},
	}
}
