package vapstatus

import (
	"context"
	"fmt"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/gcp-project/gcp/test/informertest"
)

// fixedChecker warns about every validation and counts its calls.
type fixedChecker struct{ calls int }

func (c *fixedChecker) Check(p *admissionregistrationv1.ValidatingAdmissionPolicy) []admissionregistrationv1.ExpressionWarning {
	c.calls++
	var out []admissionregistrationv1.ExpressionWarning
	for i := range p.Spec.Validations {
		out = append(out, admissionregistrationv1.ExpressionWarning{FieldRef: fmt.Sprintf("spec.validations[%d].expression", i), Warning: "mistyped"})
	}
	return out
}

func newSynced(t *testing.T, policies ...*admissionregistrationv1.ValidatingAdmissionPolicy) (*Controller, *fake.Clientset, *fixedChecker) {
	t.Helper()
	client := fake.NewClientset()
	for _, p := range policies {
		if _, err := client.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	factory := informers.NewSharedInformerFactory(client, 0)
	checker := &fixedChecker{}
	c, err := New(factory.Admissionregistration().V1().ValidatingAdmissionPolicies(), client.AdmissionregistrationV1().ValidatingAdmissionPolicies(), checker)
	if err != nil {
		t.Fatal(err)
	}
	informertest.Start(t, factory, c.queue)
	return c, client, checker
}

func TestSync(t *testing.T) {
	stale := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "stale", Generation: 3},
		Spec:       admissionregistrationv1.ValidatingAdmissionPolicySpec{Validations: []admissionregistrationv1.Validation{{Expression: "1"}}},
		Status:     admissionregistrationv1.ValidatingAdmissionPolicyStatus{ObservedGeneration: 2},
	}
	current := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "current", Generation: 2},
		Status:     admissionregistrationv1.ValidatingAdmissionPolicyStatus{ObservedGeneration: 2},
	}
	c, client, checker := newSynced(t, stale, current)
	ctx := context.Background()
	for _, name := range []string{"stale", "current", "gone"} {
		if err := c.sync(ctx, name); err != nil {
			t.Fatalf("sync %s: %v", name, err)
		}
	}
	if checker.calls != 1 {
		t.Errorf("checked %d policies, want only the stale one", checker.calls)
	}
	got, err := client.AdmissionregistrationV1().ValidatingAdmissionPolicies().Get(ctx, "stale", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tc := got.Status.TypeChecking
	if got.Status.ObservedGeneration != 3 || tc == nil || len(tc.ExpressionWarnings) != 1 || tc.ExpressionWarnings[0].FieldRef != "spec.validations[0].expression" {
		t.Errorf("status %+v", got.Status)
	}
	var applied bool
	for _, a := range client.Actions() {
		if a.GetVerb() == "patch" && a.GetSubresource() == "status" {
			applied = true
		}
	}
	if !applied {
		t.Errorf("no status patch in %v", client.Actions())
	}
}
