package integration

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"

	"github.com/gcp-project/gcp/pkg/layering"
	"github.com/gcp-project/gcp/pkg/testserver"
)

// polRules match creating and updating resources of group gr.
func polRules(group, resource string) *admissionregistrationv1.MatchResources {
	return &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
		RuleWithOperations: admissionregistrationv1.RuleWithOperations{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
			Rule:       admissionregistrationv1.Rule{APIGroups: []string{group}, APIVersions: []string{"*"}, Resources: []string{resource}},
		},
	}}}
}

// polInNamespacesLabelled binds to namespaces labelled policy=value.
func polInNamespacesLabelled(value string) *admissionregistrationv1.MatchResources {
	return &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"policy": value}}}
}

// polCustom builds a custom resource of gvr named name.
func polCustom(gvr schema.GroupVersionResource, kind, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"size": int64(1)}}}
	u.SetAPIVersion(gvr.GroupVersion().String())
	u.SetKind(kind)
	u.SetName(name)
	return u
}

// TestValidatingAdmissionPolicy: a policy bound with Deny rejects
// configmaps and custom resources that fail its CEL validation, with
// upstream's message, only where its binding matches; a binding to a
// policy that does not exist is accepted and does nothing.
func TestValidatingAdmissionPolicy(t *testing.T) {
	s := startGeneric(t)
	ctx := context.Background()
	gadgets := createCRD(t, s, "policy.example.com", "gadgets", "Gadget")
	for name, label := range map[string]string{"vap-on": "on", "vap-off": "off"} {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"policy": label}}}
		if _, err := s.Client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	api := s.Client.AdmissionregistrationV1()
	// A binding may name a policy that does not exist (yet): accepted, inert.
	dangling := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "dangling"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: "does-not-exist",
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}},
	}
	if _, err := api.ValidatingAdmissionPolicyBindings().Create(ctx, dangling, metav1.CreateOptions{}); err != nil {
		t.Fatalf("binding to a missing policy: %v", err)
	}

	for _, p := range []struct {
		name       string
		match      *admissionregistrationv1.MatchResources
		expression string
		message    string
	}{
		{"no-forbidden-key", polRules("", "configmaps"), `!has(object.data) || !('forbidden' in object.data)`, "the key forbidden is not allowed"},
		{"small-gadgets", polRules(gadgets.Group, gadgets.Resource), `object.spec.size <= 10`, "gadgets are at most 10"},
	} {
		policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: p.name},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
				FailurePolicy:    ptr.To(admissionregistrationv1.Fail),
				MatchConstraints: p.match,
				Validations:      []admissionregistrationv1.Validation{{Expression: p.expression, Message: p.message}},
			},
		}
		if _, err := api.ValidatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
			ObjectMeta: metav1.ObjectMeta{Name: p.name + "-binding"},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
				PolicyName:        p.name,
				ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
				MatchResources:    polInNamespacesLabelled("on"),
			},
		}
		if _, err := api.ValidatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	forbidden := func(name string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"forbidden": "x"}}
	}
	whEventually(t, "policy denies a configmap", func(name string) error {
		_, err := s.Client.CoreV1().ConfigMaps("vap-on").Create(ctx, forbidden(name), metav1.CreateOptions{})
		return err
	}, func(err error) bool { return apierrors.IsInvalid(err) })

	// A validation without a reason fails as Invalid (422), as upstream.
	_, err := s.Client.CoreV1().ConfigMaps("vap-on").Create(ctx, forbidden("denied"), metav1.CreateOptions{})
	want := `ValidatingAdmissionPolicy 'no-forbidden-key' with binding 'no-forbidden-key-binding' denied request: the key forbidden is not allowed`
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), want) {
		t.Fatalf("got %v, want 422 with %q", err, want)
	}
	if _, err := s.Client.CoreV1().ConfigMaps("vap-on").Get(ctx, "denied", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("denied configmap was stored: %v", err)
	}
	if _, err := s.Client.CoreV1().ConfigMaps("vap-off").Create(ctx, forbidden("elsewhere"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("binding should not match vap-off: %v", err)
	}
	if _, err := s.Client.CoreV1().ConfigMaps("vap-on").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "fine"}, Data: map[string]string{"ok": "x"}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("valid configmap: %v", err)
	}

	dyn := dynamic.NewForConfigOrDie(s.AdminConfig).Resource(gadgets).Namespace("vap-on")
	whEventually(t, "policy denies a big gadget", func(name string) error {
		big := polCustom(gadgets, "Gadget", name)
		_ = unstructured.SetNestedField(big.Object, int64(11), "spec", "size")
		_, err := dyn.Create(ctx, big, metav1.CreateOptions{})
		return err
	}, func(err error) bool {
		return apierrors.IsInvalid(err) && strings.Contains(err.Error(), "gadgets are at most 10")
	})
	if _, err := dyn.Create(ctx, polCustom(gadgets, "Gadget", "small"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("small gadget: %v", err)
	}
}

// TestMutatingAdmissionPolicy: a mutating policy sets a label with an
// apply configuration on configmaps and one with a JSON patch on custom
// resources, and the stored objects carry them.
func TestMutatingAdmissionPolicy(t *testing.T) {
	s := startGeneric(t)
	ctx := context.Background()
	gadgets := createCRD(t, s, "mpolicy.example.com", "gadgets", "Gadget")
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "map-on", Labels: map[string]string{"policy": "on"}}}
	if _, err := s.Client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	api := s.Client.AdmissionregistrationV1()
	for _, p := range []struct {
		name     string
		match    *admissionregistrationv1.MatchResources
		mutation admissionregistrationv1.Mutation
	}{
		{"label-configmaps", polRules("", "configmaps"), admissionregistrationv1.Mutation{
			PatchType: admissionregistrationv1.PatchTypeApplyConfiguration,
			ApplyConfiguration: &admissionregistrationv1.ApplyConfiguration{
				Expression: `Object{metadata: Object.metadata{labels: {"policy-mutated": "yes"}}}`,
			},
		}},
		{"label-gadgets", polRules(gadgets.Group, gadgets.Resource), admissionregistrationv1.Mutation{
			PatchType: admissionregistrationv1.PatchTypeJSONPatch,
			JSONPatch: &admissionregistrationv1.JSONPatch{
				Expression: `[JSONPatch{op: "add", path: "/metadata/labels", value: {"policy-mutated": "yes"}}]`,
			},
		}},
	} {
		policy := &admissionregistrationv1.MutatingAdmissionPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: p.name},
			Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
				FailurePolicy:      ptr.To(admissionregistrationv1.Fail),
				MatchConstraints:   p.match,
				ReinvocationPolicy: admissionregistrationv1.NeverReinvocationPolicy,
				Mutations:          []admissionregistrationv1.Mutation{p.mutation},
			},
		}
		if _, err := api.MutatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		binding := &admissionregistrationv1.MutatingAdmissionPolicyBinding{
			ObjectMeta: metav1.ObjectMeta{Name: p.name + "-binding"},
			Spec: admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{
				PolicyName:     p.name,
				MatchResources: polInNamespacesLabelled("on"),
			},
		}
		if _, err := api.MutatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	whEventually(t, "policy labels a configmap", func(name string) error {
		cm, err := s.Client.CoreV1().ConfigMaps("map-on").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		if cm.Labels["policy-mutated"] != "yes" {
			return fmt.Errorf("labels %v", cm.Labels)
		}
		return nil
	}, func(err error) bool { return err == nil })

	dyn := dynamic.NewForConfigOrDie(s.AdminConfig).Resource(gadgets).Namespace("map-on")
	whEventually(t, "policy labels a gadget", func(name string) error {
		if _, err := dyn.Create(ctx, polCustom(gadgets, "Gadget", name), metav1.CreateOptions{}); err != nil {
			return err
		}
		stored, err := dyn.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if stored.GetLabels()["policy-mutated"] != "yes" {
			return fmt.Errorf("labels %v", stored.GetLabels())
		}
		return nil
	}, func(err error) bool { return err == nil })
}

// TestPoliciesHoldFromTheFirstWriteAfterARestart: gcp initializes the
// policy plugins only once their informers have synced
// (pkg/controlplane/admission/policysync.go), so the first write after a
// restart, when the policies are already in etcd, must wait for them
// rather than pass a plugin that has none yet: it is denied by the
// validating policy, and labelled by the mutating one.
func TestPoliciesHoldFromTheFirstWriteAfterARestart(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	first := testserver.Start(t, testserver.Options{Stack: layering.Generic(), DataDir: dir})
	api := first.Client.AdmissionregistrationV1()
	match := polRules("", "configmaps")
	if _, err := api.ValidatingAdmissionPolicies().Create(ctx, &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "no-forbidden-key"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy:    ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: match,
			Validations:      []admissionregistrationv1.Validation{{Expression: `!has(object.data) || !('forbidden' in object.data)`}},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := api.ValidatingAdmissionPolicyBindings().Create(ctx, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "no-forbidden-key"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: "no-forbidden-key",
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := api.MutatingAdmissionPolicies().Create(ctx, &admissionregistrationv1.MutatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "label-configmaps"},
		Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
			FailurePolicy:      ptr.To(admissionregistrationv1.Fail),
			MatchConstraints:   match,
			ReinvocationPolicy: admissionregistrationv1.NeverReinvocationPolicy,
			Mutations: []admissionregistrationv1.Mutation{{
				PatchType: admissionregistrationv1.PatchTypeApplyConfiguration,
				ApplyConfiguration: &admissionregistrationv1.ApplyConfiguration{
					Expression: `Object{metadata: Object.metadata{labels: {"policy-mutated": "yes"}}}`,
				},
			}},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := api.MutatingAdmissionPolicyBindings().Create(ctx, &admissionregistrationv1.MutatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "label-configmaps"},
		Spec:       admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{PolicyName: "label-configmaps"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	whEventually(t, "both policies hold before the restart", func(name string) error {
		cm, err := first.Client.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		if cm.Labels["policy-mutated"] != "yes" {
			return fmt.Errorf("labels %v", cm.Labels)
		}
		_, err = first.Client.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name + "-forbidden"}, Data: map[string]string{"forbidden": "x"}}, metav1.CreateOptions{})
		if err == nil {
			return errors.New("a forbidden key was let through")
		}
		if !apierrors.IsInvalid(err) {
			return err
		}
		return nil
	}, func(err error) bool { return err == nil })
	if err := first.Stop(); err != nil {
		t.Fatal(err)
	}

	second := testserver.Start(t, testserver.Options{Stack: layering.Generic(), DataDir: dir})
	cms := second.Client.CoreV1().ConfigMaps("default")
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "after-restart-forbidden"}, Data: map[string]string{"forbidden": "x"}}, metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("the first write after the restart, with a forbidden key: %v, want 422 from the policy", err)
	}
	cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "after-restart"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cm.Labels["policy-mutated"] != "yes" {
		t.Errorf("the first configmap after the restart has labels %v, want the mutating policy's", cm.Labels)
	}
}
