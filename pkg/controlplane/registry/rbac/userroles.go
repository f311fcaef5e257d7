package rbac

import (
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/gcp-project/gcp/pkg/controlplane/auth/rbac/bootstrappolicy"
)

// UserRoles lets admin grant permissions within its namespace: read and
// write roles and rolebindings (escalation prevention still limits it to
// what it holds), as upstream.
func UserRoles() bootstrappolicy.Policy {
	return bootstrappolicy.UserRoles(rbacv1.GroupName, bootstrappolicy.UserRules{
		Admin: []rbacv1.PolicyRule{bootstrappolicy.NewRule(bootstrappolicy.ReadWriteVerbs()...).Groups(rbacv1.GroupName).Resources("roles", "rolebindings").Rule()},
	})
}
