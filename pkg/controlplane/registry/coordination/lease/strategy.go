package lease

import (
	"context"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/storage/names"

	"github.com/gcp-project/gcp/pkg/controlplane/registry/typed"
)

// NewStore returns the storage of coordination.k8s.io/v1 leases.
func NewStore(typer runtime.ObjectTyper, optsGetter generic.RESTOptionsGetter) (*genericregistry.Store, error) {
	return typed.Resource[*coordinationv1.Lease, *coordinationv1.LeaseList]{
		GroupResource: coordinationv1.Resource("leases"),
		Singular:      "lease",
		New:           func() *coordinationv1.Lease { return &coordinationv1.Lease{} },
		NewList:       func() *coordinationv1.LeaseList { return &coordinationv1.LeaseList{} },
		Strategy: &typed.Strategy[*coordinationv1.Lease]{
			ObjectTyper:   typer,
			NameGenerator: names.SimpleNameGenerator,
			Namespaced:    true,
			ValidateCreate: func(_ context.Context, l *coordinationv1.Lease) field.ErrorList {
				return Validate(l)
			},
			ValidateUpdateFn: func(_ context.Context, l, old *coordinationv1.Lease) field.ErrorList {
				return ValidateUpdate(l, old)
			},
		},
		Table: TableConvertor(),
	}.NewStore(optsGetter)
}
