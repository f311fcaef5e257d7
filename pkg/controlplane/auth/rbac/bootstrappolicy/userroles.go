package bootstrappolicy

import (
	"fmt"
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// UserRules are what the default user-facing ClusterRoles may do with one
// layer's APIs: view reads what does not escalate, edit adds writes (and
// the escalating reads, such as secrets), admin adds granting
// permissions within a namespace. Each role aggregates the one below it,
// so a rule given to view need not be repeated for edit and admin.
type UserRules struct {
	Admin, Edit, View []rbacv1.PolicyRule
}

// UserRoles is the policy a layer brings so that admin, edit and view
// cover its APIs, as upstream's do through aggregation: ClusterRoles
// system:aggregate-to-admin, -edit and -view with r's rules, labelled to
// be aggregated into admin, edit and view. A role without rules is left
// out. owner names the roles apart: "" gives upstream's names (gcp's core
// group), any other owner (the API group the rules are for) gives
// system:aggregate-to-edit:<owner> and so on.
func UserRoles(owner string, r UserRules) Policy {
	var p Policy
	for _, role := range []struct {
		name, label string
		rules       []rbacv1.PolicyRule
	}{
		{"system:aggregate-to-admin", AggregateToAdmin, r.Admin},
		{"system:aggregate-to-edit", AggregateToEdit, r.Edit},
		{"system:aggregate-to-view", AggregateToView, r.View},
	} {
		if len(role.rules) == 0 {
			continue
		}
		name := role.name
		if owner != "" {
			name += ":" + owner
		}
		rules := make([]rbacv1.PolicyRule, len(role.rules))
		for i := range role.rules {
			rules[i] = *role.rules[i].DeepCopy()
		}
		p.ClusterRoles = append(p.ClusterRoles, clusterRole(name, labelled(role.label), rules...))
	}
	return p
}

// Aggregated returns p with the rules of every aggregating ClusterRole
// (admin, edit and view) set to the union of the rules of the policy's
// roles its selectors match, as the clusterrole aggregation controller
// sets them: Reconcile writes the roles complete, so they grant what they
// should before that controller runs, or without it. p is not changed.
func (p Policy) Aggregated() (Policy, error) {
	out := p
	out.ClusterRoles = make([]rbacv1.ClusterRole, len(p.ClusterRoles))
	for i := range p.ClusterRoles {
		out.ClusterRoles[i] = *p.ClusterRoles[i].DeepCopy()
	}
	if err := fillAggregated(out.ClusterRoles); err != nil {
		return Policy{}, err
	}
	return out, nil
}

// fillAggregated sets the rules of every aggregated role to the union of
// the rules of the other roles its selectors match, as the aggregation
// controller would. It repeats until nothing changes so that nested
// aggregation (view into edit into admin) settles whatever the order. A
// selector that does not parse (a layer's policy is a library user's
// input) is an error naming its role.
func fillAggregated(roles []rbacv1.ClusterRole) error {
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
					return fmt.Errorf("clusterrole %s: aggregationRule: %w", target.Name, err)
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
	return nil
}

func equalRules(a, b rbacv1.PolicyRule) bool {
	return slices.Equal(a.Verbs, b.Verbs) && slices.Equal(a.APIGroups, b.APIGroups) && slices.Equal(a.Resources, b.Resources) &&
		slices.Equal(a.ResourceNames, b.ResourceNames) && slices.Equal(a.NonResourceURLs, b.NonResourceURLs)
}
