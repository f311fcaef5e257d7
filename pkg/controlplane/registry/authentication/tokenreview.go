package authentication

import (
	"context"
	"fmt"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
)

// tokenReviewREST answers tokenreviews: is spec.token valid for
// spec.audiences (the API's audiences when empty), and whose is it?
type tokenReviewREST struct {
	tokens       authenticator.Token
	apiAudiences authenticator.Audiences
}

var (
	_ rest.Storage              = &tokenReviewREST{}
	_ rest.Creater              = &tokenReviewREST{}
	_ rest.Scoper               = &tokenReviewREST{}
	_ rest.SingularNameProvider = &tokenReviewREST{}
)

func (*tokenReviewREST) New() runtime.Object     { return &authenticationv1.TokenReview{} }
func (*tokenReviewREST) Destroy()                {}
func (*tokenReviewREST) NamespaceScoped() bool   { return false }
func (*tokenReviewREST) GetSingularName() string { return "tokenreview" }

// Create authenticates spec.token. A token that does not authenticate is
// an answer (status.authenticated false, status.error the reason), not an
// error of the request.
func (r *tokenReviewREST) Create(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc, _ *metav1.CreateOptions) (runtime.Object, error) {
	review, ok := obj.(*authenticationv1.TokenReview)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("not a TokenReview: %T", obj))
	}
	if ns := genericapirequest.NamespaceValue(ctx); ns != "" {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("namespace is not allowed on this type: %v", ns))
	}
	if review.Spec.Token == "" {
		return nil, apierrors.NewBadRequest("token is required for TokenReview in authentication")
	}
	if createValidation != nil {
		if err := createValidation(ctx, obj.DeepCopyObject()); err != nil {
			return nil, err
		}
	}

	audiences := review.Spec.Audiences
	if len(audiences) == 0 {
		audiences = r.apiAudiences
	}
	// Authenticate as if the token came alone on a fresh request: nothing
	// of the reviewer's request (its user, its audiences) may leak in;
	// only its cancellation does.
	authCtx := context.Context(cancelOnly{ctx})
	if len(audiences) > 0 {
		authCtx = authenticator.WithAudiences(authCtx, audiences)
	}
	resp, ok, err := r.tokens.AuthenticateToken(authCtx, review.Spec.Token)

	// The status is the server's answer only: none of the request's is kept.
	review.Status = authenticationv1.TokenReviewStatus{Authenticated: ok}
	if err != nil {
		review.Status.Error = err.Error()
	}
	if resp == nil || resp.User == nil {
		return review, nil
	}
	if len(audiences) > 0 && len(authenticator.Audiences(audiences).Intersect(resp.Audiences)) == 0 {
		// The authenticator vouched for audiences nobody asked for.
		// Upstream answers 500; the token is not valid for the review's
		// audiences either way, so say so.
		review.Status = authenticationv1.TokenReviewStatus{
			Error: fmt.Sprintf("token audiences %q do not include any of the requested audiences %q", resp.Audiences, audiences),
		}
		return review, nil
	}
	review.Status.User = userInfo(resp.User)
	review.Status.Audiences = resp.Audiences
	return review, nil
}

// cancelOnly is a context with the deadline and cancellation of its parent
// but none of its values.
type cancelOnly struct{ context.Context }

func (cancelOnly) Value(any) any { return nil }
