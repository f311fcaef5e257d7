package authentication

import (
	"context"
	"errors"
	"reflect"
	"sort"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	serverstorage "k8s.io/apiserver/pkg/server/storage"

	"github.com/gcp-project/gcp/pkg/controlplane/registry"
)

var reviewer = &user.DefaultInfo{Name: "reviewer", Groups: []string{"system:authenticated"}}

func reviewerCtx() context.Context {
	return genericapirequest.WithUser(context.Background(), reviewer)
}

// fakeTokens accepts "good" for the audiences "api" and "other", and
// records what it saw.
type fakeTokens struct {
	sawAudiences authenticator.Audiences
	sawAudOK     bool
	sawUser      bool
}

func (f *fakeTokens) AuthenticateToken(ctx context.Context, token string) (*authenticator.Response, bool, error) {
	f.sawAudiences, f.sawAudOK = authenticator.AudiencesFrom(ctx)
	_, f.sawUser = genericapirequest.UserFrom(ctx)
	switch token {
	case "good":
		var matched authenticator.Audiences
		if f.sawAudOK {
			if matched = f.sawAudiences.Intersect(authenticator.Audiences{"api", "other"}); len(matched) == 0 {
				return nil, false, errors.New("token audiences are invalid")
			}
		}
		return &authenticator.Response{
			User: &user.DefaultInfo{
				Name: "system:serviceaccount:ns:sa", UID: "uid-1",
				Groups: []string{"system:serviceaccounts", "system:serviceaccounts:ns"},
				Extra:  map[string][]string{"authentication.kubernetes.io/pod-name": {"p"}},
			},
			Audiences: matched,
		}, true, nil
	case "wrong-audiences":
		// A misbehaving authenticator: vouches for an audience not asked for.
		return &authenticator.Response{User: &user.DefaultInfo{Name: "x"}, Audiences: authenticator.Audiences{"elsewhere"}}, true, nil
	case "broken":
		return nil, false, errors.New("token is expired")
	}
	return nil, false, nil
}

func TestTokenReview(t *testing.T) {
	saUser := authenticationv1.UserInfo{
		Username: "system:serviceaccount:ns:sa", UID: "uid-1",
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:ns"},
		Extra:  map[string]authenticationv1.ExtraValue{"authentication.kubernetes.io/pod-name": {"p"}},
	}
	for _, tc := range []struct {
		name         string
		ctx          context.Context
		spec         authenticationv1.TokenReviewSpec
		status       authenticationv1.TokenReviewStatus // sent by the client
		apiAudiences authenticator.Audiences
		wantCode     int32
		want         authenticationv1.TokenReviewStatus
		wantAuds     authenticator.Audiences
		wantAudsSet  bool
	}{
		{
			name: "authenticated for the API audiences", spec: authenticationv1.TokenReviewSpec{Token: "good"}, apiAudiences: authenticator.Audiences{"api"},
			want:     authenticationv1.TokenReviewStatus{Authenticated: true, User: saUser, Audiences: []string{"api"}},
			wantAuds: authenticator.Audiences{"api"}, wantAudsSet: true,
		},
		{
			name: "authenticated for the requested audiences", spec: authenticationv1.TokenReviewSpec{Token: "good", Audiences: []string{"other", "third"}}, apiAudiences: authenticator.Audiences{"api"},
			want:     authenticationv1.TokenReviewStatus{Authenticated: true, User: saUser, Audiences: []string{"other"}},
			wantAuds: authenticator.Audiences{"other", "third"}, wantAudsSet: true,
		},
		{
			name: "no audiences at all", spec: authenticationv1.TokenReviewSpec{Token: "good"},
			want: authenticationv1.TokenReviewStatus{Authenticated: true, User: saUser},
		},
		{
			name: "wrong audience is an error in the status", spec: authenticationv1.TokenReviewSpec{Token: "good", Audiences: []string{"third"}},
			want:     authenticationv1.TokenReviewStatus{Error: "token audiences are invalid"},
			wantAuds: authenticator.Audiences{"third"}, wantAudsSet: true,
		},
		{
			name: "unknown token", spec: authenticationv1.TokenReviewSpec{Token: "garbage"},
			want: authenticationv1.TokenReviewStatus{},
		},
		{
			name: "authentication error", spec: authenticationv1.TokenReviewSpec{Token: "broken"},
			want: authenticationv1.TokenReviewStatus{Error: "token is expired"},
		},
		{
			name: "client's status is not echoed", spec: authenticationv1.TokenReviewSpec{Token: "garbage"},
			status: authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{Username: "admin"}, Audiences: []string{"api"}},
			want:   authenticationv1.TokenReviewStatus{},
		},
		{
			name: "authenticator vouching for other audiences", spec: authenticationv1.TokenReviewSpec{Token: "wrong-audiences"}, apiAudiences: authenticator.Audiences{"api"},
			want:     authenticationv1.TokenReviewStatus{Error: `token audiences ["elsewhere"] do not include any of the requested audiences ["api"]`},
			wantAuds: authenticator.Audiences{"api"}, wantAudsSet: true,
		},
		{name: "empty token", spec: authenticationv1.TokenReviewSpec{}, wantCode: 400},
		{name: "namespaced request", ctx: genericapirequest.WithNamespace(reviewerCtx(), "ns"), spec: authenticationv1.TokenReviewSpec{Token: "good"}, wantCode: 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tokens := &fakeTokens{}
			r := &tokenReviewREST{tokens: tokens, apiAudiences: tc.apiAudiences}
			ctx := tc.ctx
			if ctx == nil {
				ctx = reviewerCtx()
			}
			admitted := false
			out, err := r.Create(ctx, &authenticationv1.TokenReview{Spec: tc.spec, Status: tc.status}, func(context.Context, runtime.Object) error { admitted = true; return nil }, &metav1.CreateOptions{})
			if tc.wantCode != 0 {
				if code := apierrors.ReasonForError(err); err == nil || statusCode(err) != tc.wantCode {
					t.Fatalf("want %d, got %v (%s)", tc.wantCode, err, code)
				}
				if admitted {
					t.Errorf("admission ran on a bad request")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !admitted {
				t.Errorf("admission did not run")
			}
			got := out.(*authenticationv1.TokenReview)
			if !reflect.DeepEqual(got.Status, tc.want) {
				t.Errorf("status:\n got %#v\nwant %#v", got.Status, tc.want)
			}
			if got.Spec.Token != tc.spec.Token {
				t.Errorf("spec changed: %+v", got.Spec)
			}
			if tokens.sawAudOK != tc.wantAudsSet || !reflect.DeepEqual(tokens.sawAudiences, tc.wantAuds) {
				t.Errorf("authenticator saw audiences %v (set %v), want %v (set %v)", tokens.sawAudiences, tokens.sawAudOK, tc.wantAuds, tc.wantAudsSet)
			}
			if tokens.sawUser {
				t.Errorf("the reviewer's user leaked into the token's authentication")
			}
		})
	}
}

func statusCode(err error) int32 {
	var s apierrors.APIStatus
	if errors.As(err, &s) {
		return s.Status().Code
	}
	return 0
}

func TestTokenReviewAdmissionError(t *testing.T) {
	r := &tokenReviewREST{tokens: &fakeTokens{}}
	_, err := r.Create(reviewerCtx(), &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: "good"}},
		func(context.Context, runtime.Object) error {
			return apierrors.NewForbidden(authenticationv1.Resource("tokenreviews"), "", errors.New("no"))
		}, nil)
	if !apierrors.IsForbidden(err) {
		t.Fatalf("want the admission error, got %v", err)
	}
}

func TestSelfSubjectReview(t *testing.T) {
	r := &selfSubjectReviewREST{}
	u := &user.DefaultInfo{Name: "alice", UID: "a-1", Groups: []string{"dev", "system:authenticated"}, Extra: map[string][]string{"scopes": {"a", "b"}}}
	in := &authenticationv1.SelfSubjectReview{
		ObjectMeta: metav1.ObjectMeta{Name: "ignored"},
		Status:     authenticationv1.SelfSubjectReviewStatus{UserInfo: authenticationv1.UserInfo{Username: "admin"}},
	}
	out, err := r.Create(genericapirequest.WithUser(context.Background(), u), in, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*authenticationv1.SelfSubjectReview)
	want := authenticationv1.UserInfo{Username: "alice", UID: "a-1", Groups: []string{"dev", "system:authenticated"}, Extra: map[string]authenticationv1.ExtraValue{"scopes": {"a", "b"}}}
	if !reflect.DeepEqual(got.Status.UserInfo, want) {
		t.Errorf("user info: got %#v want %#v", got.Status.UserInfo, want)
	}
	if got.Name != "" || got.CreationTimestamp.IsZero() {
		t.Errorf("metadata: want a fresh object with a creation time, got %+v", got.ObjectMeta)
	}

	// No extra: an empty map, as upstream.
	out, err = r.Create(genericapirequest.WithUser(context.Background(), &user.DefaultInfo{Name: "bob"}), &authenticationv1.SelfSubjectReview{}, nil, nil)
	if err != nil || out.(*authenticationv1.SelfSubjectReview).Status.UserInfo.Username != "bob" {
		t.Fatalf("bob: %+v %v", out, err)
	}

	if _, err := r.Create(context.Background(), &authenticationv1.SelfSubjectReview{}, nil, nil); !apierrors.IsBadRequest(err) {
		t.Errorf("no user: want 400, got %v", err)
	}
	denied := func(context.Context, runtime.Object) error {
		return apierrors.NewForbidden(authenticationv1.Resource("selfsubjectreviews"), "", errors.New("no"))
	}
	if _, err := r.Create(genericapirequest.WithUser(context.Background(), u), &authenticationv1.SelfSubjectReview{}, denied, nil); !apierrors.IsForbidden(err) {
		t.Errorf("admission: want its error, got %v", err)
	}
}

func TestNewRESTStorage(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := (APIGroup{}).InstallScheme(scheme); err != nil {
		t.Fatal(err)
	}
	for _, gvk := range []string{"v1", "__internal"} {
		for _, kind := range []string{"TokenReview", "SelfSubjectReview"} {
			if !scheme.Recognizes(authenticationv1.SchemeGroupVersion.WithKind(kind).GroupKind().WithVersion(gvk)) {
				t.Errorf("%s %s not registered", gvk, kind)
			}
		}
	}
	config := serverstorage.NewResourceConfig()
	config.EnableVersions(authenticationv1.SchemeGroupVersion)
	opts := registry.StorageOptions{Scheme: scheme, Codecs: serializer.NewCodecFactory(scheme), ParameterCodec: runtime.NewParameterCodec(scheme), ResourceConfig: config}

	resources := func(opts registry.StorageOptions) []string {
		info, enabled, err := APIGroup{}.NewRESTStorage(opts)
		if err != nil || !enabled {
			t.Fatalf("enabled %v, %v", enabled, err)
		}
		var out []string
		for name := range info.VersionedResourcesStorageMap["v1"] {
			out = append(out, name)
		}
		sort.Strings(out)
		return out
	}
	if got := resources(opts); !reflect.DeepEqual(got, []string{"selfsubjectreviews"}) {
		t.Errorf("without a token authenticator: %v", got)
	}
	opts.Auth.TokenAuthenticator = &fakeTokens{}
	if got := resources(opts); !reflect.DeepEqual(got, []string{"selfsubjectreviews", "tokenreviews"}) {
		t.Errorf("with a token authenticator: %v", got)
	}
}
