package typed

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage/names"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// Scope says whether a resource's objects live in a namespace.
type Scope bool

const (
	// ClusterScoped objects live outside namespaces.
	ClusterScoped Scope = false
	// NamespaceScoped objects live in a namespace.
	NamespaceScoped Scope = true
)

// NewStrategy returns the strategy of most resources: objects of type T in
// scope, generateName as upstream's (names.SimpleNameGenerator), validated
// by validate and validateUpdate, which need no context. Set what else the
// resource needs (UnconditionalUpdate, PrepareCreate, Spec...) on the
// result.
func NewStrategy[T runtime.Object](typer runtime.ObjectTyper, scope Scope, validate func(obj T) field.ErrorList, validateUpdate func(obj, old T) field.ErrorList) *Strategy[T] {
	return &Strategy[T]{
		ObjectTyper:      typer,
		NameGenerator:    names.SimpleNameGenerator,
		Namespaced:       bool(scope),
		ValidateCreate:   func(_ context.Context, obj T) field.ErrorList { return validate(obj) },
		ValidateUpdateFn: func(_ context.Context, obj, old T) field.ErrorList { return validateUpdate(obj, old) },
	}
}

// object is a pointer to a k8s.io/api struct O.
type object[O any] interface {
	*O
	runtime.Object
}

// NewResource returns the Resource of the plural resource gr, singular
// name singular, whose objects are *O (made by new(O)) listed in *L, with
// strategy and table (nil: NAME and CREATED AT). Set Fields on the result
// when it has selectable fields beyond metadata's.
func NewResource[O, L any, T object[O], LT object[L]](gr schema.GroupResource, singular string, strategy *Strategy[T], table rest.TableConvertor) Resource[T, LT] {
	return Resource[T, LT]{
		GroupResource: gr,
		Singular:      singular,
		New:           func() T { return new(O) },
		NewList:       func() LT { return new(L) },
		Strategy:      strategy,
		Table:         table,
	}
}

// StatusResetFields are the ResetFields of a main resource's strategy
// whose status only its status subresource writes: status, in apiVersion.
func StatusResetFields(apiVersion fieldpath.APIVersion) map[fieldpath.APIVersion]*fieldpath.Set {
	return map[fieldpath.APIVersion]*fieldpath.Set{apiVersion: fieldpath.NewSet(fieldpath.MakePathOrDie("status"))}
}
