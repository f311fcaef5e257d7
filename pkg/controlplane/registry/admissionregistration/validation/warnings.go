package validation

import (
	"fmt"
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// StaticConfigSuffix ends the names reserved for admission configurations
// loaded from manifest files at server start; the API does not accept them
// (upstream's ManifestBasedAdmissionControlConfig, on by default).
const StaticConfigSuffix = ".static.k8s.io"

// ValidateStaticSuffix rejects a name ending in StaticConfigSuffix.
func ValidateStaticSuffix(name string, fldPath *field.Path) field.ErrorList {
	if strings.HasSuffix(name, StaticConfigSuffix) {
		return field.ErrorList{field.Invalid(fldPath, name,
			fmt.Sprintf("names ending with %q are reserved for static manifest-based configurations and cannot be managed via the API", StaticConfigSuffix))}
	}
	return nil
}

// WarningsForStaticSuffix warns about a name ending in StaticConfigSuffix
// (an object stored before the suffix was reserved).
func WarningsForStaticSuffix(name string) []string {
	if strings.HasSuffix(name, StaticConfigSuffix) {
		return []string{fmt.Sprintf("metadata.name: names ending with %q are reserved for static manifest-based configurations and cannot be managed via the API", StaticConfigSuffix)}
	}
	return nil
}

// excludedFromWebhooks are the resources admission webhooks never see:
// reviews that are not stored and that the cluster needs to work.
var excludedFromWebhooks = []schema.GroupResource{
	{Group: "authentication.k8s.io", Resource: "selfsubjectreviews"},
	{Group: "authentication.k8s.io", Resource: "tokenreviews"},
	{Group: "authorization.k8s.io", Resource: "localsubjectaccessreviews"},
	{Group: "authorization.k8s.io", Resource: "selfsubjectaccessreviews"},
	{Group: "authorization.k8s.io", Resource: "selfsubjectrulesreviews"},
	{Group: "authorization.k8s.io", Resource: "subjectaccessreviews"},
}

// WarningsForValidatingWebhookRules warns about rules that name a
// resource webhooks never see.
func WarningsForValidatingWebhookRules(webhooks []admissionregistrationv1.ValidatingWebhook) []string {
	var warnings []string
	for i := range webhooks {
		warnings = append(warnings, warningsForExcludedRules(field.NewPath("webhooks").Index(i).Child("rules"), webhooks[i].Rules)...)
	}
	return warnings
}

// WarningsForMutatingWebhookRules is WarningsForValidatingWebhookRules for
// mutating webhooks.
func WarningsForMutatingWebhookRules(webhooks []admissionregistrationv1.MutatingWebhook) []string {
	var warnings []string
	for i := range webhooks {
		warnings = append(warnings, warningsForExcludedRules(field.NewPath("webhooks").Index(i).Child("rules"), webhooks[i].Rules)...)
	}
	return warnings
}

// warningsForExcludedRules names each excluded resource a rule lists
// explicitly; a rule with a wildcard group or resource is not flagged.
func warningsForExcludedRules(rulesPath *field.Path, rules []admissionregistrationv1.RuleWithOperations) []string {
	excluded := sets.New(excludedFromWebhooks...)
	var warnings []string
	for i, rule := range rules {
		if slices.Contains(rule.APIGroups, "*") || slices.Contains(rule.Resources, "*") {
			continue
		}
		seen := sets.New[schema.GroupResource]()
		for _, group := range rule.APIGroups {
			for _, resource := range rule.Resources {
				gr := schema.GroupResource{Group: group, Resource: resource}
				if excluded.Has(gr) && !seen.Has(gr) {
					seen.Insert(gr)
					warnings = append(warnings, fmt.Sprintf("%s: %s is excluded from admission webhooks; this rule will have no effect", rulesPath.Index(i), gr))
				}
			}
		}
	}
	return warnings
}
