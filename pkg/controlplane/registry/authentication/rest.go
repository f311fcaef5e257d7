// Package authentication serves authentication.k8s.io/v1: TokenReview (is
// this bearer token valid, and whose is it?) and SelfSubjectReview (who am
// I?, for `kubectl auth whoami`). Nothing is stored.
package authentication

import (
	"context"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"

	"github.com/gcp-project/gcp/pkg/controlplane/registry"
	"github.com/gcp-project/gcp/pkg/controlplane/registry/typed"
)

// APIGroup is authentication.k8s.io. TokenReview needs the server's token
// authenticator and is not served without one.
type APIGroup struct{}

var _ registry.APIGroup = APIGroup{}

// GroupName returns authentication.k8s.io.
func (APIGroup) GroupName() string { return authenticationv1.GroupName }

// InstallScheme registers the review types (and TokenRequest, the body of
// serviceaccounts/token).
func (APIGroup) InstallScheme(scheme *runtime.Scheme) error {
	typed.AddVersionedAsInternal(scheme, authenticationv1.SchemeGroupVersion,
		&authenticationv1.TokenReview{},
		&authenticationv1.SelfSubjectReview{},
		&authenticationv1.TokenRequest{},
	)
	return nil
}

// NewRESTStorage builds the review resources.
func (APIGroup) NewRESTStorage(opts registry.StorageOptions) (genericapiserver.APIGroupInfo, bool, error) {
	info := opts.NewAPIGroupInfo(authenticationv1.GroupName)
	storage := map[string]rest.Storage{
		"selfsubjectreviews": &typed.CreateOnly[*authenticationv1.SelfSubjectReview]{
			NewObj:   func() *authenticationv1.SelfSubjectReview { return &authenticationv1.SelfSubjectReview{} },
			Singular: "selfsubjectreview",
			Answer:   selfSubjectReview,
		},
	}
	if opts.Auth.TokenAuthenticator != nil {
		storage["tokenreviews"] = &typed.CreateOnly[*authenticationv1.TokenReview]{
			NewObj:   func() *authenticationv1.TokenReview { return &authenticationv1.TokenReview{} },
			Singular: "tokenreview",
			Answer:   tokenReview(opts.Auth.TokenAuthenticator, opts.Auth.APIAudiences),
		}
	}
	return info, opts.Enabled(&info, authenticationv1.SchemeGroupVersion, storage), nil
}

func userInfo(u user.Info) authenticationv1.UserInfo {
	out := authenticationv1.UserInfo{Username: u.GetName(), UID: u.GetUID(), Groups: u.GetGroups()}
	if extra := u.GetExtra(); len(extra) > 0 {
		out.Extra = map[string]authenticationv1.ExtraValue{}
		for k, v := range extra {
			out.Extra[k] = v
		}
	}
	return out
}

func selfSubjectReview(ctx context.Context, r *authenticationv1.SelfSubjectReview) (*authenticationv1.SelfSubjectReview, error) {
	u, ok := genericapirequest.UserFrom(ctx)
	if !ok {
		return nil, apierrors.NewBadRequest("no user present on request")
	}
	r.Status.UserInfo = userInfo(u)
	return r, nil
}

// tokenReview authenticates spec.token for spec.audiences (the API's
// audiences when empty). An invalid token is an answer, not an error.
func tokenReview(tokens authenticator.Token, apiAudiences authenticator.Audiences) func(context.Context, *authenticationv1.TokenReview) (*authenticationv1.TokenReview, error) {
	return func(ctx context.Context, r *authenticationv1.TokenReview) (*authenticationv1.TokenReview, error) {
		if r.Spec.Token == "" {
			return nil, apierrors.NewInvalid(authenticationv1.SchemeGroupVersion.WithKind("TokenReview").GroupKind(), r.Name,
				field.ErrorList{field.Required(field.NewPath("spec", "token"), "")})
		}
		audiences := apiAudiences
		if len(r.Spec.Audiences) > 0 {
			audiences = r.Spec.Audiences
		}
		// The review's context is the reviewer's request; authenticate
		// on a fresh one that only carries the audiences.
		reqCtx := authenticator.WithAudiences(context.WithoutCancel(ctx), audiences)
		resp, ok, err := tokens.AuthenticateToken(reqCtx, r.Spec.Token)
		r.Status = authenticationv1.TokenReviewStatus{Authenticated: ok && err == nil}
		if err != nil {
			r.Status.Error = err.Error()
		}
		if r.Status.Authenticated && resp != nil {
			r.Status.User = userInfo(resp.User)
			r.Status.Audiences = resp.Audiences
		}
		return r, nil
	}
}
