package paramauthz

import (
	"context"
	"errors"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
)

// recorder allows what allow says and records every request.
type recorder struct {
	allow func(authorizer.Attributes) bool
	asked []authorizer.Attributes
}

func (r *recorder) Authorize(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	r.asked = append(r.asked, a)
	if r.allow(a) {
		return authorizer.DecisionAllow, "", nil
	}
	return authorizer.DecisionNoOpinion, "", nil
}

func userCtx(name string, groups ...string) context.Context {
	return genericapirequest.WithUser(context.Background(), &user.DefaultInfo{Name: name, Groups: groups})
}

func checker(allow func(authorizer.Attributes) bool) (Checker, *recorder) {
	scheme := runtime.NewScheme()
	scheme.AddKnownTypes(corev1.SchemeGroupVersion, &corev1.ConfigMap{})
	r := &recorder{allow: allow}
	return Checker{Authorizer: r, Resolver: SchemeResolver{Scheme: scheme}}, r
}

func TestPolicy(t *testing.T) {
	configMaps := &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"}
	c, r := checker(func(a authorizer.Attributes) bool { return a.GetResource() == "configmaps" && a.GetVerb() == "get" })
	if err := c.Policy(userCtx("alice"), configMaps); err != nil {
		t.Errorf("alice may get configmaps: %v", err)
	}
	// A kind the scheme does not serve needs permission on every resource
	// of its group version.
	custom := &admissionregistrationv1.ParamKind{APIVersion: "example.com/v1", Kind: "Widget"}
	err := c.Policy(userCtx("alice"), custom)
	if err == nil || !strings.Contains(err.Error(), `must have "get" permission on all objects of the referenced paramKind (kind=Widget, apiVersion=example.com/v1)`) {
		t.Errorf("custom kind: %v", err)
	}
	if last := r.asked[len(r.asked)-1]; last.GetResource() != "*" || last.GetAPIGroup() != "example.com" {
		t.Errorf("asked for %+v", last)
	}
	asked := len(r.asked)
	if err := c.Policy(userCtx("root", user.SystemPrivilegedGroup), custom); err != nil || len(r.asked) != asked {
		t.Errorf("system:masters: %v, asked %d more", err, len(r.asked)-asked)
	}
	if err := c.Policy(context.Background(), configMaps); err == nil {
		t.Error("no user: allowed")
	}
}

func TestBinding(t *testing.T) {
	configMaps := func(context.Context, string) (*admissionregistrationv1.ParamKind, error) {
		return &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"}, nil
	}
	missing := func(context.Context, string) (*admissionregistrationv1.ParamKind, error) {
		return nil, errors.New("not found")
	}
	byName := &admissionregistrationv1.ParamRef{Name: "p", Namespace: "ns"}
	bySelector := &admissionregistrationv1.ParamRef{Namespace: "ns"}

	c, r := checker(func(a authorizer.Attributes) bool {
		return a.GetResource() == "configmaps" && a.GetNamespace() == "ns" && (a.GetVerb() == "get" && a.GetName() == "p" || a.GetVerb() == "list")
	})
	if err := c.Binding(userCtx("alice"), "policy", byName, configMaps); err != nil {
		t.Errorf("by name: %v", err)
	}
	if err := c.Binding(userCtx("alice"), "policy", bySelector, configMaps); err != nil {
		t.Errorf("by selector: %v", err)
	}
	if a := r.asked[len(r.asked)-1]; a.GetVerb() != "list" {
		t.Errorf("selector asked %q, want list", a.GetVerb())
	}
	err := c.Binding(userCtx("alice"), "policy", byName, missing)
	if err == nil || !strings.Contains(err.Error(), "unable to get policy policy") {
		t.Errorf("missing policy: %v", err)
	}
	if err := c.Binding(userCtx("alice"), "policy", nil, missing); err != nil {
		t.Errorf("no paramRef: %v", err)
	}
	err = c.Binding(userCtx("bob"), "policy", &admissionregistrationv1.ParamRef{Name: "q", Namespace: "ns"}, configMaps)
	if err == nil || !strings.Contains(err.Error(), `does not have "get" permission on the object referenced by paramRef`) {
		t.Errorf("other object: %v", err)
	}
}

// TestWrites: a policy's paramKind is authorized when set on create or
// changed on update, a binding's paramRef on every create and on an update
// that changes the paramRef or the policy; a refusal is a Forbidden at the
// field the writer set.
func TestWrites(t *testing.T) {
	configMaps := &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"}
	secrets := &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "Secret"}
	kindOf := func(context.Context, string) (*admissionregistrationv1.ParamKind, error) { return configMaps, nil }
	ref := &admissionregistrationv1.ParamRef{Name: "p", Namespace: "ns"}
	c, r := checker(func(authorizer.Attributes) bool { return false })
	bob := userCtx("bob")
	for _, w := range []struct {
		name  string
		errs  func() int
		asked bool
	}{
		{"policy create without paramKind", func() int { return len(c.PolicyWrite(bob, nil, nil)) }, false},
		{"policy create", func() int { return len(c.PolicyWrite(bob, configMaps, nil)) }, true},
		{"policy update keeping paramKind", func() int {
			return len(c.PolicyWrite(bob, configMaps, &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"}))
		}, false},
		{"policy update changing paramKind", func() int { return len(c.PolicyWrite(bob, configMaps, secrets)) }, true},
		{"binding create", func() int { return len(c.BindingWrite(bob, "policy", ref, "", nil, kindOf)) }, true},
		{"binding update keeping both", func() int { return len(c.BindingWrite(bob, "policy", ref, "policy", ref.DeepCopy(), kindOf)) }, false},
		{"binding update changing policy", func() int { return len(c.BindingWrite(bob, "other", ref, "policy", ref.DeepCopy(), kindOf)) }, true},
		{"binding update adding a paramRef", func() int { return len(c.BindingWrite(bob, "policy", ref, "policy", nil, kindOf)) }, true},
	} {
		before := len(r.asked)
		n := w.errs()
		if asked := len(r.asked) > before; asked != w.asked || (n == 1) != w.asked {
			t.Errorf("%s: asked %v, %d errors; want asked %v", w.name, asked, n, w.asked)
		}
	}
	errs := c.BindingWrite(bob, "policy", ref, "", nil, kindOf)
	if len(errs) != 1 || errs[0].Field != "spec.paramRef" || errs[0].Type != "FieldValueForbidden" {
		t.Errorf("binding refusal: %v", errs)
	}
	errs = c.PolicyWrite(bob, configMaps, nil)
	if len(errs) != 1 || errs[0].Field != "spec.paramKind" || errs[0].Type != "FieldValueForbidden" {
		t.Errorf("policy refusal: %v", errs)
	}
}
