// Package coordination serves coordination.k8s.io/v1 leases.
package coordination

import (
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"

	"github.com/gcp-project/gcp/pkg/controlplane/registry"
	"github.com/gcp-project/gcp/pkg/controlplane/registry/coordination/lease"
	"github.com/gcp-project/gcp/pkg/controlplane/registry/typed"
)

// APIGroup is the coordination.k8s.io group.
type APIGroup struct{}

var _ registry.APIGroup = APIGroup{}

// GroupName returns coordination.k8s.io.
func (APIGroup) GroupName() string { return coordinationv1.GroupName }

// InstallScheme registers leases.
func (APIGroup) InstallScheme(scheme *runtime.Scheme) error {
	typed.AddVersionedAsInternal(scheme, coordinationv1.SchemeGroupVersion, &coordinationv1.Lease{}, &coordinationv1.LeaseList{})
	return nil
}

// NewRESTStorage builds the storage of leases.
func (APIGroup) NewRESTStorage(opts registry.StorageOptions) (genericapiserver.APIGroupInfo, bool, error) {
	info := opts.NewAPIGroupInfo(coordinationv1.GroupName)
	leases, err := lease.NewStore(opts.Scheme, opts.RESTOptionsGetter)
	if err != nil {
		return info, false, err
	}
	enabled := opts.Enabled(&info, coordinationv1.SchemeGroupVersion, map[string]rest.Storage{"leases": leases})
	return info, enabled, nil
}
