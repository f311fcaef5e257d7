package admissionregistration

import (
	"context"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/utils/ptr"

	"github.com/gcp-project/gcp/pkg/controlplane/registry/admissionregistration/mutatingadmissionpolicy"
	"github.com/gcp-project/gcp/pkg/controlplane/registry/admissionregistration/paramauthz"
	"github.com/gcp-project/gcp/pkg/controlplane/registry/admissionregistration/policybinding"
	"github.com/gcp-project/gcp/pkg/controlplane/registry/admissionregistration/validatingadmissionpolicy"
	"github.com/gcp-project/gcp/pkg/controlplane/registry/admissionregistration/webhookconfiguration"
)

type strategy interface {
	rest.RESTCreateStrategy
	rest.RESTUpdateStrategy
}

func noPolicy(context.Context, string) (*admissionregistrationv1.ParamKind, error) { return nil, nil }

// TestGeneration: each resource starts at generation 1 and is bumped when
// its spec (webhooks) changes, not when only metadata does.
func TestGeneration(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := (APIGroup{}).InstallScheme(scheme); err != nil {
		t.Fatal(err)
	}
	authz := paramauthz.Checker{}
	for _, tc := range []struct {
		name     string
		strategy strategy
		obj      func() runtime.Object
		change   func(runtime.Object)
	}{
		{"validatingwebhookconfigurations", webhookconfiguration.ValidatingStrategy(scheme),
			func() runtime.Object { return &admissionregistrationv1.ValidatingWebhookConfiguration{} },
			func(o runtime.Object) {
				c := o.(*admissionregistrationv1.ValidatingWebhookConfiguration)
				c.Webhooks = append(c.Webhooks, admissionregistrationv1.ValidatingWebhook{Name: "a.b.c"})
			}},
		{"mutatingwebhookconfigurations", webhookconfiguration.MutatingStrategy(scheme),
			func() runtime.Object { return &admissionregistrationv1.MutatingWebhookConfiguration{} },
			func(o runtime.Object) {
				c := o.(*admissionregistrationv1.MutatingWebhookConfiguration)
				c.Webhooks = append(c.Webhooks, admissionregistrationv1.MutatingWebhook{Name: "a.b.c"})
			}},
		{"validatingadmissionpolicies", validatingadmissionpolicy.Strategy(scheme, authz),
			func() runtime.Object { return &admissionregistrationv1.ValidatingAdmissionPolicy{} },
			func(o runtime.Object) {
				o.(*admissionregistrationv1.ValidatingAdmissionPolicy).Spec.FailurePolicy = ptr.To(admissionregistrationv1.Ignore)
			}},
		{"validatingadmissionpolicybindings", policybinding.ValidatingStrategy(scheme, authz, noPolicy),
			func() runtime.Object { return &admissionregistrationv1.ValidatingAdmissionPolicyBinding{} },
			func(o runtime.Object) {
				o.(*admissionregistrationv1.ValidatingAdmissionPolicyBinding).Spec.PolicyName = "other"
			}},
		{"mutatingadmissionpolicies", mutatingadmissionpolicy.Strategy(scheme, authz),
			func() runtime.Object { return &admissionregistrationv1.MutatingAdmissionPolicy{} },
			func(o runtime.Object) {
				o.(*admissionregistrationv1.MutatingAdmissionPolicy).Spec.ReinvocationPolicy = admissionregistrationv1.IfNeededReinvocationPolicy
			}},
		{"mutatingadmissionpolicybindings", policybinding.MutatingStrategy(scheme, authz, noPolicy),
			func() runtime.Object { return &admissionregistrationv1.MutatingAdmissionPolicyBinding{} },
			func(o runtime.Object) {
				o.(*admissionregistrationv1.MutatingAdmissionPolicyBinding).Spec.PolicyName = "other"
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			generation := func(o runtime.Object) int64 { return o.(metav1.Object).GetGeneration() }
			created := tc.obj()
			created.(metav1.Object).SetGeneration(7)
			tc.strategy.PrepareForCreate(ctx, created)
			if g := generation(created); g != 1 {
				t.Fatalf("generation on create %d, want 1", g)
			}

			relabeled := created.DeepCopyObject()
			relabeled.(metav1.Object).SetLabels(map[string]string{"a": "b"})
			tc.strategy.PrepareForUpdate(ctx, relabeled, created)
			if g := generation(relabeled); g != 1 {
				t.Errorf("generation after a metadata change %d, want 1", g)
			}

			changed := created.DeepCopyObject()
			tc.change(changed)
			tc.strategy.PrepareForUpdate(ctx, changed, created)
			if g := generation(changed); g != 2 {
				t.Errorf("generation after a spec change %d, want 2", g)
			}
		})
	}
}

// TestPolicyStatus: the main resource clears the status on create and
// keeps it on update; the status subresource keeps the spec.
func TestPolicyStatus(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := (APIGroup{}).InstallScheme(scheme); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	main := validatingadmissionpolicy.Strategy(scheme, paramauthz.Checker{})
	status := validatingadmissionpolicy.StatusStrategy(main)

	p := &admissionregistrationv1.ValidatingAdmissionPolicy{Status: admissionregistrationv1.ValidatingAdmissionPolicyStatus{ObservedGeneration: 5}}
	main.PrepareForCreate(ctx, p)
	if p.Status.ObservedGeneration != 0 {
		t.Errorf("status kept on create: %+v", p.Status)
	}

	old := p.DeepCopy()
	old.Status.ObservedGeneration = 1
	upd := old.DeepCopy()
	upd.Status.ObservedGeneration = 9
	main.PrepareForUpdate(ctx, upd, old)
	if upd.Status.ObservedGeneration != 1 {
		t.Errorf("status changed through the main resource: %+v", upd.Status)
	}

	upd = old.DeepCopy()
	upd.Status.ObservedGeneration = 9
	upd.Spec.FailurePolicy = ptr.To(admissionregistrationv1.Ignore)
	status.PrepareForUpdate(ctx, upd, old)
	if upd.Status.ObservedGeneration != 9 || upd.Spec.FailurePolicy != nil || upd.Generation != old.Generation {
		t.Errorf("status update: spec %+v status %+v generation %d", upd.Spec, upd.Status, upd.Generation)
	}
	if _, ok := main.GetResetFields()["admissionregistration.k8s.io/v1"]; !ok {
		t.Error("main strategy resets no fields")
	}
}
