package bootstrappolicy

import (
	rbacv1 "k8s.io/api/rbac/v1"
)

// ControllerRolePrefix prefixes the name of each controller's ClusterRole
// and ClusterRoleBinding. A controller's service account and rules are in
// its controllers.Descriptor; layering composes them into a Policy with
// ControllerPolicy, so a controller's role is reconciled exactly while its
// layer is in the stack.
const ControllerRolePrefix = "system:controller:"

// controllerManagerRole is what the controller manager itself needs, as
// user ControllersUser: its informers, leader election, events, delegated
// authentication and authorization of its own endpoints, and minting the
// per-controller service account tokens.
func controllerManagerRole() rbacv1.ClusterRole {
	return clusterRole(ControllersUser, nil,
		EventsRule(),
		// Leader election.
		verbs("create").Groups(coordinationGroup).Resources("leases").Rule(),
		verbs("get", "update").Groups(coordinationGroup).Resources("leases").Names(controllersLease).Rule(),
		// Per-controller credentials: the service account is looked up,
		// created when missing, and a token requested for it.
		verbs("create").Groups(legacyGroup).Resources("serviceaccounts").Rule(),
		verbs("get").Groups(legacyGroup).Resources("namespaces", "secrets", "serviceaccounts", "configmaps").Rule(),
		verbs("create").Groups(legacyGroup).Resources("serviceaccounts/token").Rule(),
		// Delegated authentication and authorization; these creates do
		// not mutate anything.
		verbs("create").Groups(authenticationGroup).Resources("tokenreviews").Rule(),
		verbs("create").Groups(authorizationGroup).Resources("subjectaccessreviews").Rule(),
		// The shared informers run with the manager's own credentials.
		verbs("list", "watch").Groups("*").Resources("*").Rule(),
	)
}
