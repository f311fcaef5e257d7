package authorization

import (
	"context"
	"errors"
	"reflect"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
)

type fakeResolver struct {
	resource    []authorizer.ResourceRuleInfo
	nonResource []authorizer.NonResourceRuleInfo
	incomplete  bool
	err         error
	user        user.Info
	namespace   string
}

func (f *fakeResolver) RulesFor(_ context.Context, u user.Info, namespace string) ([]authorizer.ResourceRuleInfo, []authorizer.NonResourceRuleInfo, bool, error) {
	f.user, f.namespace = u, namespace
	return f.resource, f.nonResource, f.incomplete, f.err
}

func TestSelfSubjectRulesReview(t *testing.T) {
	alice := &user.DefaultInfo{Name: "alice"}
	ctx := genericapirequest.WithUser(context.Background(), alice)
	for _, tc := range []struct {
		name     string
		resolver *fakeResolver
		want     authorizationv1.SubjectRulesReviewStatus
	}{
		{
			name: "rules",
			resolver: &fakeResolver{
				resource: []authorizer.ResourceRuleInfo{
					&authorizer.DefaultResourceRuleInfo{Verbs: []string{"get", "list"}, APIGroups: []string{""}, Resources: []string{"configmaps"}},
					&authorizer.DefaultResourceRuleInfo{Verbs: []string{"get"}, APIGroups: []string{"apps"}, Resources: []string{"deployments"}, ResourceNames: []string{"web"}},
				},
				nonResource: []authorizer.NonResourceRuleInfo{&authorizer.DefaultNonResourceRuleInfo{Verbs: []string{"get"}, NonResourceURLs: []string{"/version", "/healthz"}}},
			},
			want: authorizationv1.SubjectRulesReviewStatus{
				ResourceRules: []authorizationv1.ResourceRule{
					{Verbs: []string{"get", "list"}, APIGroups: []string{""}, Resources: []string{"configmaps"}},
					{Verbs: []string{"get"}, APIGroups: []string{"apps"}, Resources: []string{"deployments"}, ResourceNames: []string{"web"}},
				},
				NonResourceRules: []authorizationv1.NonResourceRule{{Verbs: []string{"get"}, NonResourceURLs: []string{"/version", "/healthz"}}},
			},
		},
		{
			name:     "nothing: empty lists, not null",
			resolver: &fakeResolver{},
			want:     authorizationv1.SubjectRulesReviewStatus{ResourceRules: []authorizationv1.ResourceRule{}, NonResourceRules: []authorizationv1.NonResourceRule{}},
		},
		{
			name: "incomplete with an error",
			resolver: &fakeResolver{
				resource:   []authorizer.ResourceRuleInfo{&authorizer.DefaultResourceRuleInfo{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}}},
				incomplete: true, err: errors.New("role \"gone\" not found"),
			},
			want: authorizationv1.SubjectRulesReviewStatus{
				ResourceRules:    []authorizationv1.ResourceRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}}},
				NonResourceRules: []authorizationv1.NonResourceRule{},
				Incomplete:       true, EvaluationError: `role "gone" not found`,
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &selfSubjectRulesReviewREST{resolver: tc.resolver}
			admitted := false
			in := &authorizationv1.SelfSubjectRulesReview{
				Spec:   authorizationv1.SelfSubjectRulesReviewSpec{Namespace: "team-a"},
				Status: authorizationv1.SubjectRulesReviewStatus{Incomplete: true, EvaluationError: "from the client"},
			}
			out, err := r.Create(ctx, in, admitAll(&admitted), nil)
			if err != nil {
				t.Fatal(err)
			}
			got := out.(*authorizationv1.SelfSubjectRulesReview)
			if !reflect.DeepEqual(got.Status, tc.want) {
				t.Errorf("status\n got %#v\nwant %#v", got.Status, tc.want)
			}
			if tc.resolver.user != alice || tc.resolver.namespace != "team-a" || !admitted {
				t.Errorf("resolver asked for %v in %q (admitted %v)", tc.resolver.user, tc.resolver.namespace, admitted)
			}
		})
	}

	r := &selfSubjectRulesReviewREST{resolver: &fakeResolver{}}
	if _, err := r.Create(ctx, &authorizationv1.SelfSubjectRulesReview{}, nil, nil); !apierrors.IsBadRequest(err) {
		t.Errorf("no namespace: want 400, got %v", err)
	}
	if _, err := r.Create(context.Background(), &authorizationv1.SelfSubjectRulesReview{Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: "ns"}}, nil, nil); !apierrors.IsBadRequest(err) {
		t.Errorf("no user: want 400, got %v", err)
	}
}
