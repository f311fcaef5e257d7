package controller

import (
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/gcp-project/gcp/pkg/controlplane/auth/rbac/bootstrappolicy"

	v1 "example.dev/widgets/apis/widgets/v1"
)

// Policy is the controller's RBAC: ClusterRole
// system:controller:widget-controller, bound to ServiceAccount
// kube-system/widget-controller, allowing it to watch widgets, write
// their status and record events.
func Policy() bootstrappolicy.Policy {
	return bootstrappolicy.ControllerPolicy(ServiceAccount,
		rbacv1.PolicyRule{
			APIGroups: []string{v1.GroupName},
			Resources: []string{"widgets"},
			Verbs:     []string{"get", "list", "watch"},
		},
		rbacv1.PolicyRule{
			APIGroups: []string{v1.GroupName},
			Resources: []string{"widgets/status"},
			Verbs:     []string{"update", "patch"},
		},
		rbacv1.PolicyRule{
			APIGroups: []string{"", "events.k8s.io"},
			Resources: []string{"events"},
			Verbs:     []string{"create", "update", "patch"},
		},
	)
}
