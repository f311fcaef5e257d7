// Package typed turns a Go type plus a few functions (validation, preparation,
// table columns, selectable fields) into a genericregistry.Store, so that a
// native resource costs tens of lines instead of hundreds.
package typed

import (
	"context"
	"fmt"
	"k8s.io/apimachinery/pkg/runtime/schema"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/names"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// Strategy implements the create, update, delete and reset-fields strategies
// of k8s.io/apiserver for objects of type T from plain functions. Nil
// functions do nothing (or, for validation, accept).
type Strategy[T runtime.Object] struct {
	runtime.ObjectTyper
	names.NameGenerator

	// Namespaced says whether objects live in a namespace.
	Namespaced bool
	// PrepareCreate clears fields the client may not set on create (status, ...).
	PrepareCreate func(ctx context.Context, obj T)
	// PrepareUpdateFn restores fields the client may not change on update.
	PrepareUpdateFn func(ctx context.Context, obj, old T)
	// ValidateCreate validates a new object, object meta included.
	ValidateCreate func(ctx context.Context, obj T) field.ErrorList
	// ValidateUpdateFn validates an update, object meta included.
	ValidateUpdateFn func(ctx context.Context, obj, old T) field.ErrorList
	// WarnCreate and WarnUpdate return warnings for the client.
	WarnCreate func(ctx context.Context, obj T) []string
	WarnUpdate func(ctx context.Context, obj, old T) []string
	// ResetFields lists, per served version, the fields this strategy resets
	// (server-side apply does not record managers for them).
	ResetFields map[fieldpath.APIVersion]*fieldpath.Set
	// CreateOnUpdate allows PUT to create a missing object.
	CreateOnUpdate bool
	// UnconditionalUpdate allows PUT without a resourceVersion.
	UnconditionalUpdate bool
	// Spec, if set, returns the part of an object whose changes are
	// generations, as upstream's strategies do: metadata.generation is 1
	// on create and goes up by one on an update that changes Spec (compared
	// after PrepareUpdateFn, so a status update that restores the spec
	// never counts).
	Spec func(obj T) any
}

// NamespaceScoped reports whether objects are namespaced.
func (s *Strategy[T]) NamespaceScoped() bool { return s.Namespaced }

// PrepareForCreate calls PrepareCreate and starts the generation at 1
// when Spec is set.
func (s *Strategy[T]) PrepareForCreate(ctx context.Context, obj runtime.Object) {
	if s.PrepareCreate != nil {
		s.PrepareCreate(ctx, obj.(T))
	}
	if s.Spec != nil {
		if m, err := meta.Accessor(obj); err == nil {
			m.SetGeneration(1)
		}
	}
}

// PrepareForUpdate calls PrepareUpdateFn, then, when Spec is set, bumps
// the generation if the spec changed.
func (s *Strategy[T]) PrepareForUpdate(ctx context.Context, obj, old runtime.Object) {
	if s.PrepareUpdateFn != nil {
		s.PrepareUpdateFn(ctx, obj.(T), old.(T))
	}
	if s.Spec == nil {
		return
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return
	}
	oldMeta, err := meta.Accessor(old)
	if err != nil {
		return
	}
	// rest.BeforeUpdate has already set the old generation.
	if !apiequality.Semantic.DeepEqual(s.Spec(obj.(T)), s.Spec(old.(T))) {
		m.SetGeneration(oldMeta.GetGeneration() + 1)
	}
}

// Validate calls ValidateCreate.
func (s *Strategy[T]) Validate(ctx context.Context, obj runtime.Object) field.ErrorList {
	if s.ValidateCreate == nil {
		return nil
	}
	return s.ValidateCreate(ctx, obj.(T))
}

// ValidateUpdate calls ValidateUpdateFn.
func (s *Strategy[T]) ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList {
	if s.ValidateUpdateFn == nil {
		return nil
	}
	return s.ValidateUpdateFn(ctx, obj.(T), old.(T))
}

// WarningsOnCreate calls WarnCreate.
func (s *Strategy[T]) WarningsOnCreate(ctx context.Context, obj runtime.Object) []string {
	if s.WarnCreate == nil {
		return nil
	}
	return s.WarnCreate(ctx, obj.(T))
}

// WarningsOnUpdate calls WarnUpdate.
func (s *Strategy[T]) WarningsOnUpdate(ctx context.Context, obj, old runtime.Object) []string {
	if s.WarnUpdate == nil {
		return nil
	}
	return s.WarnUpdate(ctx, obj.(T), old.(T))
}

// Canonicalize does nothing: the versioned types need no normal form.
func (s *Strategy[T]) Canonicalize(runtime.Object) {}

// AllowCreateOnUpdate returns CreateOnUpdate.
func (s *Strategy[T]) AllowCreateOnUpdate(context.Context) bool { return s.CreateOnUpdate }

// AllowUnconditionalUpdate returns UnconditionalUpdate.
func (s *Strategy[T]) AllowUnconditionalUpdate(context.Context) bool { return s.UnconditionalUpdate }

// GetResetFields returns ResetFields.
func (s *Strategy[T]) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return s.ResetFields
}

// ObjectMetaFieldsSet returns the fields every object supports in field
// selectors: metadata.name, and metadata.namespace for namespaced objects.
func ObjectMetaFieldsSet(obj metav1.Object, namespaced bool) fields.Set {
	set := fields.Set{"metadata.name": obj.GetName()}
	if namespaced {
		set["metadata.namespace"] = obj.GetNamespace()
	}
	return set
}

// Matcher returns the storage predicate for label and field selectors using
// fieldsOf to compute an object's selectable fields.
func Matcher[T runtime.Object](fieldsOf func(T) fields.Set) func(label labels.Selector, field fields.Selector) storage.SelectionPredicate {
	return func(label labels.Selector, field fields.Selector) storage.SelectionPredicate {
		return storage.SelectionPredicate{
			Label: label,
			Field: field,
			GetAttrs: func(obj runtime.Object) (labels.Set, fields.Set, error) {
				t, ok := obj.(T)
				if !ok {
					return nil, nil, fmt.Errorf("unexpected object type %T", obj)
				}
				m, err := meta.Accessor(obj)
				if err != nil {
					return nil, nil, err
				}
				return labels.Set(m.GetLabels()), fieldsOf(t), nil
			},
		}
	}
}

// AddFieldLabels registers on scheme the field selector labels kind accepts,
// mapping each client label to the label the storage's field set uses. A
// label not in mapping is rejected with upstream's "field label not
// supported" error, which the apiserver returns as 400.
func AddFieldLabels(scheme *runtime.Scheme, gvk schema.GroupVersionKind, mapping map[string]string) error {
	return scheme.AddFieldLabelConversionFunc(gvk, func(label, value string) (string, string, error) {
		mapped, ok := mapping[label]
		if !ok {
			return "", "", fmt.Errorf("field label not supported: %s", label)
		}
		return mapped, value, nil
	})
}

// Identity returns a field label mapping that maps each label to itself.
func Identity(labels ...string) map[string]string {
	m := make(map[string]string, len(labels))
	for _, l := range labels {
		m[l] = l
	}
	return m
}
