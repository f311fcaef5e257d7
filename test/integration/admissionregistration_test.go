package integration

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/gcp-project/gcp/pkg/controlplane/controllers/vapstatus"
)

// arConfigMapRules match configmaps in the core group.
func arConfigMapRules(ops ...admissionregistrationv1.OperationType) []admissionregistrationv1.NamedRuleWithOperations {
	return []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
		Operations: ops,
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
	}}}
}

func arWebhook(name, url string) admissionregistrationv1.ValidatingWebhook {
	return admissionregistrationv1.ValidatingWebhook{
		Name:         name,
		ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: ptr.To(url)},
		// The admission plugins are on: match only a resource no test writes.
		Rules: []admissionregistrationv1.RuleWithOperations{{
			Operations: []admissionregistrationv1.OperationType{"CREATE"},
			Rule:       admissionregistrationv1.Rule{APIGroups: []string{"example.com"}, APIVersions: []string{"v1"}, Resources: []string{"widgets"}},
		}},
		SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
		AdmissionReviewVersions: []string{"v1"},
	}
}

func arPolicy(name, expression string) *admissionregistrationv1.ValidatingAdmissionPolicy {
	return &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: arConfigMapRules("CREATE", "UPDATE")},
			Validations:      []admissionregistrationv1.Validation{{Expression: expression}},
		},
	}
}

func arMutatingPolicy(name, expression string) *admissionregistrationv1.MutatingAdmissionPolicy {
	return &admissionregistrationv1.MutatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: arConfigMapRules("CREATE")},
			Mutations: []admissionregistrationv1.Mutation{{
				PatchType:          admissionregistrationv1.PatchTypeApplyConfiguration,
				ApplyConfiguration: &admissionregistrationv1.ApplyConfiguration{Expression: expression},
			}},
			ReinvocationPolicy: admissionregistrationv1.NeverReinvocationPolicy,
		},
	}
}

// arInvalidAt fails unless err is a 422 with a cause at field.
func arInvalidAt(t *testing.T, what string, err error, field string) {
	t.Helper()
	if !apierrors.IsInvalid(err) {
		t.Errorf("%s: %v, want 422", what, err)
		return
	}
	var fields []string
	for _, cause := range err.(apierrors.APIStatus).Status().Details.Causes {
		fields = append(fields, cause.Field)
	}
	if !slices.Contains(fields, field) {
		t.Errorf("%s: causes at %q, want %q (%v)", what, fields, field, err)
	}
}

// TestAdmissionRegistrationLifecycle creates, reads, lists and updates
// each of the six resources: defaults are applied on create, generation
// starts at 1 and follows spec changes.
func TestAdmissionRegistrationLifecycle(t *testing.T) {
	t.Parallel()
	s := startGeneric(t)
	ctx := context.Background()
	ar := s.Client.AdmissionregistrationV1()

	vwc, err := ar.ValidatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "vwc"},
		Webhooks:   []admissionregistrationv1.ValidatingWebhook{arWebhook("check.example.com", "https://example.com/check")},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w := vwc.Webhooks[0]
	if *w.FailurePolicy != admissionregistrationv1.Fail || *w.MatchPolicy != admissionregistrationv1.Equivalent || *w.TimeoutSeconds != 10 ||
		w.NamespaceSelector == nil || w.ObjectSelector == nil || *w.Rules[0].Scope != admissionregistrationv1.AllScopes || vwc.Generation != 1 {
		t.Errorf("validating webhook not defaulted: %+v generation %d", w, vwc.Generation)
	}
	vwc.Webhooks = append(vwc.Webhooks, arWebhook("other.example.com", "https://example.com/other"))
	if vwc, err = ar.ValidatingWebhookConfigurations().Update(ctx, vwc, metav1.UpdateOptions{}); err != nil || vwc.Generation != 2 {
		t.Errorf("update: %v, generation %d", err, vwc.Generation)
	}

	mwc, err := ar.MutatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "mwc"},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name:                    "mutate.example.com",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Namespace: "default", Name: "hook"}},
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNoneOnDryRun),
			AdmissionReviewVersions: []string{"v1", "v1beta1"},
		}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if m := mwc.Webhooks[0]; *m.ReinvocationPolicy != admissionregistrationv1.NeverReinvocationPolicy || *m.ClientConfig.Service.Port != 443 {
		t.Errorf("mutating webhook not defaulted: %+v", m)
	}
	mwc.Labels = map[string]string{"a": "b"}
	if mwc, err = ar.MutatingWebhookConfigurations().Update(ctx, mwc, metav1.UpdateOptions{}); err != nil || mwc.Generation != 1 {
		t.Errorf("label update: %v, generation %d", err, mwc.Generation)
	}

	vap, err := ar.ValidatingAdmissionPolicies().Create(ctx, arPolicy("vap", "object.metadata.name != 'forbidden'"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if *vap.Spec.FailurePolicy != admissionregistrationv1.Fail || *vap.Spec.MatchConstraints.MatchPolicy != admissionregistrationv1.Equivalent ||
		vap.Spec.MatchConstraints.NamespaceSelector == nil || vap.Generation != 1 {
		t.Errorf("policy not defaulted: %+v generation %d", vap.Spec, vap.Generation)
	}
	vap.Spec.Validations = append(vap.Spec.Validations, admissionregistrationv1.Validation{Expression: "has(object.data)"})
	if vap, err = ar.ValidatingAdmissionPolicies().Update(ctx, vap, metav1.UpdateOptions{}); err != nil || vap.Generation != 2 {
		t.Errorf("policy update: %v, generation %d", err, vap.Generation)
	}

	// A binding may name a policy that does not exist.
	vapb, err := ar.ValidatingAdmissionPolicyBindings().Create(ctx, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "vapb"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        "no-such-policy",
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
			MatchResources:    &admissionregistrationv1.MatchResources{},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if *vapb.Spec.MatchResources.MatchPolicy != admissionregistrationv1.Equivalent || vapb.Generation != 1 {
		t.Errorf("binding not defaulted: %+v", vapb.Spec)
	}
	vapb.Spec.PolicyName = "vap"
	if vapb, err = ar.ValidatingAdmissionPolicyBindings().Update(ctx, vapb, metav1.UpdateOptions{}); err != nil || vapb.Generation != 2 {
		t.Errorf("binding update: %v, generation %d", err, vapb.Generation)
	}

	mapol, err := ar.MutatingAdmissionPolicies().Create(ctx, arMutatingPolicy("map", `Object{metadata: Object.metadata{labels: {"mutated": "yes"}}}`), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if *mapol.Spec.FailurePolicy != admissionregistrationv1.Fail || mapol.Generation != 1 {
		t.Errorf("mutating policy not defaulted: %+v", mapol.Spec)
	}
	mapol.Spec.ReinvocationPolicy = admissionregistrationv1.IfNeededReinvocationPolicy
	if mapol, err = ar.MutatingAdmissionPolicies().Update(ctx, mapol, metav1.UpdateOptions{}); err != nil || mapol.Generation != 2 {
		t.Errorf("mutating policy update: %v, generation %d", err, mapol.Generation)
	}

	mapb, err := ar.MutatingAdmissionPolicyBindings().Create(ctx, &admissionregistrationv1.MutatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "mapb"},
		Spec:       admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{PolicyName: "map"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mapb.Spec.PolicyName = "other"
	if mapb, err = ar.MutatingAdmissionPolicyBindings().Update(ctx, mapb, metav1.UpdateOptions{}); err != nil || mapb.Generation != 2 {
		t.Errorf("mutating binding update: %v, generation %d", err, mapb.Generation)
	}

	for name, list := range map[string]func() (int, error){
		"validatingwebhookconfigurations": func() (int, error) {
			l, err := ar.ValidatingWebhookConfigurations().List(ctx, metav1.ListOptions{})
			return len(l.Items), err
		},
		"mutatingwebhookconfigurations": func() (int, error) {
			l, err := ar.MutatingWebhookConfigurations().List(ctx, metav1.ListOptions{})
			return len(l.Items), err
		},
		"validatingadmissionpolicies": func() (int, error) {
			l, err := ar.ValidatingAdmissionPolicies().List(ctx, metav1.ListOptions{})
			return len(l.Items), err
		},
		"validatingadmissionpolicybindings": func() (int, error) {
			l, err := ar.ValidatingAdmissionPolicyBindings().List(ctx, metav1.ListOptions{})
			return len(l.Items), err
		},
		"mutatingadmissionpolicies": func() (int, error) {
			l, err := ar.MutatingAdmissionPolicies().List(ctx, metav1.ListOptions{})
			return len(l.Items), err
		},
		"mutatingadmissionpolicybindings": func() (int, error) {
			l, err := ar.MutatingAdmissionPolicyBindings().List(ctx, metav1.ListOptions{})
			return len(l.Items), err
		},
	} {
		if n, err := list(); err != nil || n != 1 {
			t.Errorf("list %s: %d items, %v", name, n, err)
		}
	}
	if got, err := ar.ValidatingAdmissionPolicies().Get(ctx, "vap", metav1.GetOptions{}); err != nil || len(got.Spec.Validations) != 2 {
		t.Errorf("get policy: %v %+v", err, got)
	}
}

// TestAdmissionRegistrationInvalid: invalid objects get 422 naming the
// field: broken CEL, bad webhook URLs, missing sideEffects, bad bindings.
func TestAdmissionRegistrationInvalid(t *testing.T) {
	t.Parallel()
	s := startGeneric(t)
	ctx := context.Background()
	ar := s.Client.AdmissionregistrationV1()

	for _, tc := range []struct {
		name, url, field, message string
	}{
		{"fragment", "https://example.com/x#frag", "webhooks[0].clientConfig.url", "fragments are not permitted in the URL"},
		{"query", "https://example.com/x?a=b", "webhooks[0].clientConfig.url", "query parameters are not permitted in the URL"},
		{"http", "http://example.com/x", "webhooks[0].clientConfig.url", "'https' is the only allowed URL scheme"},
	} {
		_, err := ar.ValidatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: tc.name},
			Webhooks:   []admissionregistrationv1.ValidatingWebhook{arWebhook("check.example.com", tc.url)},
		}, metav1.CreateOptions{})
		arInvalidAt(t, tc.name, err, tc.field)
		if err != nil && !strings.Contains(err.Error(), tc.message) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.message)
		}
	}

	noSideEffects := arWebhook("check.example.com", "https://example.com")
	noSideEffects.SideEffects = nil
	_, err := ar.ValidatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "no-side-effects"}, Webhooks: []admissionregistrationv1.ValidatingWebhook{noSideEffects},
	}, metav1.CreateOptions{})
	arInvalidAt(t, "missing sideEffects", err, "webhooks[0].sideEffects")

	_, err = ar.MutatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "short-name"},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name: "example.com", ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://example.com")},
			SideEffects: ptr.To(admissionregistrationv1.SideEffectClassNone), AdmissionReviewVersions: []string{"v1"},
			TimeoutSeconds: ptr.To[int32](60),
		}},
	}, metav1.CreateOptions{})
	arInvalidAt(t, "two-segment webhook name", err, "webhooks[0].name")
	arInvalidAt(t, "timeout", err, "webhooks[0].timeoutSeconds")

	_, err = ar.ValidatingAdmissionPolicies().Create(ctx, arPolicy("broken", "object.metadata.name =="), metav1.CreateOptions{})
	arInvalidAt(t, "broken CEL", err, "spec.validations[0].expression")
	if err != nil && !strings.Contains(err.Error(), "compilation failed") {
		t.Errorf("broken CEL: %v, want compilation failed", err)
	}
	withMessage := arPolicy("bad-message", "true")
	withMessage.Spec.Validations[0].MessageExpression = "'a' + 1"
	_, err = ar.ValidatingAdmissionPolicies().Create(ctx, withMessage, metav1.CreateOptions{})
	arInvalidAt(t, "message expression", err, "spec.validations[0].messageExpression")

	_, err = ar.MutatingAdmissionPolicies().Create(ctx, arMutatingPolicy("broken", "Object{"), metav1.CreateOptions{})
	arInvalidAt(t, "broken apply configuration", err, "spec.mutations[0].applyConfiguration.expression")

	_, err = ar.ValidatingAdmissionPolicyBindings().Create(ctx, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "deny-and-warn"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        "p",
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny, admissionregistrationv1.Warn},
		},
	}, metav1.CreateOptions{})
	arInvalidAt(t, "deny and warn", err, "spec.validationActions")

	_, err = ar.MutatingAdmissionPolicyBindings().Create(ctx, &admissionregistrationv1.MutatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "no-policy"},
	}, metav1.CreateOptions{})
	arInvalidAt(t, "no policy name", err, "spec.policyName")

	// A valid policy cannot be updated into an invalid one.
	p, err := ar.ValidatingAdmissionPolicies().Create(ctx, arPolicy("valid", "true"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.Spec.Validations[0].Expression = "nope("
	_, err = ar.ValidatingAdmissionPolicies().Update(ctx, p, metav1.UpdateOptions{})
	arInvalidAt(t, "update to broken CEL", err, "spec.validations[0].expression")

	if l, err := ar.ValidatingWebhookConfigurations().List(ctx, metav1.ListOptions{}); err != nil || len(l.Items) != 0 {
		t.Errorf("invalid webhook configurations stored: %v %v", err, l)
	}
}

// TestAdmissionRegistrationTable: kubectl gets upstream's columns.
func TestAdmissionRegistrationTable(t *testing.T) {
	t.Parallel()
	s := startGeneric(t)
	ctx := context.Background()
	ar := s.Client.AdmissionregistrationV1()
	if _, err := ar.ValidatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "vwc"},
		Webhooks:   []admissionregistrationv1.ValidatingWebhook{arWebhook("a.example.com", "https://example.com"), arWebhook("b.example.com", "https://example.com")},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	withParams := arPolicy("vap", "params != null")
	withParams.Spec.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"}
	if _, err := ar.ValidatingAdmissionPolicies().Create(ctx, withParams, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := ar.ValidatingAdmissionPolicyBindings().Create(ctx, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "vapb"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        "vap",
			ParamRef:          &admissionregistrationv1.ParamRef{Name: "limits", Namespace: "default", ParameterNotFoundAction: ptr.To(admissionregistrationv1.DenyAction)},
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Audit},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := ar.MutatingAdmissionPolicies().Create(ctx, arMutatingPolicy("map", `Object{}`), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := ar.MutatingAdmissionPolicyBindings().Create(ctx, &admissionregistrationv1.MutatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "mapb"},
		Spec:       admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{PolicyName: "map"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		resource string
		columns  []string
		cells    []any
	}{
		{"validatingwebhookconfigurations", []string{"Name", "Webhooks", "Age"}, []any{"vwc", float64(2)}},
		{"mutatingwebhookconfigurations", []string{"Name", "Webhooks", "Age"}, nil},
		{"validatingadmissionpolicies", []string{"Name", "Validations", "ParamKind", "Age"}, []any{"vap", float64(1), "v1/ConfigMap"}},
		{"validatingadmissionpolicybindings", []string{"Name", "PolicyName", "ParamRef", "Age"}, []any{"vapb", "vap", "default/limits"}},
		{"mutatingadmissionpolicies", []string{"Name", "Mutations", "ParamKind", "Age"}, []any{"map", float64(1), "<unset>"}},
		{"mutatingadmissionpolicybindings", []string{"Name", "PolicyName", "ParamRef", "Age"}, []any{"mapb", "map", "<unset>"}},
	} {
		raw, err := ar.RESTClient().Get().Resource(tc.resource).
			SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").Do(ctx).Raw()
		if err != nil {
			t.Fatalf("%s: %v", tc.resource, err)
		}
		var tbl metav1.Table
		if err := json.Unmarshal(raw, &tbl); err != nil {
			t.Fatal(err)
		}
		var columns []string
		for _, c := range tbl.ColumnDefinitions {
			columns = append(columns, c.Name)
		}
		if !slices.Equal(columns, tc.columns) {
			t.Errorf("%s: columns %q, want %q", tc.resource, columns, tc.columns)
		}
		if tc.cells == nil {
			continue
		}
		if len(tbl.Rows) != 1 || !slices.Equal(tbl.Rows[0].Cells[:len(tc.cells)], tc.cells) {
			t.Errorf("%s: rows %+v, want cells %v", tc.resource, tbl.Rows, tc.cells)
		}
	}
}

// TestValidatingAdmissionPolicyStatusSubresource: the status is written
// only through /status, which cannot change the spec.
func TestValidatingAdmissionPolicyStatusSubresource(t *testing.T) {
	t.Parallel()
	s := startGeneric(t)
	ctx := context.Background()
	policies := s.Client.AdmissionregistrationV1().ValidatingAdmissionPolicies()

	created := arPolicy("p", "true")
	created.Status.ObservedGeneration = 42
	p, err := policies.Create(ctx, created, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Status.ObservedGeneration != 0 {
		t.Errorf("status kept on create: %+v", p.Status)
	}
	p.Status.ObservedGeneration = 1
	if p, err = policies.Update(ctx, p, metav1.UpdateOptions{}); err != nil || p.Status.ObservedGeneration != 0 {
		t.Fatalf("status through the main resource: %v %+v", err, p.Status)
	}

	p.Status.ObservedGeneration = 1
	p.Status.TypeChecking = &admissionregistrationv1.TypeChecking{ExpressionWarnings: []admissionregistrationv1.ExpressionWarning{{FieldRef: "spec.validations[0].expression", Warning: "w"}}}
	p.Spec.FailurePolicy = ptr.To(admissionregistrationv1.Ignore)
	if p, err = policies.UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if p.Status.ObservedGeneration != 1 || p.Status.TypeChecking == nil || *p.Spec.FailurePolicy != admissionregistrationv1.Fail || p.Generation != 1 {
		t.Errorf("status update: spec %+v status %+v generation %d", p.Spec, p.Status, p.Generation)
	}

	p.Status.TypeChecking.ExpressionWarnings[0].Warning = ""
	_, err = policies.UpdateStatus(ctx, p, metav1.UpdateOptions{})
	arInvalidAt(t, "empty warning", err, "status.typeChecking.expressionWarnings[0].warning")
}

// TestAdmissionPolicyParamAuthorization: writing a policy with a paramKind
// or a binding with a paramRef needs read access to the parameters.
func TestAdmissionPolicyParamAuthorization(t *testing.T) {
	t.Parallel()
	s := startGeneric(t)
	ctx := context.Background()
	writeRule := rbacv1.PolicyRule{Verbs: []string{"create", "update", "get"}, APIGroups: []string{admissionregistrationv1.GroupName}, Resources: []string{"*"}}
	createClusterRole(t, s.Client, "policy-writer", writeRule)
	createClusterRoleBinding(t, s.Client, "policy-writer", "policy-writer", userSubject("writer"), userSubject("reader"))
	createClusterRole(t, s.Client, "configmap-reader", rbacv1.PolicyRule{Verbs: []string{"get", "list"}, APIGroups: []string{""}, Resources: []string{"configmaps"}})
	createClusterRoleBinding(t, s.Client, "configmap-reader", "configmap-reader", userSubject("reader"))

	policy := arPolicy("with-params", "params != null")
	policy.Spec.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "with-params"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        "with-params",
			ParamRef:          &admissionregistrationv1.ParamRef{Name: "limits", Namespace: "default", ParameterNotFoundAction: ptr.To(admissionregistrationv1.DenyAction)},
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}

	create := func(c kubernetes.Interface) error {
		_, err := c.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{})
		return err
	}
	writer, reader := userClient(t, s, "writer"), userClient(t, s, "reader")
	// The RBAC caches may lag the roles and bindings just made; once the
	// reader's, made last, are seen, so are the writer's.
	var last error
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		last = create(reader)
		return last == nil, nil
	}); err != nil {
		t.Fatalf("reader: %v", last)
	}
	arInvalidAt(t, "writer without configmap access", create(writer), "spec.paramKind")

	_, err := writer.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{})
	arInvalidAt(t, "binding by writer", err, "spec.paramRef")
	if _, err := reader.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatalf("binding by reader: %v", err)
	}

	// A custom resource as paramKind, made after the server started: read
	// access to that one resource is enough, found through discovery.
	createCRD(t, s, "params.example.com", "limits", "Limit")
	createClusterRole(t, s.Client, "limit-reader", rbacv1.PolicyRule{Verbs: []string{"get", "list"}, APIGroups: []string{"params.example.com"}, Resources: []string{"limits"}})
	createClusterRoleBinding(t, s.Client, "limit-reader", "limit-reader", userSubject("writer"))
	crdPolicy := arPolicy("with-crd-params", "params != null")
	crdPolicy.Spec.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: "params.example.com/v1", Kind: "Limit"}
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		_, last = writer.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(ctx, crdPolicy, metav1.CreateOptions{})
		return last == nil, nil
	}); err != nil {
		t.Fatalf("writer with read access to the custom paramKind: %v", last)
	}
}

// TestValidatingAdmissionPolicyStatusController: the controller records
// type-checking warnings and the observed generation of each policy.
func TestValidatingAdmissionPolicyStatusController(t *testing.T) {
	t.Parallel()
	s := startGeneric(t)
	runControllers(t, s, vapstatus.Descriptor())
	ctx := context.Background()
	policies := s.Client.AdmissionregistrationV1().ValidatingAdmissionPolicies()

	// configmaps' data is a map of strings: comparing a value with an int
	// is a type error the checker reports.
	if _, err := policies.Create(ctx, arPolicy("typo", "object.data.foo == 1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := policies.Create(ctx, arPolicy("fine", "object.data.foo == 'bar'"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	arWaitObserved := func(name string, generation int64) *admissionregistrationv1.ValidatingAdmissionPolicy {
		t.Helper()
		var p *admissionregistrationv1.ValidatingAdmissionPolicy
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			var err error
			p, err = policies.Get(ctx, name, metav1.GetOptions{})
			return err == nil && p.Status.ObservedGeneration == generation, err
		})
		if err != nil {
			t.Fatalf("%s: observedGeneration %d never reached: %v (status %+v)", name, generation, err, p.Status)
		}
		return p
	}

	typo := arWaitObserved("typo", 1)
	if tc := typo.Status.TypeChecking; tc == nil || len(tc.ExpressionWarnings) != 1 ||
		tc.ExpressionWarnings[0].FieldRef != "spec.validations[0].expression" ||
		!strings.Contains(tc.ExpressionWarnings[0].Warning, "no matching overload for '_==_' applied to '(string, int)'") {
		t.Errorf("typo: type checking %+v", tc)
	}
	if tc := arWaitObserved("fine", 1).Status.TypeChecking; tc != nil && len(tc.ExpressionWarnings) != 0 {
		t.Errorf("fine: type checking %+v", tc)
	}

	// Fixing the expression bumps the generation; the warning goes away.
	typo.Spec.Validations[0].Expression = "object.data.foo == '1'"
	if _, err := policies.Update(ctx, typo, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if tc := arWaitObserved("typo", 2).Status.TypeChecking; tc != nil && len(tc.ExpressionWarnings) != 0 {
		t.Errorf("fixed: type checking %+v", tc)
	}
}
