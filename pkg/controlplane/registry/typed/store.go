package typed

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
)

// Resource describes one native resource of type T (a pointer to a k8s.io/api
// struct) with list type L.
type Resource[T, L runtime.Object] struct {
	// GroupResource is the plural resource, e.g. {"" "configmaps"}.
	GroupResource schema.GroupResource
	// Singular is the singular resource name, e.g. "configmap".
	Singular string
	// New and NewList return empty objects.
	New     func() T
	NewList func() L
	// Strategy is used for create, update and delete of the main resource.
	Strategy *Strategy[T]
	// Table prints the kubectl columns; nil uses NAME and CREATED AT.
	Table rest.TableConvertor
	// Fields returns the selectable fields of an object; nil means only
	// metadata.name and metadata.namespace.
	Fields func(T) fields.Set
}

// NewStore builds the etcd-backed store of the resource.
func (r Resource[T, L]) NewStore(optsGetter generic.RESTOptionsGetter) (*genericregistry.Store, error) {
	fieldsOf := r.Fields
	if fieldsOf == nil {
		namespaced := r.Strategy.Namespaced
		fieldsOf = func(obj T) fields.Set {
			m, err := meta.Accessor(obj)
			if err != nil {
				return fields.Set{}
			}
			return ObjectMetaFieldsSet(m, namespaced)
		}
	}
	table := r.Table
	if table == nil {
		table = rest.NewDefaultTableConvertor(r.GroupResource)
	}
	store := &genericregistry.Store{
		NewFunc:                   func() runtime.Object { return r.New() },
		NewListFunc:               func() runtime.Object { return r.NewList() },
		DefaultQualifiedResource:  r.GroupResource,
		SingularQualifiedResource: schema.GroupResource{Group: r.GroupResource.Group, Resource: r.Singular},
		PredicateFunc:             Matcher(fieldsOf),
		CreateStrategy:            r.Strategy,
		UpdateStrategy:            r.Strategy,
		DeleteStrategy:            r.Strategy,
		ResetFieldsStrategy:       r.Strategy,
		TableConvertor:            table,
	}
	options := &generic.StoreOptions{
		RESTOptions: optsGetter,
		AttrFunc:    Matcher(fieldsOf)(nil, nil).GetAttrs,
	}
	if err := store.CompleteWithOptions(options); err != nil {
		return nil, fmt.Errorf("%s: %w", r.GroupResource, err)
	}
	return store, nil
}
