package typed

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// Subresource serves a get/update subresource such as status or finalize
// from a copy of the main store whose update strategy differs. It exposes
// only get, update and patch, so the subresource cannot create or delete.
type Subresource struct {
	store *genericregistry.Store
}

var (
	_ rest.Getter              = &Subresource{}
	_ rest.Updater             = &Subresource{}
	_ rest.Patcher             = &Subresource{}
	_ rest.ResetFieldsStrategy = &Subresource{}
)

// NewSubresource returns a subresource over a copy of main whose update
// strategy is strategy.
func NewSubresource[T runtime.Object](main *genericregistry.Store, strategy *Strategy[T]) *Subresource {
	s := *main
	s.CreateStrategy = nil
	s.UpdateStrategy = strategy
	s.ResetFieldsStrategy = strategy
	return &Subresource{store: &s}
}

// New returns an empty object.
func (s *Subresource) New() runtime.Object { return s.store.New() }

// Destroy does nothing: the underlying storage belongs to the main resource.
func (s *Subresource) Destroy() {}

// Get returns the object.
func (s *Subresource) Get(ctx context.Context, name string, options *metav1.GetOptions) (runtime.Object, error) {
	return s.store.Get(ctx, name, options)
}

// Update updates the object through the subresource's strategy.
func (s *Subresource) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc, updateValidation rest.ValidateObjectUpdateFunc, forceAllowCreate bool, options *metav1.UpdateOptions) (runtime.Object, bool, error) {
	// A subresource never creates the main object.
	return s.store.Update(ctx, name, objInfo, createValidation, updateValidation, false, options)
}

// GetResetFields returns the fields the subresource's strategy resets.
func (s *Subresource) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return s.store.GetResetFields()
}

// ConvertToTable prints the object like the main resource.
func (s *Subresource) ConvertToTable(ctx context.Context, object runtime.Object, tableOptions runtime.Object) (*metav1.Table, error) {
	return s.store.ConvertToTable(ctx, object, tableOptions)
}

// UpdateOnly serves a subresource that can only be updated (PUT), like
// upstream's namespaces/finalize.
type UpdateOnly struct {
	sub *Subresource
}

var _ rest.Updater = &UpdateOnly{}

// NewUpdateOnly returns an update-only subresource; see NewSubresource.
func NewUpdateOnly[T runtime.Object](main *genericregistry.Store, strategy *Strategy[T]) *UpdateOnly {
	return &UpdateOnly{sub: NewSubresource(main, strategy)}
}

// New returns an empty object.
func (u *UpdateOnly) New() runtime.Object { return u.sub.New() }

// Destroy does nothing: the underlying storage belongs to the main resource.
func (u *UpdateOnly) Destroy() {}

// Update updates the object through the subresource's strategy.
func (u *UpdateOnly) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc, updateValidation rest.ValidateObjectUpdateFunc, forceAllowCreate bool, options *metav1.UpdateOptions) (runtime.Object, bool, error) {
	return u.sub.Update(ctx, name, objInfo, createValidation, updateValidation, forceAllowCreate, options)
}

// GetResetFields returns the fields the subresource's strategy resets.
func (u *UpdateOnly) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return u.sub.GetResetFields()
}
