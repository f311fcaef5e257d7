package rbac

import (
	"context"
	"fmt"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	rbacvalidation "k8s.io/component-helpers/auth/rbac/validation"
)

// EscalationAllowed reports whether the requesting user is in
// system:masters, who may grant anything.
func EscalationAllowed(ctx context.Context) bool {
	u, ok := genericapirequest.UserFrom(ctx)
	return ok && slices.Contains(u.GetGroups(), user.SystemPrivilegedGroup)
}

// RoleEscalationAuthorized reports whether the requesting user holds the
// "escalate" verb on the role the request writes, which lets them put any
// rule into it.
func RoleEscalationAuthorized(ctx context.Context, a authorizer.Authorizer) bool {
	if a == nil {
		return false
	}
	u, ok := genericapirequest.UserFrom(ctx)
	if !ok {
		return false
	}
	info, ok := genericapirequest.RequestInfoFrom(ctx)
	if !ok || !info.IsResourceRequest {
		return false
	}
	decision, _, err := a.Authorize(ctx, authorizer.AttributesRecord{
		User:            u,
		Verb:            "escalate",
		APIGroup:        info.APIGroup,
		APIVersion:      "*",
		Resource:        info.Resource,
		Name:            info.Name,
		Namespace:       info.Namespace,
		ResourceRequest: true,
	})
	return err == nil && decision == authorizer.DecisionAllow
}

// BindingAuthorized reports whether the requesting user holds the "bind"
// verb on the role ref refers to, checked in the binding's namespace ("" for
// a ClusterRoleBinding), which lets them bind it without holding its rules.
func BindingAuthorized(ctx context.Context, ref rbacv1.RoleRef, bindingNamespace string, a authorizer.Authorizer) bool {
	if a == nil {
		return false
	}
	u, ok := genericapirequest.UserFrom(ctx)
	if !ok {
		return false
	}
	attrs := authorizer.AttributesRecord{
		User:            u,
		Verb:            "bind",
		Namespace:       bindingNamespace,
		APIGroup:        ref.APIGroup,
		APIVersion:      "*",
		Name:            ref.Name,
		ResourceRequest: true,
	}
	switch ref.Kind {
	case "ClusterRole":
		attrs.Resource = "clusterroles"
	case "Role":
		attrs.Resource = "roles"
	default:
		return false
	}
	decision, _, err := a.Authorize(ctx, attrs)
	return err == nil && decision == authorizer.DecisionAllow
}

// ConfirmNoEscalation returns an error unless the requesting user already
// holds every one of rules in the request's namespace (cluster-wide for a
// cluster-scoped request). The message lists the missing rules like
// kube-apiserver's.
func ConfirmNoEscalation(ctx context.Context, r *Resolver, rules []rbacv1.PolicyRule) error {
	u, ok := genericapirequest.UserFrom(ctx)
	if !ok {
		return fmt.Errorf("no user on request")
	}
	namespace, _ := genericapirequest.NamespaceFrom(ctx)
	owned, resolveErr := r.RulesFor(ctx, u, namespace)
	covers, missing := rbacvalidation.Covers(owned, rules)
	if covers {
		return nil
	}
	var lines []string
	for _, m := range CompactRules(missing) {
		lines = append(lines, CompactString(m))
	}
	slices.Sort(lines)
	lines = slices.Compact(lines)
	msg := fmt.Sprintf("user %q (groups=%q) is attempting to grant RBAC permissions not currently held:\n%s", u.GetName(), u.GetGroups(), strings.Join(lines, "\n"))
	if resolveErr != nil {
		msg += fmt.Sprintf("; resolution errors: %v", resolveErr)
	}
	return fmt.Errorf("%s", msg)
}

// CompactRules merges the verbs of rules that name one API group, one
// resource and at most one resource name, so a list of broken-down rules
// reads as a few lines. Other rules are kept as they are.
func CompactRules(rules []rbacv1.PolicyRule) []rbacv1.PolicyRule {
	type key struct {
		group, resource, name string
		hasName               bool
	}
	var out []rbacv1.PolicyRule
	index := map[key]int{}
	for _, r := range rules {
		simple := len(r.APIGroups) == 1 && len(r.Resources) == 1 && len(r.ResourceNames) <= 1 && len(r.NonResourceURLs) == 0
		if !simple {
			out = append(out, *r.DeepCopy())
			continue
		}
		k := key{group: r.APIGroups[0], resource: r.Resources[0], hasName: len(r.ResourceNames) == 1}
		if k.hasName {
			k.name = r.ResourceNames[0]
		}
		if i, ok := index[k]; ok {
			for _, v := range r.Verbs {
				if !slices.Contains(out[i].Verbs, v) {
					out[i].Verbs = append(out[i].Verbs, v)
				}
			}
			continue
		}
		index[k] = len(out)
		out = append(out, *r.DeepCopy())
	}
	return out
}

// CompactString prints a rule on one line, leaving out empty fields:
// {APIGroups:["apps"], Resources:["deployments"], Verbs:["create"]}.
func CompactString(r rbacv1.PolicyRule) string {
	var parts []string
	for _, f := range []struct {
		name   string
		values []string
	}{
		{"APIGroups", r.APIGroups},
		{"Resources", r.Resources},
		{"NonResourceURLs", r.NonResourceURLs},
		{"ResourceNames", r.ResourceNames},
		{"Verbs", r.Verbs},
	} {
		if len(f.values) > 0 {
			parts = append(parts, fmt.Sprintf("%s:%q", f.name, f.values))
		}
	}
	return "{" + strings.Join(parts, ", ") + "}"
}
