package validation

import (
	"fmt"
	"reflect"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/util/webhook"
)

// AcceptedAdmissionReviewVersions are the AdmissionReview versions the
// server sends; a webhook must accept at least one.
var AcceptedAdmissionReviewVersions = []string{"v1", "v1beta1"}

var (
	supportedSideEffectClasses = sets.New(
		string(admissionregistrationv1.SideEffectClassUnknown),
		string(admissionregistrationv1.SideEffectClassNone),
		string(admissionregistrationv1.SideEffectClassSome),
		string(admissionregistrationv1.SideEffectClassNoneOnDryRun),
	)
	noSideEffectClasses = sets.New(
		string(admissionregistrationv1.SideEffectClassNone),
		string(admissionregistrationv1.SideEffectClassNoneOnDryRun),
	)
	supportedReinvocationPolicies = sets.New(
		string(admissionregistrationv1.NeverReinvocationPolicy),
		string(admissionregistrationv1.IfNeededReinvocationPolicy),
	)
)

// webhookOptions relaxes rules for objects stored before the rule
// existed, so that they stay updatable (upstream's update ratcheting).
type webhookOptions struct {
	ignoreMatchConditions                   bool
	requireNoSideEffects                    bool
	requireRecognizedAdmissionReviewVersion bool
	requireUniqueWebhookNames               bool
	allowInvalidLabelValueInSelector        bool
	preexistingMatchConditions              sets.Set[string]
}

func strictWebhookOptions() webhookOptions {
	return webhookOptions{
		requireNoSideEffects:                    true,
		requireRecognizedAdmissionReviewVersion: true,
		requireUniqueWebhookNames:               true,
		preexistingMatchConditions:              sets.New[string](),
	}
}

// webhookFields is what validating and mutating webhooks share.
type webhookFields struct {
	name                    string
	clientConfig            admissionregistrationv1.WebhookClientConfig
	rules                   []admissionregistrationv1.RuleWithOperations
	failurePolicy           *admissionregistrationv1.FailurePolicyType
	matchPolicy             *admissionregistrationv1.MatchPolicyType
	namespaceSelector       *metav1.LabelSelector
	objectSelector          *metav1.LabelSelector
	sideEffects             *admissionregistrationv1.SideEffectClass
	timeoutSeconds          *int32
	admissionReviewVersions []string
	matchConditions         []admissionregistrationv1.MatchCondition
}

func validatingFields(w *admissionregistrationv1.ValidatingWebhook) webhookFields {
	return webhookFields{w.Name, w.ClientConfig, w.Rules, w.FailurePolicy, w.MatchPolicy, w.NamespaceSelector, w.ObjectSelector,
		w.SideEffects, w.TimeoutSeconds, w.AdmissionReviewVersions, w.MatchConditions}
}

func mutatingFields(w *admissionregistrationv1.MutatingWebhook) webhookFields {
	return webhookFields{w.Name, w.ClientConfig, w.Rules, w.FailurePolicy, w.MatchPolicy, w.NamespaceSelector, w.ObjectSelector,
		w.SideEffects, w.TimeoutSeconds, w.AdmissionReviewVersions, w.MatchConditions}
}

// ValidateValidatingWebhookConfiguration validates a new validating
// webhook configuration.
func ValidateValidatingWebhookConfiguration(c *admissionregistrationv1.ValidatingWebhookConfiguration) field.ErrorList {
	return validateValidatingWebhookConfiguration(c, strictWebhookOptions())
}

// ValidateValidatingWebhookConfigurationUpdate validates an update; rules
// the old object already broke (side effects, review versions, unique
// names, label values, match conditions) are not enforced anew.
func ValidateValidatingWebhookConfigurationUpdate(c, old *admissionregistrationv1.ValidatingWebhookConfiguration) field.ErrorList {
	oldHooks := make([]webhookFields, len(old.Webhooks))
	for i := range old.Webhooks {
		oldHooks[i] = validatingFields(&old.Webhooks[i])
	}
	newConditions := make([][]admissionregistrationv1.MatchCondition, len(c.Webhooks))
	for i := range c.Webhooks {
		newConditions[i] = c.Webhooks[i].MatchConditions
	}
	return validateValidatingWebhookConfiguration(c, ratchetedWebhookOptions(newConditions, oldHooks))
}

func validateValidatingWebhookConfiguration(c *admissionregistrationv1.ValidatingWebhookConfiguration, opts webhookOptions) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMeta(&c.ObjectMeta, false, apimachineryvalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	hooks := make([]webhookFields, len(c.Webhooks))
	for i := range c.Webhooks {
		hooks[i] = validatingFields(&c.Webhooks[i])
	}
	return append(errs, validateWebhooks(hooks, nil, opts)...)
}

// ValidateMutatingWebhookConfiguration validates a new mutating webhook
// configuration.
func ValidateMutatingWebhookConfiguration(c *admissionregistrationv1.MutatingWebhookConfiguration) field.ErrorList {
	return validateMutatingWebhookConfiguration(c, strictWebhookOptions())
}

// ValidateMutatingWebhookConfigurationUpdate validates an update like
// ValidateValidatingWebhookConfigurationUpdate.
func ValidateMutatingWebhookConfigurationUpdate(c, old *admissionregistrationv1.MutatingWebhookConfiguration) field.ErrorList {
	oldHooks := make([]webhookFields, len(old.Webhooks))
	for i := range old.Webhooks {
		oldHooks[i] = mutatingFields(&old.Webhooks[i])
	}
	newConditions := make([][]admissionregistrationv1.MatchCondition, len(c.Webhooks))
	for i := range c.Webhooks {
		newConditions[i] = c.Webhooks[i].MatchConditions
	}
	return validateMutatingWebhookConfiguration(c, ratchetedWebhookOptions(newConditions, oldHooks))
}

func validateMutatingWebhookConfiguration(c *admissionregistrationv1.MutatingWebhookConfiguration, opts webhookOptions) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMeta(&c.ObjectMeta, false, apimachineryvalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	hooks := make([]webhookFields, len(c.Webhooks))
	for i := range c.Webhooks {
		hooks[i] = mutatingFields(&c.Webhooks[i])
	}
	reinvocation := func(i int, fldPath *field.Path) field.ErrorList {
		p := c.Webhooks[i].ReinvocationPolicy
		if p != nil && !supportedReinvocationPolicies.Has(string(*p)) {
			return field.ErrorList{field.NotSupported(fldPath.Child("reinvocationPolicy"), *p, sets.List(supportedReinvocationPolicies))}
		}
		return nil
	}
	return append(errs, validateWebhooks(hooks, reinvocation, opts)...)
}

// ratchetedWebhookOptions relaxes each rule the old webhooks already
// broke, and skips match conditions when no webhook's changed.
func ratchetedWebhookOptions(newConditions [][]admissionregistrationv1.MatchCondition, old []webhookFields) webhookOptions {
	opts := webhookOptions{
		ignoreMatchConditions:                   len(newConditions) == len(old),
		requireNoSideEffects:                    true,
		requireRecognizedAdmissionReviewVersion: true,
		requireUniqueWebhookNames:               true,
		preexistingMatchConditions:              sets.New[string](),
	}
	names := sets.New[string]()
	for i, hook := range old {
		if opts.ignoreMatchConditions && !reflect.DeepEqual(newConditions[i], hook.matchConditions) {
			opts.ignoreMatchConditions = false
		}
		if hook.sideEffects == nil || !noSideEffectClasses.Has(string(*hook.sideEffects)) {
			opts.requireNoSideEffects = false
		}
		if len(hook.admissionReviewVersions) > 0 && !hasAcceptedAdmissionReviewVersion(hook.admissionReviewVersions) {
			opts.requireRecognizedAdmissionReviewVersion = false
		}
		if names.Has(hook.name) {
			opts.requireUniqueWebhookNames = false
		}
		names.Insert(hook.name)
		for _, sel := range []*metav1.LabelSelector{hook.namespaceSelector, hook.objectSelector} {
			if sel != nil && len(metav1validation.ValidateLabelSelector(sel, metav1validation.LabelSelectorValidationOptions{}, nil)) > 0 {
				opts.allowInvalidLabelValueInSelector = true
			}
		}
		for _, mc := range hook.matchConditions {
			opts.preexistingMatchConditions.Insert(mc.Expression)
		}
	}
	return opts
}

// validateWebhooks validates every webhook, its admission review versions
// and the uniqueness of the names; extra adds kind-specific checks.
func validateWebhooks(hooks []webhookFields, extra func(i int, fldPath *field.Path) field.ErrorList, opts webhookOptions) field.ErrorList {
	var errs field.ErrorList
	names := sets.New[string]()
	for i := range hooks {
		hook := &hooks[i]
		p := field.NewPath("webhooks").Index(i)
		errs = append(errs, validateWebhook(hook, opts, p)...)
		if extra != nil {
			errs = append(errs, extra(i, p)...)
		}
		errs = append(errs, validateWebhookClientConfig(&hook.clientConfig, p.Child("clientConfig"))...)
		if !opts.ignoreMatchConditions {
			errs = append(errs, validateMatchConditions(hook.matchConditions, matchConditionOptions{preexisting: opts.preexistingMatchConditions}, p.Child("matchConditions"))...)
		}
		errs = append(errs, validateAdmissionReviewVersions(hook.admissionReviewVersions, opts.requireRecognizedAdmissionReviewVersion, p.Child("admissionReviewVersions"))...)
		if opts.requireUniqueWebhookNames && hook.name != "" {
			if names.Has(hook.name) {
				errs = append(errs, field.Duplicate(p.Child("name"), hook.name))
			}
			names.Insert(hook.name)
		}
	}
	return errs
}

// validateWebhook validates what every webhook has: a name with at least
// three DNS segments, rules, policies, side effects, timeout, selectors.
func validateWebhook(hook *webhookFields, opts webhookOptions, fldPath *field.Path) field.ErrorList {
	errs := validation.IsFullyQualifiedName(fldPath.Child("name"), hook.name)
	for i := range hook.rules {
		errs = append(errs, validateRuleWithOperations(&hook.rules[i], fldPath.Child("rules").Index(i))...)
	}
	if hook.failurePolicy != nil && !supportedFailurePolicies.Has(string(*hook.failurePolicy)) {
		errs = append(errs, field.NotSupported(fldPath.Child("failurePolicy"), *hook.failurePolicy, sets.List(supportedFailurePolicies)))
	}
	if hook.matchPolicy != nil && !supportedMatchPolicies.Has(string(*hook.matchPolicy)) {
		errs = append(errs, field.NotSupported(fldPath.Child("matchPolicy"), *hook.matchPolicy, sets.List(supportedMatchPolicies)))
	}
	allowedSideEffects := supportedSideEffectClasses
	if opts.requireNoSideEffects {
		allowedSideEffects = noSideEffectClasses
	}
	if hook.sideEffects == nil {
		errs = append(errs, field.Required(fldPath.Child("sideEffects"), fmt.Sprintf("must specify one of %v", strings.Join(sets.List(allowedSideEffects), ", "))))
	} else if !allowedSideEffects.Has(string(*hook.sideEffects)) {
		errs = append(errs, field.NotSupported(fldPath.Child("sideEffects"), *hook.sideEffects, sets.List(allowedSideEffects)))
	}
	if hook.timeoutSeconds != nil && (*hook.timeoutSeconds > 30 || *hook.timeoutSeconds < 1) {
		errs = append(errs, field.Invalid(fldPath.Child("timeoutSeconds"), *hook.timeoutSeconds, "the timeout value must be between 1 and 30 seconds"))
	}
	selectorOpts := metav1validation.LabelSelectorValidationOptions{AllowInvalidLabelValueInSelector: opts.allowInvalidLabelValueInSelector}
	if hook.namespaceSelector != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(hook.namespaceSelector, selectorOpts, fldPath.Child("namespaceSelector"))...)
	}
	if hook.objectSelector != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(hook.objectSelector, selectorOpts, fldPath.Child("objectSelector"))...)
	}
	return errs
}

// validateWebhookClientConfig requires exactly one of an https URL
// without user info, query or fragment, and a service reference.
func validateWebhookClientConfig(cc *admissionregistrationv1.WebhookClientConfig, fldPath *field.Path) field.ErrorList {
	switch {
	case (cc.URL == nil) == (cc.Service == nil):
		return field.ErrorList{field.Required(fldPath, "exactly one of url or service is required")}
	case cc.URL != nil:
		return webhook.ValidateWebhookURL(fldPath.Child("url"), *cc.URL, true)
	default:
		port := int32(443)
		if cc.Service.Port != nil {
			port = *cc.Service.Port
		}
		return webhook.ValidateWebhookService(fldPath.Child("service"), cc.Service.Namespace, cc.Service.Name, cc.Service.Path, port)
	}
}

func hasAcceptedAdmissionReviewVersion(versions []string) bool {
	for _, v := range versions {
		for _, accepted := range AcceptedAdmissionReviewVersions {
			if v == accepted {
				return true
			}
		}
	}
	return false
}

// validateAdmissionReviewVersions requires at least one unique DNS-label
// version, one of them accepted when required.
func validateAdmissionReviewVersions(versions []string, requireRecognized bool, fldPath *field.Path) field.ErrorList {
	if len(versions) == 0 {
		return field.ErrorList{field.Required(fldPath, fmt.Sprintf("must specify one of %v", strings.Join(AcceptedAdmissionReviewVersions, ", ")))}
	}
	var errs field.ErrorList
	seen := sets.New[string]()
	for i, v := range versions {
		if seen.Has(v) {
			errs = append(errs, field.Invalid(fldPath.Index(i), v, "duplicate version"))
			continue
		}
		seen.Insert(v)
		for _, msg := range validation.IsDNS1035Label(v) {
			errs = append(errs, field.Invalid(fldPath.Index(i), v, msg))
		}
	}
	if requireRecognized && !hasAcceptedAdmissionReviewVersion(versions) {
		errs = append(errs, field.Invalid(fldPath, versions, fmt.Sprintf("must include at least one of %v", strings.Join(AcceptedAdmissionReviewVersions, ", "))))
	}
	return errs
}
