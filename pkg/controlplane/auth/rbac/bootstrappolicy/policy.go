// Package bootstrappolicy holds gcp's default RBAC policy (the roles and
// bindings kube-apiserver ships, for the resources gcp serves, plus the
// controller manager's own; each controller's role is built from its
// descriptor with ControllerPolicy, and what admin, edit and view may do
// with a group comes from the group's layer with UserRoles) and the
// post-start hook that reconciles it at every start without removing what
// users added.
//
// Every function returns freshly built objects; callers may modify them.
package bootstrappolicy

import (
	"slices"

	certificatesv1 "k8s.io/api/certificates/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gcp-project/gcp/pkg/controlplane/auth/pki"
)

// ControllersUser is the identity gcp's controller manager authenticates
// as (the CN of the PKI's controllers certificate).
const ControllersUser = pki.ControllersUser

const (
	// BootstrappingLabel and BootstrappingLabelValue mark every object of
	// the policy, as upstream does.
	BootstrappingLabel      = "kubernetes.io/bootstrapping"
	BootstrappingLabelValue = "rbac-defaults"

	// AggregateToAdmin, AggregateToEdit and AggregateToView are the labels
	// the admin, edit and view ClusterRoles aggregate on (value "true").
	AggregateToAdmin = "rbac.authorization.k8s.io/aggregate-to-admin"
	AggregateToEdit  = "rbac.authorization.k8s.io/aggregate-to-edit"
	AggregateToView  = "rbac.authorization.k8s.io/aggregate-to-view"

	systemNamespace = metav1.NamespaceSystem

	// controllersLease is the Lease in kube-system gcp's controller
	// managers elect a leader with (controllers.LeaseName; not imported to
	// keep this package free of the controllers' dependencies).
	controllersLease = "gcp-controllers"

	leaderLockingRole             = "system::leader-locking-gcp-controllers"
	extensionAuthenticationRead   = "extension-apiserver-authentication-reader"
	extensionAuthenticationCMName = "extension-apiserver-authentication"
)

// API groups the policy names.
const (
	legacyGroup                = ""
	eventsGroup                = "events.k8s.io"
	coordinationGroup          = "coordination.k8s.io"
	authenticationGroup        = "authentication.k8s.io"
	authorizationGroup         = "authorization.k8s.io"
	rbacGroup                  = rbacv1.GroupName
	certificatesGroup          = "certificates.k8s.io"
	admissionRegistrationGroup = "admissionregistration.k8s.io"
)

// ReadVerbs are the verbs that read (upstream's "Read" set).
func ReadVerbs() []string { return []string{"get", "list", "watch"} }

// WriteVerbs are the verbs that write (upstream's "Write" set).
func WriteVerbs() []string {
	return []string{"create", "update", "patch", "delete", "deletecollection"}
}

// ReadWriteVerbs are ReadVerbs and WriteVerbs.
func ReadWriteVerbs() []string { return append(ReadVerbs(), WriteVerbs()...) }

// RuleBuilder builds one PolicyRule, as upstream's rbac helpers do:
// NewRule("get", "list").Groups("").Resources("configmaps").Rule().
type RuleBuilder struct{ r rbacv1.PolicyRule }

// NewRule starts a rule allowing verbs.
func NewRule(verbs ...string) *RuleBuilder {
	return &RuleBuilder{r: rbacv1.PolicyRule{Verbs: slices.Clone(verbs)}}
}

func verbs(v ...string) *RuleBuilder { return NewRule(v...) }

// Groups adds API groups ("" is the core group).
func (b *RuleBuilder) Groups(g ...string) *RuleBuilder {
	b.r.APIGroups = append(b.r.APIGroups, g...)
	return b
}

// Resources adds resources, subresources as "resource/subresource".
func (b *RuleBuilder) Resources(r ...string) *RuleBuilder {
	b.r.Resources = append(b.r.Resources, r...)
	return b
}

// Names limits the rule to the named objects.
func (b *RuleBuilder) Names(n ...string) *RuleBuilder {
	b.r.ResourceNames = append(b.r.ResourceNames, n...)
	return b
}

// URLs adds non-resource URLs.
func (b *RuleBuilder) URLs(u ...string) *RuleBuilder {
	b.r.NonResourceURLs = append(b.r.NonResourceURLs, u...)
	return b
}

// Rule returns the rule built.
func (b *RuleBuilder) Rule() rbacv1.PolicyRule { return b.r }

// EventsRule lets a component record events in both event APIs.
func EventsRule() rbacv1.PolicyRule {
	return verbs("create", "update", "patch").Groups(legacyGroup, eventsGroup).Resources("events").Rule()
}

func objectMeta(name string, extraLabels map[string]string) metav1.ObjectMeta {
	l := map[string]string{BootstrappingLabel: BootstrappingLabelValue}
	for k, v := range extraLabels {
		l[k] = v
	}
	return metav1.ObjectMeta{Name: name, Labels: l, Annotations: map[string]string{rbacv1.AutoUpdateAnnotationKey: "true"}}
}

func clusterRole(name string, extraLabels map[string]string, rules ...rbacv1.PolicyRule) rbacv1.ClusterRole {
	return rbacv1.ClusterRole{ObjectMeta: objectMeta(name, extraLabels), Rules: rules}
}

// aggregated is a ClusterRole aggregating the roles labelled selectorLabel=true.
func aggregated(name string, extraLabels map[string]string, selectorLabel string) rbacv1.ClusterRole {
	r := clusterRole(name, extraLabels)
	r.AggregationRule = &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{
		{MatchLabels: map[string]string{selectorLabel: "true"}},
	}}
	return r
}

func labelled(key string) map[string]string { return map[string]string{key: "true"} }

func clusterBinding(name string, subjects ...rbacv1.Subject) rbacv1.ClusterRoleBinding {
	return rbacv1.ClusterRoleBinding{ObjectMeta: objectMeta(name, nil), Subjects: subjects,
		RoleRef: rbacv1.RoleRef{APIGroup: rbacGroup, Kind: "ClusterRole", Name: name}}
}

func groupSubject(name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacGroup, Name: name}
}

func userSubject(name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacGroup, Name: name}
}

func serviceAccountSubject(namespace, name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: namespace, Name: name}
}

func monitoringURLs() []string {
	return []string{
		"/metrics", "/metrics/slis",
		"/livez", "/readyz", "/healthz",
		"/livez/*", "/readyz/*", "/healthz/*",
		// upstream adds these while the ComponentFlagz and ComponentStatusz
		// gates are on, as they are by default.
		"/flagz", "/statusz",
	}
}

// ClusterRoles returns the default ClusterRoles. admin, edit and view carry
// upstream's aggregation rules and no rules of their own: each layer brings
// the roles they aggregate for its APIs (UserRoles), and Reconcile fills
// them in (Policy.Aggregated) until the clusterrole aggregation controller
// maintains them.
func ClusterRoles() []rbacv1.ClusterRole {
	roles := []rbacv1.ClusterRole{
		// Can do anything.
		clusterRole("cluster-admin", nil,
			verbs("*").Groups("*").Resources("*").Rule(),
			verbs("*").URLs("*").Rule()),
		// Enough to discover API versions and check health.
		clusterRole("system:discovery", nil,
			verbs("get").URLs("/livez", "/readyz", "/healthz", "/version", "/version/",
				"/openapi", "/openapi/*", "/api", "/api/*", "/apis", "/apis/*").Rule()),
		clusterRole("system:monitoring", nil,
			verbs("get").URLs(monitoringURLs()...).Rule()),
		// Lets a user learn about themselves.
		clusterRole("system:basic-user", nil,
			verbs("create").Groups(authorizationGroup).Resources("selfsubjectaccessreviews", "selfsubjectrulesreviews").Rule(),
			verbs("create").Groups(authenticationGroup).Resources("selfsubjectreviews").Rule()),
		clusterRole("system:public-info-viewer", nil,
			verbs("get").URLs("/livez", "/readyz", "/healthz", "/version", "/version/").Rule()),
		// Bind it to whoever may approve client certificate requests
		// (kubectl certificate approve).
		clusterRole("system:certificates.k8s.io:kube-apiserver-client-approver", nil,
			verbs("approve").Groups(certificatesGroup).Resources("signers").Names(certificatesv1.KubeAPIServerClientSignerName).Rule()),
		clusterRole("system:cluster-trust-bundle-discovery", nil,
			verbs(ReadVerbs()...).Groups(certificatesGroup).Resources("clustertrustbundles").Rule()),

		aggregated("admin", nil, AggregateToAdmin),
		aggregated("edit", labelled(AggregateToAdmin), AggregateToEdit),
		aggregated("view", labelled(AggregateToEdit), AggregateToView),

		// For servers delegating authentication and authorization to gcp.
		clusterRole("system:auth-delegator", nil,
			verbs("create").Groups(authenticationGroup).Resources("tokenreviews").Rule(),
			verbs("create").Groups(authorizationGroup).Resources("subjectaccessreviews").Rule()),
		// Also allow the slash-terminated forms, as upstream does for
		// clients generated from older OpenAPI documents.
		clusterRole("system:service-account-issuer-discovery", nil,
			verbs("get").URLs("/.well-known/openid-configuration", "/.well-known/openid-configuration/",
				"/openid/v1/jwks", "/openid/v1/jwks/").Rule()),

		controllerManagerRole(),
	}
	return roles
}

// ClusterRoleBindings returns the default ClusterRoleBindings; each is
// named after the ClusterRole it binds.
func ClusterRoleBindings() []rbacv1.ClusterRoleBinding {
	bindings := []rbacv1.ClusterRoleBinding{
		clusterBinding("cluster-admin", groupSubject("system:masters")),
		clusterBinding("system:monitoring", groupSubject("system:monitoring")),
		clusterBinding("system:discovery", groupSubject("system:authenticated")),
		clusterBinding("system:basic-user", groupSubject("system:authenticated")),
		clusterBinding("system:public-info-viewer", groupSubject("system:authenticated"), groupSubject("system:unauthenticated")),
		// Every workload may read the OIDC discovery documents of the
		// issuer of its own token.
		clusterBinding("system:service-account-issuer-discovery", groupSubject("system:serviceaccounts")),
		clusterBinding("system:cluster-trust-bundle-discovery", groupSubject("system:serviceaccounts")),
		clusterBinding(ControllersUser, userSubject(ControllersUser)),
	}
	return bindings
}

// NamespaceRoles returns the default Roles by namespace.
func NamespaceRoles() map[string][]rbacv1.Role {
	role := func(name string, rules ...rbacv1.PolicyRule) rbacv1.Role {
		r := rbacv1.Role{ObjectMeta: objectMeta(name, nil), Rules: rules}
		r.Namespace = systemNamespace
		return r
	}
	return map[string][]rbacv1.Role{systemNamespace: {
		// Lets servers find the client CA and request-header settings to
		// authenticate their own clients with.
		role(extensionAuthenticationRead,
			verbs(ReadVerbs()...).Groups(legacyGroup).Resources("configmaps").Names(extensionAuthenticationCMName).Rule()),
		// Leader election of the controller managers on any Lease in
		// kube-system (--leader-elect-resource-name may name another).
		role(leaderLockingRole,
			verbs("get", "watch", "list", "create", "update").Groups(coordinationGroup).Resources("leases").Rule()),
	}}
}

// NamespaceRoleBindings returns the default RoleBindings by namespace.
func NamespaceRoleBindings() map[string][]rbacv1.RoleBinding {
	binding := func(name, role string, subjects ...rbacv1.Subject) rbacv1.RoleBinding {
		b := rbacv1.RoleBinding{ObjectMeta: objectMeta(name, nil), Subjects: subjects,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacGroup, Kind: "Role", Name: role}}
		b.Namespace = systemNamespace
		return b
	}
	return map[string][]rbacv1.RoleBinding{systemNamespace: {
		binding(leaderLockingRole, leaderLockingRole, userSubject(ControllersUser)),
		// The controller manager authenticates its /metrics clients with the
		// client CA published there, as kube-controller-manager does.
		binding("system::extension-apiserver-authentication-reader", extensionAuthenticationRead, userSubject(ControllersUser)),
	}}
}
