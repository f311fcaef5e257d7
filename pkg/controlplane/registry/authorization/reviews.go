package authorization

import (
	"context"
	"fmt"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
)

// reviewStorage is what every review resource implements.
type reviewStorage interface {
	rest.Storage
	rest.Creater
	rest.Scoper
	rest.SingularNameProvider
}

var (
	_ reviewStorage = &subjectAccessReviewREST{}
	_ reviewStorage = &localSubjectAccessReviewREST{}
	_ reviewStorage = &selfSubjectAccessReviewREST{}
	_ reviewStorage = &selfSubjectRulesReviewREST{}
)

// admit runs the admission validation of a create, if any.
func admit(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc) error {
	if createValidation == nil {
		return nil
	}
	return createValidation(ctx, obj.DeepCopyObject())
}

// subjectAccessReviewREST answers subjectaccessreviews: may the user in
// the spec do this?
type subjectAccessReviewREST struct{ authorizer authorizer.Authorizer }

func (*subjectAccessReviewREST) New() runtime.Object     { return &authorizationv1.SubjectAccessReview{} }
func (*subjectAccessReviewREST) Destroy()                {}
func (*subjectAccessReviewREST) NamespaceScoped() bool   { return false }
func (*subjectAccessReviewREST) GetSingularName() string { return "subjectaccessreview" }

func (r *subjectAccessReviewREST) Create(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc, _ *metav1.CreateOptions) (runtime.Object, error) {
	review, ok := obj.(*authorizationv1.SubjectAccessReview)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("not a SubjectAccessReview: %T", obj))
	}
	if errs := validateSubjectAccessReview(review); len(errs) > 0 {
		return nil, invalid("SubjectAccessReview", errs)
	}
	if err := admit(ctx, obj, createValidation); err != nil {
		return nil, err
	}
	spec := review.Spec
	review.Status = decide(ctx, r.authorizer, reviewAttributes(specUser(spec), spec.ResourceAttributes, spec.NonResourceAttributes))
	return review, nil
}

// localSubjectAccessReviewREST answers localsubjectaccessreviews: may the
// user in the spec do this in the request's namespace?
type localSubjectAccessReviewREST struct{ authorizer authorizer.Authorizer }

func (*localSubjectAccessReviewREST) New() runtime.Object {
	return &authorizationv1.LocalSubjectAccessReview{}
}
func (*localSubjectAccessReviewREST) Destroy()                {}
func (*localSubjectAccessReviewREST) NamespaceScoped() bool   { return true }
func (*localSubjectAccessReviewREST) GetSingularName() string { return "localsubjectaccessreview" }

func (r *localSubjectAccessReviewREST) Create(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc, _ *metav1.CreateOptions) (runtime.Object, error) {
	review, ok := obj.(*authorizationv1.LocalSubjectAccessReview)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("not a LocalSubjectAccessReview: %T", obj))
	}
	namespace := genericapirequest.NamespaceValue(ctx)
	if review.Namespace == "" {
		// The create handler does this already; do it for direct callers.
		review.Namespace = namespace
	}
	if errs := validateLocalSubjectAccessReview(review); len(errs) > 0 {
		return nil, invalid("LocalSubjectAccessReview", errs)
	}
	if namespace == "" {
		return nil, apierrors.NewBadRequest("namespace is required on this type")
	}
	if namespace != review.Namespace {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("spec.resourceAttributes.namespace must match namespace: %v", namespace))
	}
	if err := admit(ctx, obj, createValidation); err != nil {
		return nil, err
	}
	review.Status = decide(ctx, r.authorizer, resourceAttributes(specUser(review.Spec), *review.Spec.ResourceAttributes))
	return review, nil
}

// selfSubjectAccessReviewREST answers selfsubjectaccessreviews: may I do
// this?
type selfSubjectAccessReviewREST struct{ authorizer authorizer.Authorizer }

func (*selfSubjectAccessReviewREST) New() runtime.Object {
	return &authorizationv1.SelfSubjectAccessReview{}
}
func (*selfSubjectAccessReviewREST) Destroy()                {}
func (*selfSubjectAccessReviewREST) NamespaceScoped() bool   { return false }
func (*selfSubjectAccessReviewREST) GetSingularName() string { return "selfsubjectaccessreview" }

func (r *selfSubjectAccessReviewREST) Create(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc, _ *metav1.CreateOptions) (runtime.Object, error) {
	review, ok := obj.(*authorizationv1.SelfSubjectAccessReview)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("not a SelfSubjectAccessReview: %T", obj))
	}
	if errs := validateSelfSubjectAccessReview(review); len(errs) > 0 {
		return nil, invalid("SelfSubjectAccessReview", errs)
	}
	u, ok := genericapirequest.UserFrom(ctx)
	if !ok {
		return nil, apierrors.NewBadRequest("no user present on request")
	}
	if err := admit(ctx, obj, createValidation); err != nil {
		return nil, err
	}
	review.Status = decide(ctx, r.authorizer, reviewAttributes(u, review.Spec.ResourceAttributes, review.Spec.NonResourceAttributes))
	return review, nil
}

// selfSubjectRulesReviewREST answers selfsubjectrulesreviews: what may I
// do in this namespace?
type selfSubjectRulesReviewREST struct{ resolver authorizer.RuleResolver }

func (*selfSubjectRulesReviewREST) New() runtime.Object {
	return &authorizationv1.SelfSubjectRulesReview{}
}
func (*selfSubjectRulesReviewREST) Destroy()                {}
func (*selfSubjectRulesReviewREST) NamespaceScoped() bool   { return false }
func (*selfSubjectRulesReviewREST) GetSingularName() string { return "selfsubjectrulesreview" }

// Create returns a new review holding only the status, as upstream.
func (r *selfSubjectRulesReviewREST) Create(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc, _ *metav1.CreateOptions) (runtime.Object, error) {
	review, ok := obj.(*authorizationv1.SelfSubjectRulesReview)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("not a SelfSubjectRulesReview: %T", obj))
	}
	u, ok := genericapirequest.UserFrom(ctx)
	if !ok {
		return nil, apierrors.NewBadRequest("no user present on request")
	}
	namespace := review.Spec.Namespace
	if namespace == "" {
		return nil, apierrors.NewBadRequest("no namespace on request")
	}
	if err := admit(ctx, obj, createValidation); err != nil {
		return nil, err
	}
	resourceRules, nonResourceRules, incomplete, err := r.resolver.RulesFor(ctx, u, namespace)
	status := authorizationv1.SubjectRulesReviewStatus{
		ResourceRules:    make([]authorizationv1.ResourceRule, len(resourceRules)),
		NonResourceRules: make([]authorizationv1.NonResourceRule, len(nonResourceRules)),
		Incomplete:       incomplete,
	}
	for i, rule := range resourceRules {
		status.ResourceRules[i] = authorizationv1.ResourceRule{
			Verbs:         rule.GetVerbs(),
			APIGroups:     rule.GetAPIGroups(),
			Resources:     rule.GetResources(),
			ResourceNames: rule.GetResourceNames(),
		}
	}
	for i, rule := range nonResourceRules {
		status.NonResourceRules[i] = authorizationv1.NonResourceRule{
			Verbs:           rule.GetVerbs(),
			NonResourceURLs: rule.GetNonResourceURLs(),
		}
	}
	if err != nil {
		status.EvaluationError = err.Error()
	}
	return &authorizationv1.SelfSubjectRulesReview{Status: status}, nil
}
