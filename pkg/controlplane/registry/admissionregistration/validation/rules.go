// Package validation validates admissionregistration.k8s.io/v1 objects
// like upstream's pkg/apis/admissionregistration/validation: webhook
// configurations, validating and mutating admission policies and their
// bindings, with the same field paths and messages. CEL expressions are
// compiled at write time with k8s.io/apiserver's admission CEL compilers,
// so a broken expression is a 422 naming the expression's field.
package validation

import (
	"fmt"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/validate/content"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var (
	validScopes = sets.New(
		string(admissionregistrationv1.ClusterScope),
		string(admissionregistrationv1.NamespacedScope),
		string(admissionregistrationv1.AllScopes),
	)
	supportedOperations = sets.New(
		string(admissionregistrationv1.OperationAll),
		string(admissionregistrationv1.Create),
		string(admissionregistrationv1.Update),
		string(admissionregistrationv1.Delete),
		string(admissionregistrationv1.Connect),
	)
	// supportedMutatingOperations are those a mutating admission policy
	// may match: not DELETE.
	supportedMutatingOperations = sets.New(
		string(admissionregistrationv1.OperationAll),
		string(admissionregistrationv1.Create),
		string(admissionregistrationv1.Update),
		string(admissionregistrationv1.Connect),
	)
	supportedFailurePolicies = sets.New(string(admissionregistrationv1.Ignore), string(admissionregistrationv1.Fail))
	supportedMatchPolicies   = sets.New(string(admissionregistrationv1.Exact), string(admissionregistrationv1.Equivalent))
)

func hasWildcard(values []string) bool {
	for _, v := range values {
		if v == "*" {
			return true
		}
	}
	return false
}

// validateResources validates a rule's resources, subresources allowed:
// "x/*" and "*/x" exclude more specific entries, "*/*" and "*" exclude
// other resources.
func validateResources(resources []string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(resources) == 0 {
		errs = append(errs, field.Required(fldPath, ""))
	}
	withWildcardSubresource := sets.New[string]() // x/*
	withWildcardResource := sets.New[string]()    // */x
	hasDoubleWildcard, hasSingleWildcard, hasResourceWithoutSubresource := false, false, false
	for i, resSub := range resources {
		if resSub == "" {
			errs = append(errs, field.Required(fldPath.Index(i), ""))
			continue
		}
		if resSub == "*/*" {
			hasDoubleWildcard = true
		}
		if resSub == "*" {
			hasSingleWildcard = true
		}
		res, sub, found := strings.Cut(resSub, "/")
		if !found {
			hasResourceWithoutSubresource = resSub != "*"
			continue
		}
		if withWildcardSubresource.Has(res) {
			errs = append(errs, field.Invalid(fldPath.Index(i), resSub, fmt.Sprintf("if '%s/*' is present, must not specify %s", res, resSub)))
		}
		if withWildcardResource.Has(sub) {
			errs = append(errs, field.Invalid(fldPath.Index(i), resSub, fmt.Sprintf("if '*/%s' is present, must not specify %s", sub, resSub)))
		}
		if sub == "*" {
			withWildcardSubresource.Insert(res)
		}
		if res == "*" {
			withWildcardResource.Insert(sub)
		}
	}
	if len(resources) > 1 && hasDoubleWildcard {
		errs = append(errs, field.Invalid(fldPath, resources, "if '*/*' is present, must not specify other resources"))
	}
	if hasSingleWildcard && hasResourceWithoutSubresource {
		errs = append(errs, field.Invalid(fldPath, resources, "if '*' is present, must not specify other resources without subresources"))
	}
	return errs
}

// validateRule validates a rule's API groups, versions, resources and scope.
func validateRule(rule *admissionregistrationv1.Rule, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(rule.APIGroups) == 0 {
		errs = append(errs, field.Required(fldPath.Child("apiGroups"), ""))
	}
	if len(rule.APIGroups) > 1 && hasWildcard(rule.APIGroups) {
		errs = append(errs, field.Invalid(fldPath.Child("apiGroups"), rule.APIGroups, "if '*' is present, must not specify other API groups"))
	}
	// A group may be empty (the core group), a version may not.
	if len(rule.APIVersions) == 0 {
		errs = append(errs, field.Required(fldPath.Child("apiVersions"), ""))
	}
	if len(rule.APIVersions) > 1 && hasWildcard(rule.APIVersions) {
		errs = append(errs, field.Invalid(fldPath.Child("apiVersions"), rule.APIVersions, "if '*' is present, must not specify other API versions"))
	}
	for i, version := range rule.APIVersions {
		if version == "" {
			errs = append(errs, field.Required(fldPath.Child("apiVersions").Index(i), ""))
		}
	}
	errs = append(errs, validateResources(rule.Resources, fldPath.Child("resources"))...)
	if rule.Scope != nil && !validScopes.Has(string(*rule.Scope)) {
		errs = append(errs, field.NotSupported(fldPath.Child("scope"), *rule.Scope, sets.List(validScopes)))
	}
	return errs
}

// validateRuleWithOperations validates a rule and its operations.
func validateRuleWithOperations(rule *admissionregistrationv1.RuleWithOperations, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(rule.Operations) == 0 {
		errs = append(errs, field.Required(fldPath.Child("operations"), ""))
	}
	if len(rule.Operations) > 1 {
		for _, op := range rule.Operations {
			if op == admissionregistrationv1.OperationAll {
				errs = append(errs, field.Invalid(fldPath.Child("operations"), rule.Operations, "if '*' is present, must not specify other operations"))
				break
			}
		}
	}
	for i, op := range rule.Operations {
		if !supportedOperations.Has(string(op)) {
			errs = append(errs, field.NotSupported(fldPath.Child("operations").Index(i), op, sets.List(supportedOperations)))
		}
	}
	return append(errs, validateRule(&rule.Rule, fldPath)...)
}

// validateNamedRuleWithOperations validates a policy rule: unique resource
// names that are path segments, and the rule.
func validateNamedRuleWithOperations(rule *admissionregistrationv1.NamedRuleWithOperations, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := sets.New[string]()
	for i, name := range rule.ResourceNames {
		for _, msg := range content.IsPathSegmentName(name) {
			errs = append(errs, field.Invalid(fldPath.Child("resourceNames").Index(i), name, msg))
		}
		if seen.Has(name) {
			errs = append(errs, field.Duplicate(fldPath.Child("resourceNames").Index(i), name))
		}
		seen.Insert(name)
	}
	return append(errs, validateRuleWithOperations(&rule.RuleWithOperations, fldPath)...)
}

// validateMatchResources validates a policy's match constraints or a
// binding's match resources: defaulted policy and selectors (validated
// strictly), and the rules.
func validateMatchResources(m *admissionregistrationv1.MatchResources, fldPath *field.Path) field.ErrorList {
	if m == nil {
		return nil
	}
	var errs field.ErrorList
	if m.MatchPolicy == nil {
		errs = append(errs, field.Required(fldPath.Child("matchPolicy"), ""))
	} else if !supportedMatchPolicies.Has(string(*m.MatchPolicy)) {
		errs = append(errs, field.NotSupported(fldPath.Child("matchPolicy"), *m.MatchPolicy, sets.List(supportedMatchPolicies)))
	}
	if m.NamespaceSelector == nil {
		errs = append(errs, field.Required(fldPath.Child("namespaceSelector"), ""))
	} else {
		errs = append(errs, metav1validation.ValidateLabelSelector(m.NamespaceSelector, metav1validation.LabelSelectorValidationOptions{}, fldPath.Child("namespaceSelector"))...)
	}
	if m.ObjectSelector == nil {
		errs = append(errs, field.Required(fldPath.Child("objectSelector"), ""))
	} else {
		errs = append(errs, metav1validation.ValidateLabelSelector(m.ObjectSelector, metav1validation.LabelSelectorValidationOptions{}, fldPath.Child("objectSelector"))...)
	}
	for i := range m.ResourceRules {
		errs = append(errs, validateNamedRuleWithOperations(&m.ResourceRules[i], fldPath.Child("resourceRules").Index(i))...)
	}
	for i := range m.ExcludeResourceRules {
		errs = append(errs, validateNamedRuleWithOperations(&m.ExcludeResourceRules[i], fldPath.Child("excludeResourceRules").Index(i))...)
	}
	return errs
}

// validateMutatingOperations rejects operations a mutating admission
// policy cannot act on (DELETE), at upstream's path
// <fldPath>.resourceRules.operations.
func validateMutatingOperations(m *admissionregistrationv1.MatchResources, fldPath *field.Path) field.ErrorList {
	if m == nil {
		return nil
	}
	var errs field.ErrorList
	for _, rule := range m.ResourceRules {
		for _, op := range rule.Operations {
			if !supportedMutatingOperations.Has(string(op)) {
				errs = append(errs, field.NotSupported(fldPath.Child("resourceRules", "operations"), op, sets.List(supportedMutatingOperations)))
			}
		}
	}
	return errs
}
