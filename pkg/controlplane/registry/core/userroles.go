package core

import (
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/gcp-project/gcp/pkg/controlplane/auth/rbac/bootstrappolicy"
)

// UserRoles is what the default user-facing roles may do with the core
// group (upstream's system:aggregate-to-* rules for the resources gcp
// serves, without pods, workloads, services and the like): view reads the
// non-escalating resources, edit also reads secrets and writes what a user
// works with in a namespace; namespaces and quotas stay read-only.
func UserRoles() bootstrappolicy.Policy {
	read, write := bootstrappolicy.ReadVerbs(), bootstrappolicy.WriteVerbs()
	rule := bootstrappolicy.NewRule
	return bootstrappolicy.UserRoles("", bootstrappolicy.UserRules{
		View: []rbacv1.PolicyRule{
			rule(read...).Groups("").Resources("serviceaccounts", "configmaps").Rule(),
			rule(read...).Groups("").Resources("resourcequotas", "resourcequotas/status", "namespaces/status").Rule(),
			// Reading namespaces at namespace scope means reading *this* one.
			rule(read...).Groups("").Resources("namespaces").Rule(),
			rule(read...).Groups("").Resources("events").Rule(),
		},
		Edit: []rbacv1.PolicyRule{
			rule(read...).Groups("").Resources("secrets").Rule(),
			rule("impersonate").Groups("").Resources("serviceaccounts").Rule(),
			rule(write...).Groups("").Resources("serviceaccounts", "configmaps", "secrets").Rule(),
			rule("create").Groups("").Resources("serviceaccounts/token").Rule(),
			rule(write...).Groups("").Resources("events").Rule(),
		},
	})
}
