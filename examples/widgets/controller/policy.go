package controller

import (
	rbacv1 "k8s.io/api/rbac/v1"

	v1 "example.dev/widgets/apis/widgets/v1"
)

// Rules are what the controller's ServiceAccount may do: watch widgets,
// write their status and record events. The descriptor carries them; the
// stack makes them ClusterRole system:controller:widget-controller, bound
// to ServiceAccount kube-system/widget-controller.
func Rules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
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
	}
}
