// Package defaults sets the defaults of admissionregistration.k8s.io/v1
// objects as upstream's pkg/apis/admissionregistration/v1 defaulters do
// (k8s.io/api ships none): webhook failure, match, timeout and
// reinvocation policies, selectors, rule scopes, service ports, and the
// failure policy and match constraints of admission policies.
package defaults

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
)

// Register adds the defaulting function of every served type, list types
// included, to scheme.
func Register(scheme *runtime.Scheme) {
	addDefaulter(scheme, &admissionregistrationv1.ValidatingWebhookConfiguration{}, &admissionregistrationv1.ValidatingWebhookConfigurationList{},
		ValidatingWebhookConfiguration, func(l *admissionregistrationv1.ValidatingWebhookConfigurationList) []admissionregistrationv1.ValidatingWebhookConfiguration {
			return l.Items
		})
	addDefaulter(scheme, &admissionregistrationv1.MutatingWebhookConfiguration{}, &admissionregistrationv1.MutatingWebhookConfigurationList{},
		MutatingWebhookConfiguration, func(l *admissionregistrationv1.MutatingWebhookConfigurationList) []admissionregistrationv1.MutatingWebhookConfiguration {
			return l.Items
		})
	addDefaulter(scheme, &admissionregistrationv1.ValidatingAdmissionPolicy{}, &admissionregistrationv1.ValidatingAdmissionPolicyList{},
		ValidatingAdmissionPolicy, func(l *admissionregistrationv1.ValidatingAdmissionPolicyList) []admissionregistrationv1.ValidatingAdmissionPolicy {
			return l.Items
		})
	addDefaulter(scheme, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}, &admissionregistrationv1.ValidatingAdmissionPolicyBindingList{},
		ValidatingAdmissionPolicyBinding, func(l *admissionregistrationv1.ValidatingAdmissionPolicyBindingList) []admissionregistrationv1.ValidatingAdmissionPolicyBinding {
			return l.Items
		})
	addDefaulter(scheme, &admissionregistrationv1.MutatingAdmissionPolicy{}, &admissionregistrationv1.MutatingAdmissionPolicyList{},
		MutatingAdmissionPolicy, func(l *admissionregistrationv1.MutatingAdmissionPolicyList) []admissionregistrationv1.MutatingAdmissionPolicy {
			return l.Items
		})
	addDefaulter(scheme, &admissionregistrationv1.MutatingAdmissionPolicyBinding{}, &admissionregistrationv1.MutatingAdmissionPolicyBindingList{},
		MutatingAdmissionPolicyBinding, func(l *admissionregistrationv1.MutatingAdmissionPolicyBindingList) []admissionregistrationv1.MutatingAdmissionPolicyBinding {
			return l.Items
		})
}

// addDefaulter registers set for obj's type T and for its list type L,
// whose items items returns.
func addDefaulter[T, L any](scheme *runtime.Scheme, obj, list runtime.Object, set func(*T), items func(*L) []T) {
	scheme.AddTypeDefaultingFunc(obj, func(o any) { set(o.(*T)) })
	scheme.AddTypeDefaultingFunc(list, func(o any) {
		all := items(o.(*L))
		for i := range all {
			set(&all[i])
		}
	})
}

// ValidatingWebhookConfiguration defaults each webhook: failurePolicy
// Fail, matchPolicy Equivalent, empty namespace and object selectors,
// timeoutSeconds 10, service port 443 and rule scope "*".
func ValidatingWebhookConfiguration(c *admissionregistrationv1.ValidatingWebhookConfiguration) {
	for i := range c.Webhooks {
		w := &c.Webhooks[i]
		w.FailurePolicy = orDefault(w.FailurePolicy, admissionregistrationv1.Fail)
		w.MatchPolicy = orDefault(w.MatchPolicy, admissionregistrationv1.Equivalent)
		w.NamespaceSelector = orDefault(w.NamespaceSelector, metav1.LabelSelector{})
		w.ObjectSelector = orDefault(w.ObjectSelector, metav1.LabelSelector{})
		w.TimeoutSeconds = orDefault(w.TimeoutSeconds, 10)
		serviceReference(w.ClientConfig.Service)
		rulesWithOperations(w.Rules)
	}
}

// MutatingWebhookConfiguration defaults each webhook like
// ValidatingWebhookConfiguration, and reinvocationPolicy Never.
func MutatingWebhookConfiguration(c *admissionregistrationv1.MutatingWebhookConfiguration) {
	for i := range c.Webhooks {
		w := &c.Webhooks[i]
		w.FailurePolicy = orDefault(w.FailurePolicy, admissionregistrationv1.Fail)
		w.MatchPolicy = orDefault(w.MatchPolicy, admissionregistrationv1.Equivalent)
		w.NamespaceSelector = orDefault(w.NamespaceSelector, metav1.LabelSelector{})
		w.ObjectSelector = orDefault(w.ObjectSelector, metav1.LabelSelector{})
		w.TimeoutSeconds = orDefault(w.TimeoutSeconds, 10)
		w.ReinvocationPolicy = orDefault(w.ReinvocationPolicy, admissionregistrationv1.NeverReinvocationPolicy)
		serviceReference(w.ClientConfig.Service)
		rulesWithOperations(w.Rules)
	}
}

// ValidatingAdmissionPolicy defaults failurePolicy to Fail and the match
// constraints (see MatchResources).
func ValidatingAdmissionPolicy(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
	p.Spec.FailurePolicy = orDefault(p.Spec.FailurePolicy, admissionregistrationv1.Fail)
	MatchResources(p.Spec.MatchConstraints)
}

// ValidatingAdmissionPolicyBinding defaults the match resources.
func ValidatingAdmissionPolicyBinding(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	MatchResources(b.Spec.MatchResources)
}

// MutatingAdmissionPolicy defaults failurePolicy to Fail and the match
// constraints.
func MutatingAdmissionPolicy(p *admissionregistrationv1.MutatingAdmissionPolicy) {
	p.Spec.FailurePolicy = orDefault(p.Spec.FailurePolicy, admissionregistrationv1.Fail)
	MatchResources(p.Spec.MatchConstraints)
}

// MutatingAdmissionPolicyBinding defaults the match resources.
func MutatingAdmissionPolicyBinding(b *admissionregistrationv1.MutatingAdmissionPolicyBinding) {
	MatchResources(b.Spec.MatchResources)
}

// MatchResources defaults a policy's or binding's match resources, when
// set: matchPolicy Equivalent, empty namespace and object selectors, and
// scope "*" in every resource rule and exclude rule.
func MatchResources(m *admissionregistrationv1.MatchResources) {
	if m == nil {
		return
	}
	m.MatchPolicy = orDefault(m.MatchPolicy, admissionregistrationv1.Equivalent)
	m.NamespaceSelector = orDefault(m.NamespaceSelector, metav1.LabelSelector{})
	m.ObjectSelector = orDefault(m.ObjectSelector, metav1.LabelSelector{})
	for i := range m.ResourceRules {
		rule(&m.ResourceRules[i].Rule)
	}
	for i := range m.ExcludeResourceRules {
		rule(&m.ExcludeResourceRules[i].Rule)
	}
}

func rulesWithOperations(rules []admissionregistrationv1.RuleWithOperations) {
	for i := range rules {
		rule(&rules[i].Rule)
	}
}

func rule(r *admissionregistrationv1.Rule) {
	r.Scope = orDefault(r.Scope, admissionregistrationv1.AllScopes)
}

func serviceReference(s *admissionregistrationv1.ServiceReference) {
	if s != nil {
		s.Port = orDefault(s.Port, 443)
	}
}

// orDefault returns p, or a pointer to def when p is nil.
func orDefault[T any](p *T, def T) *T {
	if p != nil {
		return p
	}
	return ptr.To(def)
}
