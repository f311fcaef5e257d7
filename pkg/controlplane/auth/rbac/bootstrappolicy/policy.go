// Package bootstrappolicy holds gcp's default RBAC policy (the roles and
// bindings kube-apiserver ships, for the resources gcp serves, plus a role
// per gcp controller) and the post-start hook that reconciles it at every
// start without removing what users added.
//
// Every function returns freshly built objects; callers may modify them.
package bootstrappolicy

import (
	"slices"

	certificatesv1 "k8s.io/api/certificates/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

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

// Verb sets, as upstream names them.
func read() []string      { return []string{"get", "list", "watch"} }
func write() []string     { return []string{"create", "update", "patch", "delete", "deletecollection"} }
func readWrite() []string { return append(read(), write()...) }

// ruleBuilder builds one PolicyRule.
type ruleBuilder struct{ r rbacv1.PolicyRule }

func verbs(v ...string) *ruleBuilder {
	return &ruleBuilder{r: rbacv1.PolicyRule{Verbs: slices.Clone(v)}}
}

func (b *ruleBuilder) groups(g ...string) *ruleBuilder {
	b.r.APIGroups = append(b.r.APIGroups, g...)
	return b
}

func (b *ruleBuilder) resources(r ...string) *ruleBuilder {
	b.r.Resources = append(b.r.Resources, r...)
	return b
}

func (b *ruleBuilder) names(n ...string) *ruleBuilder {
	b.r.ResourceNames = append(b.r.ResourceNames, n...)
	return b
}

func (b *ruleBuilder) urls(u ...string) *ruleBuilder {
	b.r.NonResourceURLs = append(b.r.NonResourceURLs, u...)
	return b
}

func (b *ruleBuilder) rule() rbacv1.PolicyRule { return b.r }

// eventsRule lets a component record events in both event APIs.
func eventsRule() rbacv1.PolicyRule {
	return verbs("create", "update", "patch").groups(legacyGroup, eventsGroup).resources("events").rule()
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

// viewRules: read access to the non-escalating namespaced resources gcp
// serves (upstream's list minus pods, workloads, services and the like).
func viewRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		verbs(read()...).groups(legacyGroup).resources("serviceaccounts", "configmaps").rule(),
		verbs(read()...).groups(legacyGroup).resources("resourcequotas", "resourcequotas/status", "namespaces/status").rule(),
		// Reading namespaces at namespace scope means reading *this* one.
		verbs(read()...).groups(legacyGroup).resources("namespaces").rule(),
		verbs(read()...).groups(legacyGroup, eventsGroup).resources("events").rule(),
	}
}

// editRules: everything a user does in a namespace short of granting
// permissions; includes the escalating reads (secrets) view leaves out.
func editRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		verbs(read()...).groups(legacyGroup).resources("secrets").rule(),
		verbs("impersonate").groups(legacyGroup).resources("serviceaccounts").rule(),
		verbs(write()...).groups(legacyGroup).resources("serviceaccounts", "configmaps", "secrets").rule(),
		verbs("create").groups(legacyGroup).resources("serviceaccounts/token").rule(),
		verbs(write()...).groups(legacyGroup, eventsGroup).resources("events").rule(),
		verbs(readWrite()...).groups(coordinationGroup).resources("leases").rule(),
	}
}

// adminRules: edit plus granting permissions within the namespace.
func adminRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		verbs("create").groups(authorizationGroup).resources("localsubjectaccessreviews").rule(),
		verbs(readWrite()...).groups(rbacGroup).resources("roles", "rolebindings").rule(),
	}
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
// upstream's aggregation rules and also, until the clusterrole aggregation
// controller maintains them, the union of the rules of the bootstrap roles
// their selectors match.
func ClusterRoles() []rbacv1.ClusterRole {
	roles := []rbacv1.ClusterRole{
		// Can do anything.
		clusterRole("cluster-admin", nil,
			verbs("*").groups("*").resources("*").rule(),
			verbs("*").urls("*").rule()),
		// Enough to discover API versions and check health.
		clusterRole("system:discovery", nil,
			verbs("get").urls("/livez", "/readyz", "/healthz", "/version", "/version/",
				"/openapi", "/openapi/*", "/api", "/api/*", "/apis", "/apis/*").rule()),
		clusterRole("system:monitoring", nil,
			verbs("get").urls(monitoringURLs()...).rule()),
		// Lets a user learn about themselves.
		clusterRole("system:basic-user", nil,
			verbs("create").groups(authorizationGroup).resources("selfsubjectaccessreviews", "selfsubjectrulesreviews").rule(),
			verbs("create").groups(authenticationGroup).resources("selfsubjectreviews").rule()),
		clusterRole("system:public-info-viewer", nil,
			verbs("get").urls("/livez", "/readyz", "/healthz", "/version", "/version/").rule()),
		// Bind it to whoever may approve client certificate requests
		// (kubectl certificate approve).
		clusterRole("system:certificates.k8s.io:kube-apiserver-client-approver", nil,
			verbs("approve").groups(certificatesGroup).resources("signers").names(certificatesv1.KubeAPIServerClientSignerName).rule()),
		clusterRole("system:cluster-trust-bundle-discovery", nil,
			verbs(read()...).groups(certificatesGroup).resources("clustertrustbundles").rule()),

		aggregated("admin", nil, AggregateToAdmin),
		aggregated("edit", labelled(AggregateToAdmin), AggregateToEdit),
		aggregated("view", labelled(AggregateToEdit), AggregateToView),
		clusterRole("system:aggregate-to-admin", labelled(AggregateToAdmin), adminRules()...),
		clusterRole("system:aggregate-to-edit", labelled(AggregateToEdit), editRules()...),
		clusterRole("system:aggregate-to-view", labelled(AggregateToView), viewRules()...),

		// For servers delegating authentication and authorization to gcp.
		clusterRole("system:auth-delegator", nil,
			verbs("create").groups(authenticationGroup).resources("tokenreviews").rule(),
			verbs("create").groups(authorizationGroup).resources("subjectaccessreviews").rule()),
		// Also allow the slash-terminated forms, as upstream does for
		// clients generated from older OpenAPI documents.
		clusterRole("system:service-account-issuer-discovery", nil,
			verbs("get").urls("/.well-known/openid-configuration", "/.well-known/openid-configuration/",
				"/openid/v1/jwks", "/openid/v1/jwks/").rule()),

		controllerManagerRole(),
	}
	roles = append(roles, controllerRoles()...)
	fillAggregated(roles)
	return roles
}

// fillAggregated sets the rules of every aggregated role to the union of
// the rules of the other roles its selectors match, as the aggregation
// controller would. It repeats until nothing changes so that nested
// aggregation (view into edit into admin) settles whatever the order.
func fillAggregated(roles []rbacv1.ClusterRole) {
	for changed := true; changed; {
		changed = false
		for i := range roles {
			target := &roles[i]
			if target.AggregationRule == nil {
				continue
			}
			var rules []rbacv1.PolicyRule
			for _, sel := range target.AggregationRule.ClusterRoleSelectors {
				s, err := metav1.LabelSelectorAsSelector(&sel)
				if err != nil {
					panic(err) // static policy data is broken
				}
				for j, r := range roles {
					if j == i || !s.Matches(labels.Set(r.Labels)) {
						continue
					}
					for _, rule := range r.Rules {
						if !slices.ContainsFunc(rules, func(have rbacv1.PolicyRule) bool { return equalRules(have, rule) }) {
							rules = append(rules, *rule.DeepCopy())
						}
					}
				}
			}
			if !slices.EqualFunc(rules, target.Rules, equalRules) {
				target.Rules = rules
				changed = true
			}
		}
	}
}

func equalRules(a, b rbacv1.PolicyRule) bool {
	return slices.Equal(a.Verbs, b.Verbs) && slices.Equal(a.APIGroups, b.APIGroups) && slices.Equal(a.Resources, b.Resources) &&
		slices.Equal(a.ResourceNames, b.ResourceNames) && slices.Equal(a.NonResourceURLs, b.NonResourceURLs)
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
	return append(bindings, controllerRoleBindings()...)
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
			verbs(read()...).groups(legacyGroup).resources("configmaps").names(extensionAuthenticationCMName).rule()),
		// Leader election of the controller managers on any Lease in
		// kube-system (--leader-elect-resource-name may name another).
		role(leaderLockingRole,
			verbs("get", "watch", "list", "create", "update").groups(coordinationGroup).resources("leases").rule()),
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
