package integration

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// manyItems is a JSON list of n short strings.
func manyItems(n int) string {
	items := make([]string, n)
	for i := range items {
		items[i] = fmt.Sprintf(`"%06d"`, i)
	}
	return "[" + strings.Join(items, ",") + "]"
}

// TestCELEvaluationBudget: CEL whose cost grows with the square of a list's
// length (cel-go's cost tracker) is stopped at gcp's evaluation budget and
// the write gets a 422, for a CRD's validation rule and for a
// ValidatingAdmissionPolicy; small objects pass the same rules. Issue 28:
// one custom resource with 80,000 items held a core for 8.7 s.
func TestCELEvaluationBudget(t *testing.T) {
	t.Parallel()
	s := startGeneric(t)
	ctx := context.Background()

	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "lists.budget.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "budget.example.com", Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "lists", Kind: "List"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"spec": {
							Type: "object",
							Properties: map[string]apiextensionsv1.JSONSchemaProps{
								"items": {Type: "array", MaxItems: ptr.To[int64](200000),
									Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{Type: "string", MaxLength: ptr.To[int64](16)}}},
							},
							XValidations: apiextensionsv1.ValidationRules{{Rule: "self.items.all(x, x.size() <= 8)"}},
						},
					},
				}}}},
		},
	}
	if _, err := apiextensionsclient.NewForConfigOrDie(s.AdminConfig).ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	const lists = "/apis/budget.example.com/v1/namespaces/default/lists"
	list := func(name string, n int) []byte {
		return []byte(`{"apiVersion":"budget.example.com/v1","kind":"List","metadata":{"name":"` + name + `"},"spec":{"items":` + manyItems(n) + `}}`)
	}
	nsEventually(t, 30*time.Second, "lists served", func() (bool, error) {
		code, _ := rawRequest(t, s.AdminConfig, http.MethodPost, lists+"?dryRun=All", "application/json", list("probe", 1))
		return code == http.StatusCreated, nil
	})
	if code, out := rawRequest(t, s.AdminConfig, http.MethodPost, lists, "application/json", list("small", 100)); code != http.StatusCreated {
		t.Fatalf("a list of 100 items: %d %.300s", code, out)
	}
	start := time.Now()
	code, out := rawRequest(t, s.AdminConfig, http.MethodPost, lists, "application/json", list("large", 150000))
	if code != http.StatusUnprocessableEntity || !strings.Contains(out, "evaluation budget") || !strings.Contains(out, "lists.budget.example.com") {
		t.Errorf("a list of 150,000 items: want 422 naming the budget and the resource, got %d: %.400s", code, out)
	}
	t.Logf("150,000 items answered in %s", time.Since(start))
	if code, _ := rawRequest(t, s.AdminConfig, http.MethodGet, lists+"/large", "", nil); code != http.StatusNotFound {
		t.Errorf("the refused list was stored: GET answered %d", code)
	}

	// A policy over a list of another custom resource's, which has no
	// rules of its own. (A ConfigMap's keys, as issue 28 measured, are now
	// refused past nesting.Width before any policy runs.)
	createCRD(t, s, "plainbudget.example.com", "things", "Thing")
	const things = "/apis/plainbudget.example.com/v1/namespaces/default/things"
	thing := func(name string, items string) []byte {
		return []byte(`{"apiVersion":"plainbudget.example.com/v1","kind":"Thing","metadata":{"name":"` + name + `"},"spec":{"items":` + items + `}}`)
	}
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "short-items"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{"plainbudget.example.com"}, APIVersions: []string{"v1"}, Resources: []string{"things"}},
				},
			}}},
			Validations: []admissionregistrationv1.Validation{{Expression: "!has(object.spec) || object.spec.items.all(x, string(x).size() <= 8)"}},
		},
	}
	if _, err := s.Client.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Client.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(ctx, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "short-items"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: "short-items",
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	nsEventually(t, 30*time.Second, "the policy in force", func() (bool, error) {
		code, out := rawRequest(t, s.AdminConfig, http.MethodPost, things+"?dryRun=All", "application/json", thing("long", `["an-item-too-long"]`))
		return code == http.StatusUnprocessableEntity && strings.Contains(out, "short-items"), nil
	})
	start = time.Now()
	code, out = rawRequest(t, s.AdminConfig, http.MethodPost, things, "application/json", thing("many", manyItems(150000)))
	if code != http.StatusUnprocessableEntity || !strings.Contains(out, "short-items") || !strings.Contains(out, "interrupted") {
		t.Errorf("a thing of 150,000 items: want a denial naming the policy and the interruption, got %d: %.400s", code, out)
	}
	t.Logf("150,000 items under a policy answered in %s", time.Since(start))
}
