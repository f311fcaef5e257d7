package rbac

import (
	"context"
	"fmt"
	"strings"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/tools/cache"
)

// Authorizer allows a request when a rule the user holds matches it, and
// has no opinion otherwise (so the chain ends in 403).
type Authorizer struct {
	resolver *Resolver
	// synced, when set, are done when the caches the resolver reads have
	// loaded; until they are, a request they do not allow waits for them
	// (see Authorize).
	synced []cache.DoneChecker
}

// cacheWait is how long a request RBAC does not allow waits for the role
// and binding caches to load, at most. They load within a second of a
// start unless etcd holds a great many bindings or is slow to answer.
const cacheWait = 10 * time.Second

var (
	_ authorizer.Authorizer   = &Authorizer{}
	_ authorizer.RuleResolver = &Authorizer{}
)

// New returns an authorizer over resolver.
func New(resolver *Resolver) *Authorizer {
	return &Authorizer{resolver: resolver}
}

// Authorize implements authorizer.Authorizer. An API server serves before
// its role and binding caches have loaded, so a request that they do not
// allow yet waits for them (up to cacheWait, or its own deadline) and is
// decided again: kube-apiserver answers 403 there, and a client that
// came in that second (a controller at an API server just restarted) was
// refused what it may do (kubernetes/kubernetes#121635).
func (a *Authorizer) Authorize(ctx context.Context, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	decision, reason, err := a.authorize(ctx, attrs)
	if decision == authorizer.DecisionAllow || allDone(a.synced) {
		return decision, reason, err
	}
	ctx, cancel := context.WithTimeout(ctx, cacheWait)
	defer cancel()
	if !cache.WaitFor(ctx, "", a.synced...) {
		return decision, "RBAC: the role and binding caches have not loaded yet (the API server is starting)", err
	}
	return a.authorize(ctx, attrs)
}

func (a *Authorizer) authorize(ctx context.Context, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	var (
		allowed bool
		reason  string
		errs    []error
	)
	a.resolver.VisitRulesFor(ctx, attrs.GetUser(), attrs.GetNamespace(), func(source fmt.Stringer, rule *rbacv1.PolicyRule, err error) bool {
		if rule != nil && RuleAllows(attrs, rule) {
			allowed = true
			reason = fmt.Sprintf("RBAC: allowed by %s", source)
			return false
		}
		if err != nil {
			errs = append(errs, err)
		}
		return true
	})
	if allowed {
		return authorizer.DecisionAllow, reason, nil
	}
	if len(errs) > 0 {
		return authorizer.DecisionNoOpinion, fmt.Sprintf("RBAC: %v", utilerrors.NewAggregate(errs)), nil
	}
	return authorizer.DecisionNoOpinion, "", nil
}

// ConditionsAwareAuthorize implements authorizer.Authorizer; RBAC decisions
// are never conditional.
func (a *Authorizer) ConditionsAwareAuthorize(ctx context.Context, attrs authorizer.Attributes) authorizer.ConditionsAwareDecision {
	return authorizer.ConditionsAwareDecisionFromParts(a.Authorize(ctx, attrs))
}

// EvaluateConditions implements authorizer.Authorizer; RBAC has no
// conditions to evaluate, so it fails closed.
func (a *Authorizer) EvaluateConditions(context.Context, authorizer.ConditionsAwareDecision, authorizer.ConditionsData) (authorizer.Decision, string, error) {
	return authorizer.DecisionDeny, "", authorizer.ErrorConditionEvaluationNotSupported
}

// RulesFor implements authorizer.RuleResolver, for SelfSubjectRulesReview.
// The list is never incomplete by design; resolution errors are returned.
func (a *Authorizer) RulesFor(ctx context.Context, u user.Info, namespace string) ([]authorizer.ResourceRuleInfo, []authorizer.NonResourceRuleInfo, bool, error) {
	rules, err := a.resolver.RulesFor(ctx, u, namespace)
	var resourceRules []authorizer.ResourceRuleInfo
	var nonResourceRules []authorizer.NonResourceRuleInfo
	for _, r := range rules {
		if len(r.Resources) > 0 {
			resourceRules = append(resourceRules, &authorizer.DefaultResourceRuleInfo{
				Verbs: r.Verbs, APIGroups: r.APIGroups, Resources: r.Resources, ResourceNames: r.ResourceNames,
			})
		}
		if len(r.NonResourceURLs) > 0 {
			nonResourceRules = append(nonResourceRules, &authorizer.DefaultNonResourceRuleInfo{
				Verbs: r.Verbs, NonResourceURLs: r.NonResourceURLs,
			})
		}
	}
	return resourceRules, nonResourceRules, false, err
}

// RuleAllows reports whether rule matches the request.
func RuleAllows(attrs authorizer.Attributes, rule *rbacv1.PolicyRule) bool {
	if !matchesOrStar(rule.Verbs, attrs.GetVerb()) {
		return false
	}
	if !attrs.IsResourceRequest() {
		return nonResourceURLMatches(rule.NonResourceURLs, attrs.GetPath())
	}
	resource := attrs.GetResource()
	if sub := attrs.GetSubresource(); sub != "" {
		resource += "/" + sub
	}
	return matchesOrStar(rule.APIGroups, attrs.GetAPIGroup()) &&
		resourceMatches(rule.Resources, resource, attrs.GetSubresource()) &&
		(len(rule.ResourceNames) == 0 || contains(rule.ResourceNames, attrs.GetName()))
}

// resourceMatches matches "resource" or "resource/subresource" against the
// rule's resources, where "*" is every resource and "*/sub" is subresource
// sub of every resource.
func resourceMatches(ruleResources []string, resource, subresource string) bool {
	for _, r := range ruleResources {
		switch {
		case r == rbacv1.ResourceAll, r == resource:
			return true
		case subresource != "" && r == "*/"+subresource:
			return true
		}
	}
	return false
}

// nonResourceURLMatches matches path exactly, or by prefix when the rule's
// URL ends in "*".
func nonResourceURLMatches(ruleURLs []string, path string) bool {
	for _, u := range ruleURLs {
		switch {
		case u == rbacv1.NonResourceAll, u == path:
			return true
		case strings.HasSuffix(u, "*") && strings.HasPrefix(path, strings.TrimRight(u, "*")):
			return true
		}
	}
	return false
}

func matchesOrStar(values []string, v string) bool {
	for _, x := range values {
		if x == "*" || x == v {
			return true
		}
	}
	return false
}

func contains(values []string, v string) bool {
	for _, x := range values {
		if x == v {
			return true
		}
	}
	return false
}

// allDone says whether every checker is done, without waiting.
func allDone(checkers []cache.DoneChecker) bool {
	for _, c := range checkers {
		if !cache.IsDone(c) {
			return false
		}
	}
	return true
}
