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
	scheme.AddTypeDefaultingFunc(&admissionregistrationv1.ValidatingWebhookConfiguration{}, func(obj any) {
		ValidatingWebhookConfiguration(obj.(*admissionregistrationv1.ValidatingWebhookConfiguration))
	})
	scheme.AddTypeDefaultingFunc(&admissionregistrationv1.ValidatingWebhookConfigurationList{}, func(obj any) {
		for i := range obj.(*admissionregistrationv1.ValidatingWebhookConfigurationList).Items {
			ValidatingWebhookConfiguration(&obj.(*admissionregistrationv1.ValidatingWebhookConfigurationList).Items[i])
		}
	})
	scheme.AddTypeDefaultingFunc(&admissionregistrationv1.MutatingWebhookConfiguration{}, func(obj any) {
		MutatingWebhookConfiguration(obj.(*admissionregistrationv1.MutatingWebhookConfiguration))
	})
	scheme.AddTypeDefaultingFunc(&admissionregistrationv1.MutatingWebhookConfigurationList{}, func(obj any) {
		for i := range obj.(*admissionregistrationv1.MutatingWebhookConfigurationList).Items {
			MutatingWebhookConfiguration(&obj.(*admissionregistrationv1.MutatingWebhookConfigurationList).Items[i])
		}
	})
	scheme.AddTypeDefaultingFunc(&admissionregistrationv1.ValidatingAdmissionPolicy{}, func(obj any) {
		ValidatingAdmissionPolicy(obj.(*admissionregistrationv1.ValidatingAdmissionPolicy))
	})
	scheme.AddTypeDefaultingFunc(&admissionregistrationv1.ValidatingAdmissionPolicyList{}, func(obj any) {
		for i := range obj.(*admissionregistrationv1.ValidatingAdmissionPolicyList).Items {
			ValidatingAdmissionPolicy(&obj.(*admissionregistrationv1.ValidatingAdmissionPolicyList).Items[i])
		}
	})
	scheme.AddTypeDefaultingFunc(&admissionregistrationv1.ValidatingAdmissionPolicyBinding{}, func(obj any) {
		ValidatingAdmissionPolicyBinding(obj.(*admissionregistrationv1.ValidatingAdmissionPolicyBinding))
	})
	scheme.AddTypeDefaultingFunc(&admissionregistrationv1.ValidatingAdmissionPolicyBindingList{}, func(obj any) {
		for i := range obj.(*admissionregistrationv1.ValidatingAdmissionPolicyBindingList).Items {
			ValidatingAdmissionPolicyBinding(&obj.(*admissionregistrationv1.ValidatingAdmissionPolicyBindingList).Items[i])
		}
	})
	scheme.AddTypeDefaultingFunc(&admissionregistrationv1.MutatingAdmissionPolicy{}, func(obj any) {
		MutatingAdmissionPolicy(obj.(*admissionregistrationv1.MutatingAdmissionPolicy))
	})
	scheme.AddTypeDefaultingFunc(&admissionregistrationv1.MutatingAdmissionPolicyList{}, func(obj any) {
		for i := range obj.(*admissionregistrationv1.MutatingAdmissionPolicyList).Items {
			MutatingAdmissionPolicy(&obj.(*admissionregistrationv1.MutatingAdmissionPolicyList).Items[i])
		}
	})
	scheme.AddTypeDefaultingFunc(&admissionregistrationv1.MutatingAdmissionPolicyBinding{}, func(obj any) {
		MutatingAdmissionPolicyBinding(obj.(*admissionregistrationv1.MutatingAdmissionPolicyBinding))
	})
	scheme.AddTypeDefaultingFunc(&admissionregistrationv1.MutatingAdmissionPolicyBindingList{}, func(obj any) {
		for i := range obj.(*admissionregistrationv1.MutatingAdmissionPolicyBindingList).Items {
			MutatingAdmissionPolicyBinding(&obj.(*admissionregistrationv1.MutatingAdmissionPolicyBindingList).Items[i])
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
