// Package rbac is gcp's RBAC authorizer: it resolves the rules a user holds
// through RoleBindings and ClusterRoleBindings and allows a request when one
// of them matches, with kube-apiserver's semantics and messages. It also
// holds the escalation checks the rbac.authorization.k8s.io registry runs on
// writes. Upstream keeps the equivalent in k8s.io/kubernetes
// (plugin/pkg/auth/authorizer/rbac, pkg/registry/rbac/validation).
package rbac

import (
	"context"
	"fmt"
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/apiserver/pkg/authentication/user"
)

// RoleGetter reads a Role.
type RoleGetter interface {
	GetRole(ctx context.Context, namespace, name string) (*rbacv1.Role, error)
}

// RoleBindingLister lists the RoleBindings of a namespace.
type RoleBindingLister interface {
	ListRoleBindings(ctx context.Context, namespace string) ([]*rbacv1.RoleBinding, error)
}

// ClusterRoleGetter reads a ClusterRole.
type ClusterRoleGetter interface {
	GetClusterRole(ctx context.Context, name string) (*rbacv1.ClusterRole, error)
}

// ClusterRoleBindingLister lists every ClusterRoleBinding.
type ClusterRoleBindingLister interface {
	ListClusterRoleBindings(ctx context.Context) ([]*rbacv1.ClusterRoleBinding, error)
}

// UserRoleBindingLister is an optional, faster RoleBindingLister: it
// returns the bindings of namespace that may name u (a superset is fine;
// every subject is checked again).
type UserRoleBindingLister interface {
	ListRoleBindingsFor(ctx context.Context, u user.Info, namespace string) ([]*rbacv1.RoleBinding, error)
}

// UserClusterRoleBindingLister is the same for ClusterRoleBindings.
type UserClusterRoleBindingLister interface {
	ListClusterRoleBindingsFor(ctx context.Context, u user.Info) ([]*rbacv1.ClusterRoleBinding, error)
}

// Resolver finds the rules that apply to a user. The authorizer reads from
// informer caches; the registry's escalation checks read from storage.
type Resolver struct {
	roles               RoleGetter
	roleBindings        RoleBindingLister
	clusterRoles        ClusterRoleGetter
	clusterRoleBindings ClusterRoleBindingLister
}

// NewResolver returns a resolver over the four sources.
func NewResolver(roles RoleGetter, roleBindings RoleBindingLister, clusterRoles ClusterRoleGetter, clusterRoleBindings ClusterRoleBindingLister) *Resolver {
	return &Resolver{roles: roles, roleBindings: roleBindings, clusterRoles: clusterRoles, clusterRoleBindings: clusterRoleBindings}
}

// RuleVisitor is called for each rule that applies (source and rule set) or
// each error met while resolving (err set); it returns false to stop.
type RuleVisitor func(source fmt.Stringer, rule *rbacv1.PolicyRule, err error) bool

// VisitRulesFor calls visit for every rule user holds cluster-wide and,
// when namespace is set, in namespace, until visit returns false.
func (r *Resolver) VisitRulesFor(ctx context.Context, u user.Info, namespace string, visit RuleVisitor) {
	var crbs []*rbacv1.ClusterRoleBinding
	var err error
	if l, ok := r.clusterRoleBindings.(UserClusterRoleBindingLister); ok {
		crbs, err = l.ListClusterRoleBindingsFor(ctx, u)
	} else {
		crbs, err = r.clusterRoleBindings.ListClusterRoleBindings(ctx)
	}
	if err != nil {
		if !visit(nil, nil, err) {
			return
		}
	}
	for _, b := range crbs {
		i, ok := appliesTo(u, b.Subjects, "")
		if !ok {
			continue
		}
		rules, err := r.GetRoleReferenceRules(ctx, b.RoleRef, "")
		if err != nil {
			if !visit(nil, nil, err) {
				return
			}
			continue
		}
		source := bindingSource{kind: "ClusterRoleBinding", name: b.Name, roleRef: b.RoleRef, subject: &b.Subjects[i]}
		for j := range rules {
			if !visit(source, &rules[j], nil) {
				return
			}
		}
	}
	if namespace == "" {
		return
	}
	var rbs []*rbacv1.RoleBinding
	if l, ok := r.roleBindings.(UserRoleBindingLister); ok {
		rbs, err = l.ListRoleBindingsFor(ctx, u, namespace)
	} else {
		rbs, err = r.roleBindings.ListRoleBindings(ctx, namespace)
	}
	if err != nil {
		visit(nil, nil, err)
		return
	}
	for _, b := range rbs {
		i, ok := appliesTo(u, b.Subjects, namespace)
		if !ok {
			continue
		}
		rules, err := r.GetRoleReferenceRules(ctx, b.RoleRef, namespace)
		if err != nil {
			if !visit(nil, nil, err) {
				return
			}
			continue
		}
		source := bindingSource{kind: "RoleBinding", name: b.Name + "/" + b.Namespace, namespace: b.Namespace, roleRef: b.RoleRef, subject: &b.Subjects[i]}
		for j := range rules {
			if !visit(source, &rules[j], nil) {
				return
			}
		}
	}
}

// RulesFor returns every rule user holds in namespace (cluster-wide rules
// included). Like upstream, the rules are returned even with an error: the
// error lists bindings whose role could not be resolved.
func (r *Resolver) RulesFor(ctx context.Context, u user.Info, namespace string) ([]rbacv1.PolicyRule, error) {
	var rules []rbacv1.PolicyRule
	var errs []error
	r.VisitRulesFor(ctx, u, namespace, func(_ fmt.Stringer, rule *rbacv1.PolicyRule, err error) bool {
		if rule != nil {
			rules = append(rules, *rule)
		}
		if err != nil {
			errs = append(errs, err)
		}
		return true
	})
	return rules, utilerrors.NewAggregate(errs)
}

// GetRoleReferenceRules returns the rules of the role a binding in
// bindingNamespace ("" for a ClusterRoleBinding) refers to.
func (r *Resolver) GetRoleReferenceRules(ctx context.Context, ref rbacv1.RoleRef, bindingNamespace string) ([]rbacv1.PolicyRule, error) {
	switch ref.Kind {
	case "Role":
		role, err := r.roles.GetRole(ctx, bindingNamespace, ref.Name)
		if err != nil {
			return nil, err
		}
		return role.Rules, nil
	case "ClusterRole":
		role, err := r.clusterRoles.GetClusterRole(ctx, ref.Name)
		if err != nil {
			return nil, err
		}
		return role.Rules, nil
	default:
		return nil, fmt.Errorf("unsupported role reference kind: %q", ref.Kind)
	}
}

// appliesTo returns the index of the first subject that matches u.
func appliesTo(u user.Info, subjects []rbacv1.Subject, namespace string) (int, bool) {
	for i := range subjects {
		if subjectMatches(u, &subjects[i], namespace) {
			return i, true
		}
	}
	return 0, false
}

// subjectMatches reports whether s names u. A ServiceAccount subject
// without a namespace means the binding's namespace.
func subjectMatches(u user.Info, s *rbacv1.Subject, namespace string) bool {
	switch s.Kind {
	case rbacv1.UserKind:
		return u.GetName() == s.Name
	case rbacv1.GroupKind:
		return slices.Contains(u.GetGroups(), s.Name)
	case rbacv1.ServiceAccountKind:
		ns := namespace
		if s.Namespace != "" {
			ns = s.Namespace
		}
		if ns == "" {
			return false
		}
		return serviceaccount.MatchesUsername(ns, s.Name, u.GetName())
	}
	return false
}

// bindingSource describes where an allowing rule came from, in upstream's
// words: `RoleBinding "dev-edit/team-a" of ClusterRole "edit" to Group "dev"`.
type bindingSource struct {
	kind, name, namespace string
	roleRef               rbacv1.RoleRef
	subject               *rbacv1.Subject
}

func (b bindingSource) String() string {
	subject := fmt.Sprintf("%s %q", b.subject.Kind, b.subject.Name)
	if b.subject.Kind == rbacv1.ServiceAccountKind {
		ns := b.subject.Namespace
		if ns == "" {
			ns = b.namespace
		}
		subject = fmt.Sprintf("%s %q", b.subject.Kind, b.subject.Name+"/"+ns)
	}
	return fmt.Sprintf("%s %q of %s %q to %s", b.kind, b.name, b.roleRef.Kind, b.roleRef.Name, subject)
}
