package authorization

import (
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/gcp-project/gcp/pkg/controlplane/auth/rbac/bootstrappolicy"
)

// UserRoles lets admin ask what others may do in its namespace
// (localsubjectaccessreviews), as upstream.
func UserRoles() bootstrappolicy.Policy {
	return bootstrappolicy.UserRoles(authorizationv1.GroupName, bootstrappolicy.UserRules{
		Admin: []rbacv1.PolicyRule{bootstrappolicy.NewRule("create").Groups(authorizationv1.GroupName).Resources("localsubjectaccessreviews").Rule()},
	})
}
