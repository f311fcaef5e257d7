package bootstrappolicy

import (
	certificatesv1 "k8s.io/api/certificates/v1"
	rbacv1 "k8s.io/api/rbac/v1"
)

// Names of gcp's controllers' service accounts. With service account
// credentials on, a controller runs as ServiceAccount kube-system/<name>,
// bound to ClusterRole system:controller:<name>.
const (
	NamespaceController      = "namespace-controller"
	GarbageCollector         = "generic-garbage-collector"
	ServiceAccountController = "service-account-controller"
	RootCACertPublisher      = "root-ca-cert-publisher"
	ClusterRoleAggregation   = "clusterrole-aggregation-controller"
	ResourceQuotaController  = "resourcequota-controller"
	// CertificateController runs the CSR signing and cleaner controllers.
	CertificateController = "certificate-controller"
	// ValidatingAdmissionPolicyStatusController keeps the type-checking
	// status of ValidatingAdmissionPolicies.
	ValidatingAdmissionPolicyStatusController = "validatingadmissionpolicy-status-controller"
)

// ControllerRolePrefix prefixes the name of each controller's ClusterRole
// and ClusterRoleBinding.
const ControllerRolePrefix = "system:controller:"

// ControllerNames lists gcp's controllers that have their own role.
func ControllerNames() []string {
	return []string{NamespaceController, GarbageCollector, ServiceAccountController, RootCACertPublisher, ClusterRoleAggregation, ResourceQuotaController,
		CertificateController, ValidatingAdmissionPolicyStatusController}
}

// controllerManagerRole is what the controller manager itself needs, as
// user ControllersUser: its informers, leader election, events, delegated
// authentication and authorization of its own endpoints, and minting the
// per-controller service account tokens.
func controllerManagerRole() rbacv1.ClusterRole {
	return clusterRole(ControllersUser, nil,
		eventsRule(),
		// Leader election.
		verbs("create").groups(coordinationGroup).resources("leases").rule(),
		verbs("get", "update").groups(coordinationGroup).resources("leases").names(controllersLease).rule(),
		// Per-controller credentials: the service account is looked up,
		// created when missing, and a token requested for it.
		verbs("create").groups(legacyGroup).resources("serviceaccounts").rule(),
		verbs("get").groups(legacyGroup).resources("namespaces", "secrets", "serviceaccounts", "configmaps").rule(),
		verbs("create").groups(legacyGroup).resources("serviceaccounts/token").rule(),
		// Delegated authentication and authorization; these creates do
		// not mutate anything.
		verbs("create").groups(authenticationGroup).resources("tokenreviews").rule(),
		verbs("create").groups(authorizationGroup).resources("subjectaccessreviews").rule(),
		// The shared informers run with the manager's own credentials.
		verbs("list", "watch").groups("*").resources("*").rule(),
	)
}

// controllerRoles are the ClusterRoles of gcp's controllers.
func controllerRoles() []rbacv1.ClusterRole {
	role := func(name string, rules ...rbacv1.PolicyRule) rbacv1.ClusterRole {
		return clusterRole(ControllerRolePrefix+name, nil, rules...)
	}
	return []rbacv1.ClusterRole{
		// Must mutate clusterroles in any way to keep aggregated ones whole.
		role(ClusterRoleAggregation,
			verbs("escalate", "get", "list", "watch", "update", "patch").groups(rbacGroup).resources("clusterroles").rule()),
		// Lists, watches, and updates or deletes dependents of any kind.
		role(GarbageCollector,
			verbs("get", "list", "watch", "patch", "update", "delete").groups("*").resources("*").rule(),
			eventsRule()),
		// Empties a terminating namespace of every kind, then finalizes it.
		role(NamespaceController,
			verbs("get", "list", "watch", "delete").groups(legacyGroup).resources("namespaces").rule(),
			verbs("update").groups(legacyGroup).resources("namespaces/finalize", "namespaces/status").rule(),
			verbs("get", "list", "watch", "delete", "deletecollection").groups("*").resources("*").rule()),
		// Counts usage of anything a quota may cover.
		role(ResourceQuotaController,
			verbs("list", "watch").groups("*").resources("*").rule(),
			verbs("update").groups(legacyGroup).resources("resourcequotas/status").rule(),
			eventsRule()),
		role(ServiceAccountController,
			verbs("create").groups(legacyGroup).resources("serviceaccounts").rule(),
			eventsRule()),
		role(RootCACertPublisher,
			verbs("create", "update").groups(legacyGroup).resources("configmaps").rule(),
			eventsRule()),
		// Signs approved CSRs for the signers it serves and deletes old ones.
		role(CertificateController,
			verbs("get", "list", "watch", "delete").groups(certificatesGroup).resources("certificatesigningrequests").rule(),
			verbs("update").groups(certificatesGroup).resources("certificatesigningrequests/status", "certificatesigningrequests/approval").rule(),
			verbs("sign").groups(certificatesGroup).resources("signers").names(certificatesv1.KubeAPIServerClientSignerName).rule(),
			verbs("create").groups(authorizationGroup).resources("subjectaccessreviews").rule(),
			eventsRule()),
		role(ValidatingAdmissionPolicyStatusController,
			verbs("get", "list", "watch").groups(admissionRegistrationGroup).resources("validatingadmissionpolicies").rule(),
			verbs("get", "patch", "update").groups(admissionRegistrationGroup).resources("validatingadmissionpolicies/status").rule(),
			eventsRule()),
	}
}

// controllerRoleBindings bind each controller's ClusterRole to its
// service account in kube-system.
func controllerRoleBindings() []rbacv1.ClusterRoleBinding {
	var bindings []rbacv1.ClusterRoleBinding
	for _, name := range ControllerNames() {
		bindings = append(bindings, clusterBinding(ControllerRolePrefix+name, serviceAccountSubject(systemNamespace, name)))
	}
	return bindings
}
