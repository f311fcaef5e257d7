package lease

import (
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"

	"github.com/gcp-project/gcp/pkg/controlplane/registry/typed"
)

// NewStore returns the storage of coordination.k8s.io/v1 leases.
func NewStore(typer runtime.ObjectTyper, optsGetter generic.RESTOptionsGetter) (*genericregistry.Store, error) {
	strategy := typed.NewStrategy(typer, typed.NamespaceScoped, Validate, ValidateUpdate)
	return typed.NewResource[coordinationv1.Lease, coordinationv1.LeaseList](
		coordinationv1.Resource("leases"), "lease", strategy, TableConvertor()).NewStore(optsGetter)
}
