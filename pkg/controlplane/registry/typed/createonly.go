package typed

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/rest"
)

// CreateOnly is a resource that only answers POST and stores nothing, like
// the review APIs: Answer receives the decoded object (after admission) and
// returns it with its status filled in.
type CreateOnly[T runtime.Object] struct {
	// NewObj returns an empty object.
	NewObj func() T
	// Singular is the singular resource name.
	Singular string
	// Namespaced says whether the resource lives in a namespace.
	Namespaced bool
	// Answer answers the request.
	Answer func(ctx context.Context, obj T) (T, error)
}

var (
	_ rest.Creater              = &CreateOnly[*metav1.Status]{}
	_ rest.Scoper               = &CreateOnly[*metav1.Status]{}
	_ rest.SingularNameProvider = &CreateOnly[*metav1.Status]{}
)

// New returns an empty object.
func (r *CreateOnly[T]) New() runtime.Object { return r.NewObj() }

// Destroy does nothing: nothing is stored.
func (r *CreateOnly[T]) Destroy() {}

// NamespaceScoped reports whether the resource lives in a namespace.
func (r *CreateOnly[T]) NamespaceScoped() bool { return r.Namespaced }

// GetSingularName returns the singular resource name.
func (r *CreateOnly[T]) GetSingularName() string { return r.Singular }

// Create runs admission validation, then Answer.
func (r *CreateOnly[T]) Create(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc, _ *metav1.CreateOptions) (runtime.Object, error) {
	in, ok := obj.(T)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("not a %s: %T", r.Singular, obj))
	}
	if createValidation != nil {
		if err := createValidation(ctx, obj.DeepCopyObject()); err != nil {
			return nil, err
		}
	}
	return r.Answer(ctx, in)
}
