package authorization

import (
	"context"
	"errors"
	"reflect"
	"sort"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	serverstorage "k8s.io/apiserver/pkg/server/storage"

	"github.com/gcp-project/gcp/pkg/controlplane/registry"
)

// fakeAuthorizer decides by verb and records what it was asked.
type fakeAuthorizer struct{ asked []authorizer.Attributes }

func (f *fakeAuthorizer) authorizer() authorizer.Authorizer {
	return authorizer.AuthorizerFunc(func(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
		f.asked = append(f.asked, a)
		switch a.GetVerb() {
		case "get":
			return authorizer.DecisionAllow, "allowed by test", nil
		case "delete":
			return authorizer.DecisionDeny, "denied by test", nil
		case "watch":
			return authorizer.DecisionNoOpinion, "", errors.New("webhook unreachable")
		case "patch":
			return authorizer.DecisionAllow, "allowed despite", errors.New("one authorizer failed")
		}
		return authorizer.DecisionNoOpinion, "", nil
	})
}

func (f *fakeAuthorizer) last(t *testing.T) authorizer.AttributesRecord {
	t.Helper()
	if len(f.asked) == 0 {
		t.Fatal("the authorizer was not asked")
	}
	return f.asked[len(f.asked)-1].(authorizer.AttributesRecord)
}

// causes lists the field paths of a 422.
func causes(t *testing.T, err error) string {
	t.Helper()
	if !apierrors.IsInvalid(err) {
		t.Fatalf("want 422, got %v", err)
	}
	var out []string
	for _, c := range err.(apierrors.APIStatus).Status().Details.Causes {
		out = append(out, c.Field)
	}
	return strings.Join(out, ",")
}

func admitAll(called *bool) func(context.Context, runtime.Object) error {
	return func(context.Context, runtime.Object) error { *called = true; return nil }
}

func res(verb string) *authorizationv1.ResourceAttributes {
	return &authorizationv1.ResourceAttributes{Verb: verb, Resource: "configmaps", Namespace: "ns"}
}

func TestSubjectAccessReviewValidation(t *testing.T) {
	withSelectors := func(fs *authorizationv1.FieldSelectorAttributes, ls *authorizationv1.LabelSelectorAttributes) *authorizationv1.ResourceAttributes {
		r := res("list")
		r.FieldSelector, r.LabelSelector = fs, ls
		return r
	}
	fieldReq := func(key string, op metav1.FieldSelectorOperator, values ...string) *authorizationv1.FieldSelectorAttributes {
		return &authorizationv1.FieldSelectorAttributes{Requirements: []metav1.FieldSelectorRequirement{{Key: key, Operator: op, Values: values}}}
	}
	labelReq := func(key string, op metav1.LabelSelectorOperator, values ...string) *authorizationv1.LabelSelectorAttributes {
		return &authorizationv1.LabelSelectorAttributes{Requirements: []metav1.LabelSelectorRequirement{{Key: key, Operator: op, Values: values}}}
	}
	for _, tc := range []struct {
		name string
		meta metav1.ObjectMeta
		spec authorizationv1.SubjectAccessReviewSpec
		want string
	}{
		{name: "neither resource nor non-resource", spec: authorizationv1.SubjectAccessReviewSpec{User: "u"}, want: "spec"},
		{name: "both", spec: authorizationv1.SubjectAccessReviewSpec{User: "u", ResourceAttributes: res("get"), NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/x", Verb: "get"}}, want: "spec"},
		{name: "no user or group", spec: authorizationv1.SubjectAccessReviewSpec{ResourceAttributes: res("get")}, want: "spec.user"},
		{name: "empty spec", want: "spec,spec.user"},
		{name: "metadata", meta: metav1.ObjectMeta{Name: "x"}, spec: authorizationv1.SubjectAccessReviewSpec{User: "u", ResourceAttributes: res("get")}, want: "metadata"},
		{name: "raw and requirements", spec: authorizationv1.SubjectAccessReviewSpec{User: "u", ResourceAttributes: withSelectors(
			&authorizationv1.FieldSelectorAttributes{RawSelector: "a=b", Requirements: fieldReq("a", metav1.FieldSelectorOpIn, "b").Requirements},
			&authorizationv1.LabelSelectorAttributes{RawSelector: "a=b", Requirements: labelReq("a", metav1.LabelSelectorOpIn, "b").Requirements})},
			want: "spec.resourceAttributes.fieldSelector.rawSelector,spec.resourceAttributes.labelSelector.rawSelector"},
		{name: "empty selectors", spec: authorizationv1.SubjectAccessReviewSpec{User: "u", ResourceAttributes: withSelectors(&authorizationv1.FieldSelectorAttributes{}, &authorizationv1.LabelSelectorAttributes{})},
			want: "spec.resourceAttributes.fieldSelector.requirements,spec.resourceAttributes.labelSelector.requirements"},
		{name: "field requirement without key or values", spec: authorizationv1.SubjectAccessReviewSpec{User: "u", ResourceAttributes: withSelectors(fieldReq("", metav1.FieldSelectorOpIn), nil)},
			want: "spec.resourceAttributes.fieldSelector.requirements[0].key,spec.resourceAttributes.fieldSelector.requirements[0].values"},
		{name: "field Exists with values", spec: authorizationv1.SubjectAccessReviewSpec{User: "u", ResourceAttributes: withSelectors(fieldReq("a", metav1.FieldSelectorOpExists, "x"), nil)},
			want: "spec.resourceAttributes.fieldSelector.requirements[0].values"},
		{name: "label requirement with a bad key and value", spec: authorizationv1.SubjectAccessReviewSpec{User: "u", ResourceAttributes: withSelectors(nil, labelReq("a b", metav1.LabelSelectorOpIn, "c d"))},
			want: "spec.resourceAttributes.labelSelector.requirements[0].key,spec.resourceAttributes.labelSelector.requirements[0].values[0]"},
		{name: "label DoesNotExist with values", spec: authorizationv1.SubjectAccessReviewSpec{User: "u", ResourceAttributes: withSelectors(nil, labelReq("a", metav1.LabelSelectorOpDoesNotExist, "x"))},
			want: "spec.resourceAttributes.labelSelector.requirements[0].values"},
		{name: "unknown operators pass", spec: authorizationv1.SubjectAccessReviewSpec{User: "u", ResourceAttributes: withSelectors(fieldReq("a", "Near", "b"), labelReq("a", "Near", "b"))}},
		{name: "groups alone", spec: authorizationv1.SubjectAccessReviewSpec{Groups: []string{"g"}, NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/x", Verb: "get"}}},
		{name: "managed fields are fine", meta: metav1.ObjectMeta{ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m"}}}, spec: authorizationv1.SubjectAccessReviewSpec{User: "u", ResourceAttributes: res("get")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fa := &fakeAuthorizer{}
			r := &subjectAccessReviewREST{authorizer: fa.authorizer()}
			admitted := false
			_, err := r.Create(context.Background(), &authorizationv1.SubjectAccessReview{ObjectMeta: tc.meta, Spec: tc.spec}, admitAll(&admitted), nil)
			if tc.want == "" {
				if err != nil || !admitted || len(fa.asked) != 1 {
					t.Fatalf("want success, got %v (admitted %v, asked %d)", err, admitted, len(fa.asked))
				}
				return
			}
			if got := causes(t, err); got != tc.want {
				t.Errorf("fields %q, want %q (%v)", got, tc.want, err)
			}
			if admitted || len(fa.asked) > 0 {
				t.Errorf("an invalid review reached admission or the authorizer")
			}
			if !strings.Contains(err.Error(), `SubjectAccessReview.authorization.k8s.io`) {
				t.Errorf("error kind: %v", err)
			}
		})
	}
}

func TestSubjectAccessReviewDecision(t *testing.T) {
	for _, tc := range []struct {
		verb string
		want authorizationv1.SubjectAccessReviewStatus
	}{
		{"get", authorizationv1.SubjectAccessReviewStatus{Allowed: true, Reason: "allowed by test"}},
		{"delete", authorizationv1.SubjectAccessReviewStatus{Denied: true, Reason: "denied by test"}},
		{"list", authorizationv1.SubjectAccessReviewStatus{}},
		{"watch", authorizationv1.SubjectAccessReviewStatus{EvaluationError: "webhook unreachable"}},
		{"patch", authorizationv1.SubjectAccessReviewStatus{Allowed: true, Reason: "allowed despite", EvaluationError: "one authorizer failed"}},
	} {
		t.Run(tc.verb, func(t *testing.T) {
			fa := &fakeAuthorizer{}
			r := &subjectAccessReviewREST{authorizer: fa.authorizer()}
			in := &authorizationv1.SubjectAccessReview{
				Spec:   authorizationv1.SubjectAccessReviewSpec{User: "u", ResourceAttributes: res(tc.verb)},
				Status: authorizationv1.SubjectAccessReviewStatus{Allowed: true, Reason: "sent by the client"},
			}
			out, err := r.Create(context.Background(), in, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			got := out.(*authorizationv1.SubjectAccessReview)
			if got.Status != tc.want {
				t.Errorf("status %+v, want %+v", got.Status, tc.want)
			}
			if got.Spec.User != "u" || got.Spec.ResourceAttributes.Verb != tc.verb {
				t.Errorf("the response must carry the spec: %+v", got.Spec)
			}
		})
	}
}

func TestSubjectAccessReviewAttributes(t *testing.T) {
	fa := &fakeAuthorizer{}
	r := &subjectAccessReviewREST{authorizer: fa.authorizer()}
	create := func(spec authorizationv1.SubjectAccessReviewSpec) authorizationv1.SubjectAccessReviewStatus {
		t.Helper()
		out, err := r.Create(context.Background(), &authorizationv1.SubjectAccessReview{Spec: spec}, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		return out.(*authorizationv1.SubjectAccessReview).Status
	}

	// The subject, all resource attributes, an empty version meaning any.
	create(authorizationv1.SubjectAccessReviewSpec{
		User: "alice", UID: "a-1", Groups: []string{"dev"}, Extra: map[string]authorizationv1.ExtraValue{"scopes": {"s"}},
		ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: "ns", Verb: "get", Group: "apps", Resource: "deployments", Subresource: "scale", Name: "web"},
	})
	got := fa.last(t)
	wantUser := &user.DefaultInfo{Name: "alice", UID: "a-1", Groups: []string{"dev"}, Extra: map[string][]string{"scopes": {"s"}}}
	if !reflect.DeepEqual(got.User, wantUser) {
		t.Errorf("user %#v, want %#v", got.User, wantUser)
	}
	got.User = nil
	want := authorizer.AttributesRecord{Verb: "get", Namespace: "ns", APIGroup: "apps", APIVersion: "*", Resource: "deployments", Subresource: "scale", Name: "web", ResourceRequest: true}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("attributes\n got %#v\nwant %#v", got, want)
	}

	// A version is passed as is; a non-resource request has a path.
	create(authorizationv1.SubjectAccessReviewSpec{User: "u", ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "get", Version: "v2", Resource: "x"}})
	if v := fa.last(t).APIVersion; v != "v2" {
		t.Errorf("version %q", v)
	}
	create(authorizationv1.SubjectAccessReviewSpec{User: "u", NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/healthz", Verb: "get"}})
	if a := fa.last(t); a.ResourceRequest || a.Path != "/healthz" || a.Verb != "get" || a.GetUser().GetExtra() != nil {
		t.Errorf("non-resource attributes %#v", a)
	}

	// Selectors.
	sel := func(fs *authorizationv1.FieldSelectorAttributes, ls *authorizationv1.LabelSelectorAttributes) authorizationv1.SubjectAccessReviewStatus {
		return create(authorizationv1.SubjectAccessReviewSpec{User: "u", ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "list", Resource: "pods", FieldSelector: fs, LabelSelector: ls}})
	}
	st := sel(&authorizationv1.FieldSelectorAttributes{RawSelector: "spec.nodeName=n1,metadata.name!=x"}, &authorizationv1.LabelSelectorAttributes{RawSelector: "app in (a,b),!tier"})
	a := fa.last(t)
	if st.EvaluationError != "" || a.FieldSelectorParsingErr != nil || a.LabelSelectorParsingErr != nil {
		t.Fatalf("raw selectors: %+v %#v", st, a)
	}
	wantFields := fields.Requirements{{Field: "metadata.name", Operator: selection.NotEquals, Value: "x"}, {Field: "spec.nodeName", Operator: selection.Equals, Value: "n1"}}
	if !reflect.DeepEqual(a.FieldSelectorRequirements, wantFields) {
		t.Errorf("raw field selector: %v", a.FieldSelectorRequirements)
	}
	if s := labels.NewSelector().Add(a.LabelSelectorRequirements...).String(); s != "app in (a,b),!tier" {
		t.Errorf("raw label selector: %s", s)
	}

	st = sel(&authorizationv1.FieldSelectorAttributes{Requirements: []metav1.FieldSelectorRequirement{
		{Key: "spec.nodeName", Operator: metav1.FieldSelectorOpIn, Values: []string{"n1"}},
		{Key: "metadata.name", Operator: metav1.FieldSelectorOpNotIn, Values: []string{"x"}},
	}}, &authorizationv1.LabelSelectorAttributes{Requirements: []metav1.LabelSelectorRequirement{
		{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: []string{"a"}},
		{Key: "tier", Operator: metav1.LabelSelectorOpExists},
	}})
	a = fa.last(t)
	if st.EvaluationError != "" {
		t.Fatalf("requirements: %+v", st)
	}
	wantFields = fields.Requirements{{Field: "spec.nodeName", Operator: selection.Equals, Value: "n1"}, {Field: "metadata.name", Operator: selection.NotEquals, Value: "x"}}
	if !reflect.DeepEqual(a.FieldSelectorRequirements, wantFields) {
		t.Errorf("field requirements: %v", a.FieldSelectorRequirements)
	}
	if s := labels.NewSelector().Add(a.LabelSelectorRequirements...).String(); s != "app in (a),tier" {
		t.Errorf("label requirements: %s", s)
	}

	// What cannot be parsed is passed on as a parsing error and reported.
	st = sel(&authorizationv1.FieldSelectorAttributes{RawSelector: "nonsense"}, &authorizationv1.LabelSelectorAttributes{RawSelector: "a in ("})
	a = fa.last(t)
	if a.FieldSelectorParsingErr == nil || a.LabelSelectorParsingErr == nil || a.FieldSelectorRequirements != nil || a.LabelSelectorRequirements != nil {
		t.Errorf("unparsable raw selectors: %#v", a)
	}
	if want := "spec.resourceAttributes.fieldSelector ignored due to parse error; spec.resourceAttributes.labelSelector ignored due to parse error"; st.EvaluationError != want {
		t.Errorf("evaluation error %q, want %q", st.EvaluationError, want)
	}
	st = sel(&authorizationv1.FieldSelectorAttributes{Requirements: []metav1.FieldSelectorRequirement{
		{Key: "spec.nodeName", Operator: metav1.FieldSelectorOpIn, Values: []string{"n1"}},
		{Key: "metadata.name", Operator: metav1.FieldSelectorOpIn, Values: []string{"a", "b"}},
		{Key: "x", Operator: metav1.FieldSelectorOpExists},
	}}, &authorizationv1.LabelSelectorAttributes{Requirements: []metav1.LabelSelectorRequirement{
		{Key: "app", Operator: "Near", Values: []string{"a"}},
	}})
	a = fa.last(t)
	if len(a.FieldSelectorRequirements) != 1 || a.FieldSelectorParsingErr == nil || a.LabelSelectorRequirements != nil || a.LabelSelectorParsingErr == nil {
		t.Errorf("partial requirements: %#v", a)
	}
	if want := "spec.resourceAttributes.fieldSelector partially ignored due to parse error; spec.resourceAttributes.labelSelector ignored due to parse error"; st.EvaluationError != want {
		t.Errorf("evaluation error %q, want %q", st.EvaluationError, want)
	}
	if !strings.Contains(a.FieldSelectorParsingErr.Error(), "multiple values") || !strings.Contains(a.FieldSelectorParsingErr.Error(), "Exists") {
		t.Errorf("field parsing error %v", a.FieldSelectorParsingErr)
	}
}

func TestLocalSubjectAccessReview(t *testing.T) {
	inNS := func(ns string) context.Context { return genericapirequest.WithNamespace(context.Background(), ns) }
	for _, tc := range []struct {
		name      string
		ctx       context.Context
		meta      metav1.ObjectMeta
		spec      authorizationv1.SubjectAccessReviewSpec
		wantCode  int32
		wantField string
		allowed   bool
	}{
		{name: "allowed", ctx: inNS("ns"), meta: metav1.ObjectMeta{Namespace: "ns"}, spec: authorizationv1.SubjectAccessReviewSpec{User: "u", ResourceAttributes: res("get")}, allowed: true},
		{name: "metadata.namespace from the request", ctx: inNS("ns"), spec: authorizationv1.SubjectAccessReviewSpec{User: "u", ResourceAttributes: res("get")}, allowed: true},
		{name: "spec namespace differs", ctx: inNS("other"), meta: metav1.ObjectMeta{Namespace: "other"}, spec: authorizationv1.SubjectAccessReviewSpec{User: "u", ResourceAttributes: res("get")},
			wantCode: 422, wantField: "spec.resourceAttributes.namespace"},
		{name: "spec namespace empty", ctx: inNS("ns"), spec: authorizationv1.SubjectAccessReviewSpec{User: "u", ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "get", Resource: "x"}},
			wantCode: 422, wantField: "spec.resourceAttributes.namespace"},
		{name: "non-resource", ctx: inNS("ns"), spec: authorizationv1.SubjectAccessReviewSpec{User: "u", NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/x", Verb: "get"}},
			wantCode: 422, wantField: "spec.nonResourceAttributes"},
		{name: "no subject and other metadata", ctx: inNS("ns"), meta: metav1.ObjectMeta{Name: "x"}, spec: authorizationv1.SubjectAccessReviewSpec{ResourceAttributes: res("get")},
			wantCode: 422, wantField: "spec.user,metadata"},
		{name: "object in another namespace than the request", ctx: inNS("other"), meta: metav1.ObjectMeta{Namespace: "ns"}, spec: authorizationv1.SubjectAccessReviewSpec{User: "u", ResourceAttributes: res("get")},
			wantCode: 400},
		{name: "no namespace", ctx: context.Background(), spec: authorizationv1.SubjectAccessReviewSpec{User: "u", ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "get"}},
			wantCode: 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fa := &fakeAuthorizer{}
			r := &localSubjectAccessReviewREST{authorizer: fa.authorizer()}
			admitted := false
			out, err := r.Create(tc.ctx, &authorizationv1.LocalSubjectAccessReview{ObjectMeta: tc.meta, Spec: tc.spec}, admitAll(&admitted), nil)
			switch tc.wantCode {
			case 0:
				if err != nil {
					t.Fatal(err)
				}
				got := out.(*authorizationv1.LocalSubjectAccessReview)
				if got.Status.Allowed != tc.allowed || got.Namespace != "ns" || !admitted {
					t.Errorf("got %+v (admitted %v)", got, admitted)
				}
				if a := fa.last(t); a.Namespace != "ns" || a.User.GetName() != "u" {
					t.Errorf("attributes %#v", a)
				}
				return
			case 422:
				if got := causes(t, err); got != tc.wantField {
					t.Errorf("fields %q, want %q", got, tc.wantField)
				}
			default:
				if !apierrors.IsBadRequest(err) {
					t.Errorf("want 400, got %v", err)
				}
			}
			if admitted || len(fa.asked) > 0 {
				t.Errorf("a rejected review reached admission or the authorizer")
			}
		})
	}
}

func TestSelfSubjectAccessReview(t *testing.T) {
	alice := &user.DefaultInfo{Name: "alice", Groups: []string{"dev", "system:authenticated"}, Extra: map[string][]string{"k": {"v"}}}
	ctx := genericapirequest.WithUser(context.Background(), alice)
	fa := &fakeAuthorizer{}
	r := &selfSubjectAccessReviewREST{authorizer: fa.authorizer()}

	out, err := r.Create(ctx, &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: res("delete")}}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if st := out.(*authorizationv1.SelfSubjectAccessReview).Status; st.Allowed || !st.Denied || st.Reason != "denied by test" {
		t.Errorf("status %+v", st)
	}
	if u := fa.last(t).User; u != alice {
		t.Errorf("the review must be about the requesting user, got %#v", u)
	}

	out, err = r.Create(ctx, &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/version", Verb: "get"}}}, nil, nil)
	if err != nil || !out.(*authorizationv1.SelfSubjectAccessReview).Status.Allowed {
		t.Fatalf("non-resource: %+v %v", out, err)
	}
	if a := fa.last(t); a.Path != "/version" || a.ResourceRequest || a.User != alice {
		t.Errorf("non-resource attributes %#v", a)
	}

	_, err = r.Create(ctx, &authorizationv1.SelfSubjectAccessReview{ObjectMeta: metav1.ObjectMeta{Namespace: "ns"}}, nil, nil)
	if got := causes(t, err); got != "spec,metadata" {
		t.Errorf("fields %q", got)
	}
	if _, err := r.Create(context.Background(), &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: res("get")}}, nil, nil); !apierrors.IsBadRequest(err) {
		t.Errorf("no user: want 400, got %v", err)
	}
	denied := func(context.Context, runtime.Object) error {
		return apierrors.NewForbidden(authorizationv1.Resource("selfsubjectaccessreviews"), "", errors.New("no"))
	}
	asked := len(fa.asked)
	if _, err := r.Create(ctx, &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: res("get")}}, denied, nil); !apierrors.IsForbidden(err) || len(fa.asked) != asked {
		t.Errorf("admission: want its error and no decision, got %v", err)
	}
}

func TestNewRESTStorage(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := (APIGroup{}).InstallScheme(scheme); err != nil {
		t.Fatal(err)
	}
	for _, version := range []string{"v1", runtime.APIVersionInternal} {
		for _, kind := range []string{"SubjectAccessReview", "LocalSubjectAccessReview", "SelfSubjectAccessReview", "SelfSubjectRulesReview"} {
			if !scheme.Recognizes(authorizationv1.SchemeGroupVersion.WithKind(kind).GroupKind().WithVersion(version)) {
				t.Errorf("%s %s not registered", version, kind)
			}
		}
	}
	config := serverstorage.NewResourceConfig()
	config.EnableVersions(authorizationv1.SchemeGroupVersion)
	opts := registry.StorageOptions{Scheme: scheme, Codecs: serializer.NewCodecFactory(scheme), ParameterCodec: runtime.NewParameterCodec(scheme), ResourceConfig: config}
	resources := func(opts registry.StorageOptions) ([]string, bool) {
		info, enabled, err := APIGroup{}.NewRESTStorage(opts)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for name, s := range info.VersionedResourcesStorageMap["v1"] {
			out = append(out, name)
			if namespaced := s.(reviewStorage).NamespaceScoped(); namespaced != (name == "localsubjectaccessreviews") {
				t.Errorf("%s namespaced %v", name, namespaced)
			}
		}
		sort.Strings(out)
		return out, enabled
	}
	if got, enabled := resources(opts); enabled || len(got) > 0 {
		t.Errorf("without authorizer or resolver: %v %v", got, enabled)
	}
	opts.Auth.Authorizer = (&fakeAuthorizer{}).authorizer()
	if got, _ := resources(opts); !reflect.DeepEqual(got, []string{"localsubjectaccessreviews", "selfsubjectaccessreviews", "subjectaccessreviews"}) {
		t.Errorf("with an authorizer: %v", got)
	}
	opts.Auth.RuleResolver = &fakeResolver{}
	if got, _ := resources(opts); !reflect.DeepEqual(got, []string{"localsubjectaccessreviews", "selfsubjectaccessreviews", "selfsubjectrulesreviews", "subjectaccessreviews"}) {
		t.Errorf("with a rule resolver: %v", got)
	}
}
