package validation

import (
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/gcp-project/gcp/pkg/controlplane/registry/admissionregistration/defaults"
	"github.com/gcp-project/gcp/test/fielderrors"
)

// check fails unless errs is empty (want "") or names want.
func check(t *testing.T, errs field.ErrorList, want string) {
	t.Helper()
	got := fielderrors.Fields(errs)
	if want == "" {
		if len(errs) != 0 {
			t.Errorf("want no errors, got %v", errs)
		}
		return
	}
	if !slices.Contains(got, want) {
		t.Errorf("errors at %q, want one at %q (%v)", got, want, errs)
	}
}

func validatingWebhookConfig(mutate func(w *admissionregistrationv1.ValidatingWebhook)) *admissionregistrationv1.ValidatingWebhookConfiguration {
	w := admissionregistrationv1.ValidatingWebhook{
		Name:                    "hook.example.com",
		ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://example.com/validate")},
		Rules:                   []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{"CREATE"}, Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}}}},
		SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
		AdmissionReviewVersions: []string{"v1"},
	}
	if mutate != nil {
		mutate(&w)
	}
	c := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Webhooks: []admissionregistrationv1.ValidatingWebhook{w}}
	defaults.ValidatingWebhookConfiguration(c)
	return c
}

func TestValidatingWebhookConfiguration(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(w *admissionregistrationv1.ValidatingWebhook)
		want   string
		msg    string
	}{
		{"valid", nil, "", ""},
		{"service", func(w *admissionregistrationv1.ValidatingWebhook) {
			w.ClientConfig = admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Namespace: "ns", Name: "svc", Path: ptr.To("/x")}}
		}, "", ""},
		{"two-segment name", func(w *admissionregistrationv1.ValidatingWebhook) { w.Name = "example.com" }, "webhooks[0].name", "at least three segments"},
		{"no side effects", func(w *admissionregistrationv1.ValidatingWebhook) { w.SideEffects = nil }, "webhooks[0].sideEffects", "must specify one of None, NoneOnDryRun"},
		{"side effects Some", func(w *admissionregistrationv1.ValidatingWebhook) {
			w.SideEffects = ptr.To(admissionregistrationv1.SideEffectClassSome)
		}, "webhooks[0].sideEffects", "Unsupported value"},
		{"timeout 31", func(w *admissionregistrationv1.ValidatingWebhook) { w.TimeoutSeconds = ptr.To[int32](31) }, "webhooks[0].timeoutSeconds", "between 1 and 30"},
		{"timeout 0", func(w *admissionregistrationv1.ValidatingWebhook) { w.TimeoutSeconds = ptr.To[int32](0) }, "webhooks[0].timeoutSeconds", "between 1 and 30"},
		{"no review versions", func(w *admissionregistrationv1.ValidatingWebhook) { w.AdmissionReviewVersions = nil }, "webhooks[0].admissionReviewVersions", "must specify one of v1, v1beta1"},
		{"unknown review version", func(w *admissionregistrationv1.ValidatingWebhook) { w.AdmissionReviewVersions = []string{"v2"} }, "webhooks[0].admissionReviewVersions", "must include at least one of v1, v1beta1"},
		{"http url", func(w *admissionregistrationv1.ValidatingWebhook) { w.ClientConfig.URL = ptr.To("http://example.com") }, "webhooks[0].clientConfig.url", "'https' is the only allowed URL scheme"},
		{"fragment", func(w *admissionregistrationv1.ValidatingWebhook) {
			w.ClientConfig.URL = ptr.To("https://example.com/x#frag")
		}, "webhooks[0].clientConfig.url", "fragments are not permitted"},
		{"query", func(w *admissionregistrationv1.ValidatingWebhook) {
			w.ClientConfig.URL = ptr.To("https://example.com/x?a=b")
		}, "webhooks[0].clientConfig.url", "query parameters are not permitted"},
		{"user info", func(w *admissionregistrationv1.ValidatingWebhook) {
			w.ClientConfig.URL = ptr.To("https://u:p@example.com/")
		}, "webhooks[0].clientConfig.url", "user information is not permitted"},
		{"url and service", func(w *admissionregistrationv1.ValidatingWebhook) {
			w.ClientConfig.Service = &admissionregistrationv1.ServiceReference{Namespace: "ns", Name: "svc"}
		}, "webhooks[0].clientConfig", "exactly one of url or service is required"},
		{"neither url nor service", func(w *admissionregistrationv1.ValidatingWebhook) { w.ClientConfig.URL = nil }, "webhooks[0].clientConfig", "exactly one of url or service is required"},
		{"service without name", func(w *admissionregistrationv1.ValidatingWebhook) {
			w.ClientConfig = admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Namespace: "ns"}}
		}, "webhooks[0].clientConfig.service.name", "Required"},
		{"service bad path", func(w *admissionregistrationv1.ValidatingWebhook) {
			w.ClientConfig = admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Namespace: "ns", Name: "s", Path: ptr.To("x")}}
		}, "webhooks[0].clientConfig.service.path", "must start with a '/'"},
		{"no operations", func(w *admissionregistrationv1.ValidatingWebhook) { w.Rules[0].Operations = nil }, "webhooks[0].rules[0].operations", "Required"},
		{"bad operation", func(w *admissionregistrationv1.ValidatingWebhook) {
			w.Rules[0].Operations = []admissionregistrationv1.OperationType{"PATCH"}
		}, "webhooks[0].rules[0].operations[0]", "Unsupported value"},
		{"wildcard and operation", func(w *admissionregistrationv1.ValidatingWebhook) {
			w.Rules[0].Operations = []admissionregistrationv1.OperationType{"*", "CREATE"}
		}, "webhooks[0].rules[0].operations", "if '*' is present"},
		{"no api groups", func(w *admissionregistrationv1.ValidatingWebhook) { w.Rules[0].APIGroups = nil }, "webhooks[0].rules[0].apiGroups", "Required"},
		{"empty version", func(w *admissionregistrationv1.ValidatingWebhook) { w.Rules[0].APIVersions = []string{""} }, "webhooks[0].rules[0].apiVersions[0]", "Required"},
		{"no resources", func(w *admissionregistrationv1.ValidatingWebhook) { w.Rules[0].Resources = nil }, "webhooks[0].rules[0].resources", "Required"},
		{"double wildcard and more", func(w *admissionregistrationv1.ValidatingWebhook) { w.Rules[0].Resources = []string{"*/*", "a"} }, "webhooks[0].rules[0].resources", "if '*/*' is present"},
		{"wildcard subresource overlap", func(w *admissionregistrationv1.ValidatingWebhook) { w.Rules[0].Resources = []string{"a/*", "a/b"} }, "webhooks[0].rules[0].resources[1]", "if 'a/*' is present"},
		{"bad scope", func(w *admissionregistrationv1.ValidatingWebhook) {
			w.Rules[0].Scope = ptr.To(admissionregistrationv1.ScopeType("Galaxy"))
		}, "webhooks[0].rules[0].scope", "Unsupported value"},
		{"bad failure policy", func(w *admissionregistrationv1.ValidatingWebhook) {
			w.FailurePolicy = ptr.To(admissionregistrationv1.FailurePolicyType("Maybe"))
		}, "webhooks[0].failurePolicy", "Unsupported value"},
		{"bad selector", func(w *admissionregistrationv1.ValidatingWebhook) {
			w.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b c"}}
		}, "webhooks[0].namespaceSelector.matchLabels", "Invalid value"},
		{"broken match condition", func(w *admissionregistrationv1.ValidatingWebhook) {
			w.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "m", Expression: "object.("}}
		}, "webhooks[0].matchConditions[0].expression", "compilation failed"},
		{"match condition not bool", func(w *admissionregistrationv1.ValidatingWebhook) {
			w.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "m", Expression: "'x'"}}
		}, "webhooks[0].matchConditions[0].expression", "must evaluate to bool"},
		{"match condition params", func(w *admissionregistrationv1.ValidatingWebhook) {
			w.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "m", Expression: "params != null"}}
		}, "webhooks[0].matchConditions[0].expression", "undeclared reference to 'params'"},
		{"duplicate match condition", func(w *admissionregistrationv1.ValidatingWebhook) {
			w.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "m", Expression: "true"}, {Name: "m", Expression: "true"}}
		}, "webhooks[0].matchConditions[1].name", "Duplicate value"},
		{"too many match conditions", func(w *admissionregistrationv1.ValidatingWebhook) {
			for i := range 65 {
				w.MatchConditions = append(w.MatchConditions, admissionregistrationv1.MatchCondition{Name: "m" + strings.Repeat("x", i), Expression: "true"})
			}
		}, "webhooks[0].matchConditions", "Too many"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := ValidateValidatingWebhookConfiguration(validatingWebhookConfig(tc.mutate))
			check(t, errs, tc.want)
			if tc.msg != "" && !strings.Contains(errs.ToAggregate().Error(), tc.msg) {
				t.Errorf("errors %v, want message %q", errs, tc.msg)
			}
		})
	}
}

func TestWebhookNamesUnique(t *testing.T) {
	c := validatingWebhookConfig(nil)
	c.Webhooks = append(c.Webhooks, c.Webhooks[0])
	check(t, ValidateValidatingWebhookConfiguration(c), "webhooks[1].name")

	// An object stored with duplicate names stays updatable.
	check(t, ValidateValidatingWebhookConfigurationUpdate(c, c), "")
}

func TestWebhookUpdateRatchets(t *testing.T) {
	old := validatingWebhookConfig(func(w *admissionregistrationv1.ValidatingWebhook) {
		w.SideEffects = ptr.To(admissionregistrationv1.SideEffectClassSome)
	})
	check(t, ValidateValidatingWebhookConfigurationUpdate(old, old), "")
	strict := validatingWebhookConfig(nil)
	check(t, ValidateValidatingWebhookConfigurationUpdate(old, strict), "webhooks[0].sideEffects")
}

func TestMutatingWebhookConfiguration(t *testing.T) {
	c := &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "m"},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name:                    "hook.example.com",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://example.com")},
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNoneOnDryRun),
			AdmissionReviewVersions: []string{"v1beta1"},
		}},
	}
	defaults.MutatingWebhookConfiguration(c)
	check(t, ValidateMutatingWebhookConfiguration(c), "")
	c.Webhooks[0].ReinvocationPolicy = ptr.To(admissionregistrationv1.ReinvocationPolicyType("Always"))
	check(t, ValidateMutatingWebhookConfiguration(c), "webhooks[0].reinvocationPolicy")
}

func policy(mutate func(p *admissionregistrationv1.ValidatingAdmissionPolicy)) *admissionregistrationv1.ValidatingAdmissionPolicy {
	p := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "p"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{"*"},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
				},
			}}},
			Validations: []admissionregistrationv1.Validation{{Expression: "object.metadata.name != 'x'"}},
		},
	}
	if mutate != nil {
		mutate(p)
	}
	defaults.ValidatingAdmissionPolicy(p)
	return p
}

func TestValidatingAdmissionPolicy(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(p *admissionregistrationv1.ValidatingAdmissionPolicy)
		want   string
		msg    string
	}{
		{"valid", nil, "", ""},
		{"variables and params", func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"}
			p.Spec.Variables = []admissionregistrationv1.Variable{{Name: "n", Expression: "object.metadata.name"}}
			p.Spec.Validations = []admissionregistrationv1.Validation{{Expression: "variables.n != params.data.x", MessageExpression: "'bad ' + variables.n"}}
			p.Spec.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "m", Expression: "params != null"}}
		}, "", ""},
		{"broken expression", func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.Validations[0].Expression = "object.metadata.name ==="
		}, "spec.validations[0].expression", "compilation failed"},
		{"empty expression", func(p *admissionregistrationv1.ValidatingAdmissionPolicy) { p.Spec.Validations[0].Expression = " " }, "spec.validations[0].expression", "expression is not specified"},
		{"expression not bool", func(p *admissionregistrationv1.ValidatingAdmissionPolicy) { p.Spec.Validations[0].Expression = "1" }, "spec.validations[0].expression", "must evaluate to bool"},
		{"params without paramKind", func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.Validations[0].Expression = "params.x == 1"
		}, "spec.validations[0].expression", "undeclared reference to 'params'"},
		{"broken message expression", func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.Validations[0].MessageExpression = "'a' +"
		}, "spec.validations[0].messageExpression", "compilation failed"},
		{"multi-line message", func(p *admissionregistrationv1.ValidatingAdmissionPolicy) { p.Spec.Validations[0].Message = "a\nb" }, "spec.validations[0].message", "must not contain line breaks"},
		{"bad reason", func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.Validations[0].Reason = ptr.To(metav1.StatusReason("Teapot"))
		}, "spec.validations[0].reason", "Unsupported value"},
		{"broken variable", func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.Variables = []admissionregistrationv1.Variable{{Name: "v", Expression: "object."}}
		}, "spec.variables[0].expression", "compilation failed"},
		{"variable name", func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.Variables = []admissionregistrationv1.Variable{{Name: "in", Expression: "1"}}
		}, "spec.variables[0].name", "must be a valid CEL identifier"},
		{"broken match condition", func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "m", Expression: "("}}
		}, "spec.matchConditions[0].expression", "compilation failed"},
		{"audit annotation", func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.AuditAnnotations = []admissionregistrationv1.AuditAnnotation{{Key: "k", ValueExpression: "1 +"}}
		}, "spec.auditAnnotations[0].valueExpression", "compilation failed"},
		{"audit annotation key", func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.AuditAnnotations = []admissionregistrationv1.AuditAnnotation{{Key: "a b", ValueExpression: "'x'"}}
		}, "spec.auditAnnotations[0].key", ""},
		{"nothing to do", func(p *admissionregistrationv1.ValidatingAdmissionPolicy) { p.Spec.Validations = nil }, "spec.validations", "validations or auditAnnotations must contain at least one item"},
		{"no match constraints", func(p *admissionregistrationv1.ValidatingAdmissionPolicy) { p.Spec.MatchConstraints = nil }, "spec.matchConstraints", "Required"},
		{"no resource rules", func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.MatchConstraints.ResourceRules = nil
		}, "spec.matchConstraints.resourceRules", "Required"},
		{"bad paramKind", func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: "a/b/c", Kind: "X"}
		}, "spec.paramKind.apiVersion", "unexpected GroupVersion string"},
		{"paramKind without kind", func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: "v1"}
		}, "spec.paramKind.kind", "Required"},
		{"duplicate resource name", func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.MatchConstraints.ResourceRules[0].ResourceNames = []string{"a", "a"}
		}, "spec.matchConstraints.resourceRules[0].resourceNames[1]", "Duplicate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := ValidateValidatingAdmissionPolicy(policy(tc.mutate))
			check(t, errs, tc.want)
			if tc.msg != "" && !strings.Contains(errs.ToAggregate().Error(), tc.msg) {
				t.Errorf("errors %v, want message %q", errs, tc.msg)
			}
		})
	}
}

func TestValidatingAdmissionPolicyNeedsDefaults(t *testing.T) {
	p := policy(nil)
	p.Spec.FailurePolicy = nil
	p.Spec.MatchConstraints.MatchPolicy = nil
	check(t, ValidateValidatingAdmissionPolicy(p), "spec.failurePolicy")
	check(t, ValidateValidatingAdmissionPolicy(p), "spec.matchConstraints.matchPolicy")
}

func TestValidatingAdmissionPolicyStatus(t *testing.T) {
	p := policy(nil)
	p.Status.TypeChecking = &admissionregistrationv1.TypeChecking{ExpressionWarnings: []admissionregistrationv1.ExpressionWarning{{FieldRef: "spec.validations[0].expression", Warning: "w"}}}
	check(t, ValidateValidatingAdmissionPolicyStatusUpdate(p, p), "")
	p.Status.TypeChecking.ExpressionWarnings[0] = admissionregistrationv1.ExpressionWarning{FieldRef: "spec.validations[", Warning: ""}
	errs := ValidateValidatingAdmissionPolicyStatusUpdate(p, p)
	check(t, errs, "status.typeChecking.expressionWarnings[0].warning")
	check(t, errs, "status.typeChecking.expressionWarnings[0].fieldRef")
}

func mutatingPolicy(mutate func(p *admissionregistrationv1.MutatingAdmissionPolicy)) *admissionregistrationv1.MutatingAdmissionPolicy {
	p := &admissionregistrationv1.MutatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "p"},
		Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{"CREATE"},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
				},
			}}},
			Mutations: []admissionregistrationv1.Mutation{{
				PatchType:          admissionregistrationv1.PatchTypeApplyConfiguration,
				ApplyConfiguration: &admissionregistrationv1.ApplyConfiguration{Expression: `Object{metadata: Object.metadata{labels: {"a": "b"}}}`},
			}},
			ReinvocationPolicy: admissionregistrationv1.NeverReinvocationPolicy,
		},
	}
	if mutate != nil {
		mutate(p)
	}
	defaults.MutatingAdmissionPolicy(p)
	return p
}

func TestMutatingAdmissionPolicy(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(p *admissionregistrationv1.MutatingAdmissionPolicy)
		want   string
	}{
		{"valid", nil, ""},
		{"json patch", func(p *admissionregistrationv1.MutatingAdmissionPolicy) {
			p.Spec.Mutations = []admissionregistrationv1.Mutation{{PatchType: admissionregistrationv1.PatchTypeJSONPatch, JSONPatch: &admissionregistrationv1.JSONPatch{
				Expression: `[JSONPatch{op: "add", path: "/metadata/labels/a", value: "b"}]`,
			}}}
		}, ""},
		{"broken apply configuration", func(p *admissionregistrationv1.MutatingAdmissionPolicy) {
			p.Spec.Mutations[0].ApplyConfiguration.Expression = "Object{"
		}, "spec.mutations[0].applyConfiguration.expression"},
		{"broken json patch", func(p *admissionregistrationv1.MutatingAdmissionPolicy) {
			p.Spec.Mutations = []admissionregistrationv1.Mutation{{PatchType: admissionregistrationv1.PatchTypeJSONPatch, JSONPatch: &admissionregistrationv1.JSONPatch{Expression: "[JSONPatch{"}}}
		}, "spec.mutations[0].jsonPatch.expression"},
		{"both patches", func(p *admissionregistrationv1.MutatingAdmissionPolicy) {
			p.Spec.Mutations[0].JSONPatch = &admissionregistrationv1.JSONPatch{Expression: "[]"}
		}, "spec.mutations[0].jsonPatch"},
		{"no patch type", func(p *admissionregistrationv1.MutatingAdmissionPolicy) { p.Spec.Mutations[0].PatchType = "" }, "spec.mutations[0].patchType"},
		{"no mutations", func(p *admissionregistrationv1.MutatingAdmissionPolicy) { p.Spec.Mutations = nil }, "spec.mutations"},
		{"delete", func(p *admissionregistrationv1.MutatingAdmissionPolicy) {
			p.Spec.MatchConstraints.ResourceRules[0].Operations = []admissionregistrationv1.OperationType{"DELETE"}
		}, "spec.matchConstraints.resourceRules.operations"},
		{"no reinvocation policy", func(p *admissionregistrationv1.MutatingAdmissionPolicy) { p.Spec.ReinvocationPolicy = "" }, "spec.reinvocationPolicy"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			check(t, ValidateMutatingAdmissionPolicy(mutatingPolicy(tc.mutate)), tc.want)
		})
	}
}

func TestBindings(t *testing.T) {
	deny := ptr.To(admissionregistrationv1.DenyAction)
	for _, tc := range []struct {
		name   string
		mutate func(s *admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec)
		want   string
	}{
		{"valid", nil, ""},
		{"param by name", func(s *admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec) {
			s.ParamRef = &admissionregistrationv1.ParamRef{Name: "p", Namespace: "ns", ParameterNotFoundAction: deny}
		}, ""},
		{"no policy", func(s *admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec) { s.PolicyName = "" }, "spec.policyName"},
		{"bad policy name", func(s *admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec) { s.PolicyName = "A_B" }, "spec.policyName"},
		{"no actions", func(s *admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec) { s.ValidationActions = nil }, "spec.validationActions"},
		{"bad action", func(s *admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec) {
			s.ValidationActions = []admissionregistrationv1.ValidationAction{"Scream"}
		}, "spec.validationActions[0]"},
		{"duplicate action", func(s *admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec) {
			s.ValidationActions = []admissionregistrationv1.ValidationAction{"Audit", "Audit"}
		}, "spec.validationActions[1]"},
		{"deny and warn", func(s *admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec) {
			s.ValidationActions = []admissionregistrationv1.ValidationAction{"Deny", "Warn"}
		}, "spec.validationActions"},
		{"name and selector", func(s *admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec) {
			s.ParamRef = &admissionregistrationv1.ParamRef{Name: "p", Selector: &metav1.LabelSelector{}, ParameterNotFoundAction: deny}
		}, "spec.paramRef.name"},
		{"neither name nor selector", func(s *admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec) {
			s.ParamRef = &admissionregistrationv1.ParamRef{ParameterNotFoundAction: deny}
		}, "spec.paramRef"},
		{"no parameterNotFoundAction", func(s *admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec) {
			s.ParamRef = &admissionregistrationv1.ParamRef{Name: "p"}
		}, "spec.paramRef.parameterNotFoundAction"},
		{"bad match resources", func(s *admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec) {
			s.MatchResources = &admissionregistrationv1.MatchResources{ExcludeResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{}}}
		}, "spec.matchResources.excludeResourceRules[0].operations"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
				ObjectMeta: metav1.ObjectMeta{Name: "b"},
				Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
					PolicyName:        "missing-policy-is-fine",
					ValidationActions: []admissionregistrationv1.ValidationAction{"Deny"},
				},
			}
			if tc.mutate != nil {
				tc.mutate(&b.Spec)
			}
			defaults.ValidatingAdmissionPolicyBinding(b)
			check(t, ValidateValidatingAdmissionPolicyBinding(b), tc.want)
		})
	}

	mb := &admissionregistrationv1.MutatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "b"},
		Spec: admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{PolicyName: "p", MatchResources: &admissionregistrationv1.MatchResources{
			ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
				Operations: []admissionregistrationv1.OperationType{"DELETE"},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
			}}},
		}},
	}
	defaults.MutatingAdmissionPolicyBinding(mb)
	check(t, ValidateMutatingAdmissionPolicyBinding(mb), "spec.matchResources.resourceRules.operations")
}

func TestStaticSuffix(t *testing.T) {
	check(t, ValidateStaticSuffix("a.static.k8s.io", field.NewPath("metadata", "name")), "metadata.name")
	check(t, ValidateStaticSuffix("a.example.com", field.NewPath("metadata", "name")), "")
	if len(WarningsForStaticSuffix("a.static.k8s.io")) != 1 {
		t.Error("want a warning")
	}
}

func TestWarningsForWebhookRules(t *testing.T) {
	c := validatingWebhookConfig(func(w *admissionregistrationv1.ValidatingWebhook) {
		w.Rules[0].APIGroups = []string{"authorization.k8s.io"}
		w.Rules[0].Resources = []string{"subjectaccessreviews", "other"}
	})
	warnings := WarningsForValidatingWebhookRules(c.Webhooks)
	if len(warnings) != 1 || !strings.HasPrefix(warnings[0], "webhooks[0].rules[0]: subjectaccessreviews.authorization.k8s.io is excluded") {
		t.Errorf("warnings %q", warnings)
	}
}
