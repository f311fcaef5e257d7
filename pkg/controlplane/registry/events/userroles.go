package events

import (
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/gcp-project/gcp/pkg/controlplane/auth/rbac/bootstrappolicy"
)

// UserRoles lets view read events.k8s.io events and edit write them, as the
// core group's events.
func UserRoles() bootstrappolicy.Policy {
	return bootstrappolicy.UserRoles(eventsv1.GroupName, bootstrappolicy.UserRules{
		View: []rbacv1.PolicyRule{bootstrappolicy.NewRule(bootstrappolicy.ReadVerbs()...).Groups(eventsv1.GroupName).Resources("events").Rule()},
		Edit: []rbacv1.PolicyRule{bootstrappolicy.NewRule(bootstrappolicy.WriteVerbs()...).Groups(eventsv1.GroupName).Resources("events").Rule()},
	})
}
