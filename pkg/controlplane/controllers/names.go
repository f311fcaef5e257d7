package controllers

// Names of gcp's controllers, as --controllers takes them; each runs with
// the ServiceAccount kube-system/<ServiceAccount> (and its
// system:controller:<ServiceAccount> ClusterRole) when service account
// credentials are on.
const (
	NamespaceController      = "namespace-controller"
	GarbageCollector         = "garbage-collector-controller"
	ServiceAccountController = "serviceaccount-controller"
	RootCACertPublisher      = "root-ca-certificate-publisher-controller"
	ClusterRoleAggregation   = "clusterrole-aggregation-controller"
	ResourceQuotaController  = "resourcequota-controller"
	// CSRSigningController signs approved CertificateSigningRequests.
	CSRSigningController = "certificatesigningrequest-signing-controller"
	// CSRCleanerController deletes old CertificateSigningRequests.
	CSRCleanerController = "certificatesigningrequest-cleaner-controller"
	// ValidatingAdmissionPolicyStatusController type-checks
	// ValidatingAdmissionPolicies into their status.
	ValidatingAdmissionPolicyStatusController = "validatingadmissionpolicy-status-controller"
)
