package defaults

import (
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
)

func TestWebhookDefaults(t *testing.T) {
	scheme := runtime.NewScheme()
	Register(scheme)
	c := &admissionregistrationv1.MutatingWebhookConfiguration{Webhooks: []admissionregistrationv1.MutatingWebhook{{
		ClientConfig: admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Name: "s", Namespace: "n"}},
		Rules:        []admissionregistrationv1.RuleWithOperations{{}},
	}}}
	scheme.Default(c)
	w := c.Webhooks[0]
	switch {
	case w.FailurePolicy == nil || *w.FailurePolicy != admissionregistrationv1.Fail:
		t.Errorf("failurePolicy %v", w.FailurePolicy)
	case w.MatchPolicy == nil || *w.MatchPolicy != admissionregistrationv1.Equivalent:
		t.Errorf("matchPolicy %v", w.MatchPolicy)
	case w.NamespaceSelector == nil || w.ObjectSelector == nil:
		t.Error("selectors not defaulted")
	case w.TimeoutSeconds == nil || *w.TimeoutSeconds != 10:
		t.Errorf("timeoutSeconds %v", w.TimeoutSeconds)
	case w.ReinvocationPolicy == nil || *w.ReinvocationPolicy != admissionregistrationv1.NeverReinvocationPolicy:
		t.Errorf("reinvocationPolicy %v", w.ReinvocationPolicy)
	case w.SideEffects != nil:
		t.Errorf("sideEffects defaulted to %v; v1 requires it", *w.SideEffects)
	case *w.ClientConfig.Service.Port != 443:
		t.Errorf("port %v", *w.ClientConfig.Service.Port)
	case w.Rules[0].Scope == nil || *w.Rules[0].Scope != admissionregistrationv1.AllScopes:
		t.Errorf("scope %v", w.Rules[0].Scope)
	}

	// Set values are kept.
	v := &admissionregistrationv1.ValidatingWebhookConfigurationList{Items: []admissionregistrationv1.ValidatingWebhookConfiguration{{
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{TimeoutSeconds: ptr.To[int32](3), FailurePolicy: ptr.To(admissionregistrationv1.Ignore)}},
	}}}
	scheme.Default(v)
	if w := v.Items[0].Webhooks[0]; *w.TimeoutSeconds != 3 || *w.FailurePolicy != admissionregistrationv1.Ignore || *w.MatchPolicy != admissionregistrationv1.Equivalent {
		t.Errorf("list item defaults: %+v", w)
	}
}

func TestPolicyDefaults(t *testing.T) {
	scheme := runtime.NewScheme()
	Register(scheme)
	p := &admissionregistrationv1.ValidatingAdmissionPolicy{Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
		MatchConstraints: &admissionregistrationv1.MatchResources{
			ResourceRules:        []admissionregistrationv1.NamedRuleWithOperations{{}},
			ExcludeResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{}},
		},
	}}
	scheme.Default(p)
	m := p.Spec.MatchConstraints
	if *p.Spec.FailurePolicy != admissionregistrationv1.Fail || *m.MatchPolicy != admissionregistrationv1.Equivalent ||
		m.NamespaceSelector == nil || m.ObjectSelector == nil ||
		*m.ResourceRules[0].Scope != admissionregistrationv1.AllScopes || *m.ExcludeResourceRules[0].Scope != admissionregistrationv1.AllScopes {
		t.Errorf("policy defaults: %+v", p.Spec)
	}

	mp := &admissionregistrationv1.MutatingAdmissionPolicy{}
	scheme.Default(mp)
	if *mp.Spec.FailurePolicy != admissionregistrationv1.Fail || mp.Spec.MatchConstraints != nil {
		t.Errorf("mutating policy defaults: %+v", mp.Spec)
	}

	b := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
		MatchResources: &admissionregistrationv1.MatchResources{},
		ParamRef:       &admissionregistrationv1.ParamRef{Name: "p"},
	}}
	scheme.Default(b)
	if *b.Spec.MatchResources.MatchPolicy != admissionregistrationv1.Equivalent || b.Spec.ParamRef.ParameterNotFoundAction != nil {
		t.Errorf("binding defaults: %+v", b.Spec)
	}
}
