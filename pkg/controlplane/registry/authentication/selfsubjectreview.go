package authentication

import (
	"context"
	"fmt"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
)

// selfSubjectReviewREST answers selfsubjectreviews: the user the request
// was authenticated as.
type selfSubjectReviewREST struct{}

var (
	_ rest.Storage              = &selfSubjectReviewREST{}
	_ rest.Creater              = &selfSubjectReviewREST{}
	_ rest.Scoper               = &selfSubjectReviewREST{}
	_ rest.SingularNameProvider = &selfSubjectReviewREST{}
)

func (*selfSubjectReviewREST) New() runtime.Object     { return &authenticationv1.SelfSubjectReview{} }
func (*selfSubjectReviewREST) Destroy()                {}
func (*selfSubjectReviewREST) NamespaceScoped() bool   { return false }
func (*selfSubjectReviewREST) GetSingularName() string { return "selfsubjectreview" }

// Create returns a new review (nothing of the request is echoed) whose
// status is the requesting user.
func (*selfSubjectReviewREST) Create(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc, _ *metav1.CreateOptions) (runtime.Object, error) {
	if createValidation != nil {
		if err := createValidation(ctx, obj.DeepCopyObject()); err != nil {
			return nil, err
		}
	}
	if _, ok := obj.(*authenticationv1.SelfSubjectReview); !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("not a SelfSubjectReview: %T", obj))
	}
	u, ok := genericapirequest.UserFrom(ctx)
	if !ok {
		return nil, apierrors.NewBadRequest("no user present on request")
	}
	return &authenticationv1.SelfSubjectReview{
		ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(time.Now())},
		Status:     authenticationv1.SelfSubjectReviewStatus{UserInfo: userInfo(u)},
	}, nil
}
