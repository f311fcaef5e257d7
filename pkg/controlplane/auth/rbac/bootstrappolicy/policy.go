// Package bootstrappolicy holds gcp's default RBAC policy (the roles and
// bindings kube-apiserver ships, for the resources gcp serves, plus a role
// per gcp controller) and the post-start hook that reconciles it at every
// start without removing what users added.
package bootstrappolicy

import (
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/gcp-project/gcp/pkg/controlplane/auth/pki"
)

// ControllersUser is the identity gcp's controllers authenticate as (the
// CN of the PKI's controllers certificate).
const ControllersUser = pki.ControllersUser

// Names of gcp's controllers; each runs as ServiceAccount kube-system/<name>
// with ClusterRole system:controller:<name>.
const (
	NamespaceController           = "namespace-controller"
	GarbageCollector              = "generic-garbage-collector"
	ServiceAccountController      = "service-account-controller"
	RootCACertPublisher           = "root-ca-cert-publisher"
	ClusterRoleAggregation        = "clusterrole-aggregation-controller"
	ResourceQuotaController       = "resourcequota-controller"
	controllerRolePrefix          = "system:controller:"
	aggregateLabelPrefix          = "rbac.authorization.k8s.io/aggregate-to-"
	autoUpdateAnnotation          = rbacv1.AutoUpdateAnnotationKey
	bootstrappingLabel            = "kubernetes.io/bootstrapping"
	bootstrappingLabelValue       = "rbac-defaults"
	extensionAuthenticationRead   = "extension-apiserver-authentication-reader"
	extensionAuthenticationCMName = "extension-apiserver-authentication"
)

var (
	read      = []string{"get", "list", "watch"}
	readWrite = []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}
	write     = []string{"create", "update", "patch", "delete", "deletecollection"}
)

func rule(verbs []string, group string, resources ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{Verbs: verbs, APIGroups: []string{group}, Resources: resources}
}

func urls(verbs []string, u ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{Verbs: verbs, NonResourceURLs: u}
}

func objectMeta(name string, labels map[string]string) metav1.ObjectMeta {
	l := map[string]string{bootstrappingLabel: bootstrappingLabelValue}
	for k, v := range labels {
		l[k] = v
	}
	return metav1.ObjectMeta{Name: name, Labels: l, Annotations: map[string]string{autoUpdateAnnotation: "true"}}
}

func clusterRole(name string, labels map[string]string, rules ...rbacv1.PolicyRule) rbacv1.ClusterRole {
	return rbacv1.ClusterRole{ObjectMeta: objectMeta(name, labels), Rules: rules}
}

func aggregated(name string, labels map[string]string, to string) rbacv1.ClusterRole {
	r := clusterRole(name, labels)
	r.AggregationRule = &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{aggregateLabelPrefix + to: "true"}}}}
	return r
}

func clusterBinding(name, role string, subjects ...rbacv1.Subject) rbacv1.ClusterRoleBinding {
	return rbacv1.ClusterRoleBinding{ObjectMeta: objectMeta(name, nil), Subjects: subjects,
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role}}
}

func group(name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: name}
}

func userSubject(name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: name}
}

func aggregateTo(to string) map[string]string {
	return map[string]string{aggregateLabelPrefix + to: "true"}
}

// ControllerNames lists gcp's controllers that have their own role.
func ControllerNames() []string {
	return []string{NamespaceController, GarbageCollector, ServiceAccountController, RootCACertPublisher, ClusterRoleAggregation, ResourceQuotaController}
}

func eventsRule() rbacv1.PolicyRule {
	return rbacv1.PolicyRule{Verbs: []string{"create", "update", "patch"}, APIGroups: []string{"", "events.k8s.io"}, Resources: []string{"events"}}
}

// controllerRoles are the ClusterRoles of gcp's controllers.
func controllerRoles() []rbacv1.ClusterRole {
	return []rbacv1.ClusterRole{
		clusterRole(controllerRolePrefix+NamespaceController, nil,
			rule([]string{"get", "list", "watch", "delete"}, "", "namespaces"),
			rule([]string{"update"}, "", "namespaces/finalize", "namespaces/status"),
			rbacv1.PolicyRule{Verbs: []string{"get", "list", "delete", "deletecollection"}, APIGroups: []string{"*"}, Resources: []string{"*"}},
			eventsRule()),
		clusterRole(controllerRolePrefix+GarbageCollector, nil,
			rbacv1.PolicyRule{Verbs: []string{"get", "list", "watch", "patch", "update", "delete"}, APIGroups: []string{"*"}, Resources: []string{"*"}},
			eventsRule()),
		clusterRole(controllerRolePrefix+ServiceAccountController, nil,
			rule([]string{"create"}, "", "serviceaccounts"),
			eventsRule()),
		clusterRole(controllerRolePrefix+RootCACertPublisher, nil,
			rule([]string{"create", "update"}, "", "configmaps"),
			eventsRule()),
		clusterRole(controllerRolePrefix+ClusterRoleAggregation, nil,
			rule([]string{"escalate", "get", "list", "watch", "update", "patch"}, rbacv1.GroupName, "clusterroles")),
		clusterRole(controllerRolePrefix+ResourceQuotaController, nil,
			rbacv1.PolicyRule{Verbs: []string{"list", "watch"}, APIGroups: []string{"*"}, Resources: []string{"*"}},
			rule([]string{"update"}, "", "resourcequotas/status"),
			eventsRule()),
	}
}

// ClusterRoles returns the default ClusterRoles. admin, edit and view carry
// their aggregation rules and, until the aggregation controller fills them,
// the rules of the bootstrap roles their selectors match.
func ClusterRoles() []rbacv1.ClusterRole {
	roles := []rbacv1.ClusterRole{
		clusterRole("cluster-admin", nil,
			rbacv1.PolicyRule{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}},
			urls([]string{"*"}, "*")),
		aggregated("admin", nil, "admin"),
		aggregated("edit", aggregateTo("admin"), "edit"),
		aggregated("view", aggregateTo("edit"), "view"),
		clusterRole("system:aggregate-to-admin", aggregateTo("admin"),
			rule(readWrite, rbacv1.GroupName, "roles", "rolebindings"),
			rule([]string{"create"}, "authorization.k8s.io", "localsubjectaccessreviews"),
			rule(write, "", "resourcequotas")),
		clusterRole("system:aggregate-to-edit", aggregateTo("edit"),
			rule([]string{"impersonate"}, "", "serviceaccounts"),
			rule(write, "", "configmaps", "secrets", "serviceaccounts"),
			rule([]string{"create"}, "", "serviceaccounts/token"),
			rule(read, "", "secrets"),
			rule(write, "coordination.k8s.io", "leases")),
		clusterRole("system:aggregate-to-view", aggregateTo("view"),
			rule(read, "", "configmaps", "events", "resourcequotas", "resourcequotas/status", "serviceaccounts", "namespaces/status"),
			rule(read, "", "namespaces"),
			rule(read, "events.k8s.io", "events"),
			rule(read, "coordination.k8s.io", "leases")),
		clusterRole("system:discovery", nil,
			urls([]string{"get"}, "/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez", "/openapi", "/openapi/*", "/readyz", "/version", "/version/")),
		clusterRole("system:basic-user", nil,
			rule([]string{"create"}, "authorization.k8s.io", "selfsubjectaccessreviews", "selfsubjectrulesreviews"),
			rule([]string{"create"}, "authentication.k8s.io", "selfsubjectreviews")),
		clusterRole("system:public-info-viewer", nil,
			urls([]string{"get"}, "/healthz", "/livez", "/readyz", "/version", "/version/")),
		clusterRole("system:auth-delegator", nil,
			rule([]string{"create"}, "authentication.k8s.io", "tokenreviews"),
			rule([]string{"create"}, "authorization.k8s.io", "subjectaccessreviews")),
		clusterRole("system:monitoring", nil,
			urls([]string{"get"}, "/metrics", "/metrics/slis", "/livez", "/readyz", "/healthz", "/livez/*", "/readyz/*", "/healthz/*")),
		clusterRole("system:service-account-issuer-discovery", nil,
			urls([]string{"get"}, "/.well-known/openid-configuration", "/.well-known/openid-configuration/", "/openid/v1/jwks", "/openid/v1/jwks/")),
		clusterRole(ControllersUser, nil,
			eventsRule(),
			rule([]string{"create"}, "coordination.k8s.io", "leases"),
			rule([]string{"get", "update"}, "coordination.k8s.io", "leases"),
			rule([]string{"create"}, "", "serviceaccounts/token"),
			rule([]string{"get", "create"}, "", "serviceaccounts"),
			rule(read, "", "secrets", "configmaps", "namespaces"),
			rule([]string{"create"}, "authentication.k8s.io", "tokenreviews"),
			rule([]string{"create"}, "authorization.k8s.io", "subjectaccessreviews")),
	}
	roles = append(roles, controllerRoles()...)
	fillAggregated(roles)
	return roles
}

// fillAggregated sets the rules of each aggregated role to the union of the
// rules of the roles its selectors match, innermost first (view, then edit,
// which matches view, then admin, which matches edit).
func fillAggregated(roles []rbacv1.ClusterRole) {
	for _, name := range []string{"view", "edit", "admin"} {
		var target *rbacv1.ClusterRole
		for i := range roles {
			if roles[i].Name == name {
				target = &roles[i]
			}
		}
		if target == nil || target.AggregationRule == nil {
			continue
		}
		var rules []rbacv1.PolicyRule
		for _, sel := range target.AggregationRule.ClusterRoleSelectors {
			s, err := metav1.LabelSelectorAsSelector(&sel)
			if err != nil {
				continue
			}
			for _, r := range roles {
				if r.Name != name && s.Matches(labels.Set(r.Labels)) {
					rules = append(rules, r.Rules...)
				}
			}
		}
		target.Rules = rules
	}
}

// ClusterRoleBindings returns the default ClusterRoleBindings.
func ClusterRoleBindings() []rbacv1.ClusterRoleBinding {
	bindings := []rbacv1.ClusterRoleBinding{
		clusterBinding("cluster-admin", "cluster-admin", group("system:masters")),
		clusterBinding("system:discovery", "system:discovery", group("system:authenticated")),
		clusterBinding("system:basic-user", "system:basic-user", group("system:authenticated")),
		clusterBinding("system:public-info-viewer", "system:public-info-viewer", group("system:authenticated"), group("system:unauthenticated")),
		clusterBinding("system:monitoring", "system:monitoring", group("system:monitoring")),
		clusterBinding("system:service-account-issuer-discovery", "system:service-account-issuer-discovery", group("system:serviceaccounts")),
		clusterBinding(ControllersUser, ControllersUser, userSubject(ControllersUser)),
	}
	for _, name := range ControllerNames() {
		bindings = append(bindings, clusterBinding(controllerRolePrefix+name, controllerRolePrefix+name,
			rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: "kube-system"}))
	}
	return bindings
}

// NamespaceRoles returns the default Roles by namespace.
func NamespaceRoles() map[string][]rbacv1.Role {
	reader := rbacv1.Role{ObjectMeta: objectMeta(extensionAuthenticationRead, nil), Rules: []rbacv1.PolicyRule{{
		Verbs: read, APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{extensionAuthenticationCMName},
	}}}
	reader.Namespace = "kube-system"
	leaderLocking := rbacv1.Role{ObjectMeta: objectMeta("system::leader-locking-gcp-controllers", nil), Rules: []rbacv1.PolicyRule{
		rule([]string{"watch"}, "", "configmaps"),
		{Verbs: []string{"get", "update"}, APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, ResourceNames: []string{"gcp-controllers"}},
	}}
	leaderLocking.Namespace = "kube-system"
	return map[string][]rbacv1.Role{"kube-system": {reader, leaderLocking}}
}

// NamespaceRoleBindings returns the default RoleBindings by namespace.
func NamespaceRoleBindings() map[string][]rbacv1.RoleBinding {
	binding := func(name, role string) rbacv1.RoleBinding {
		b := rbacv1.RoleBinding{ObjectMeta: objectMeta(name, nil),
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role},
			Subjects: []rbacv1.Subject{userSubject(ControllersUser)}}
		b.Namespace = "kube-system"
		return b
	}
	return map[string][]rbacv1.RoleBinding{"kube-system": {
		binding("system::leader-locking-gcp-controllers", "system::leader-locking-gcp-controllers"),
		// The controller manager authenticates its /metrics clients with the
		// client CA published there, as kube-controller-manager does.
		binding("system::extension-apiserver-authentication-reader", extensionAuthenticationRead),
	}}
}
