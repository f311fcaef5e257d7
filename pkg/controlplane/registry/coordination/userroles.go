package coordination

import (
	coordinationv1 "k8s.io/api/coordination/v1"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/gcp-project/gcp/pkg/controlplane/auth/rbac/bootstrappolicy"
)

// UserRoles lets edit read and write leases (leader election of a user's
// own workloads); view does not see them, as upstream.
func UserRoles() bootstrappolicy.Policy {
	return bootstrappolicy.UserRoles(coordinationv1.GroupName, bootstrappolicy.UserRules{
		Edit: []rbacv1.PolicyRule{bootstrappolicy.NewRule(bootstrappolicy.ReadWriteVerbs()...).Groups(coordinationv1.GroupName).Resources("leases").Rule()},
	})
}
