// Package coordination serves coordination.k8s.io: v1 leases, and v1beta1
// leasecandidates when --runtime-config enables coordination.k8s.io/v1beta1.
package coordination

import (
	coordinationv1 "k8s.io/api/coordination/v1"
	coordinationv1beta1 "k8s.io/api/coordination/v1beta1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"

	"github.com/gcp-project/gcp/pkg/controlplane/registry"
	"github.com/gcp-project/gcp/pkg/controlplane/registry/coordination/lease"
	"github.com/gcp-project/gcp/pkg/controlplane/registry/coordination/leasecandidate"
	"github.com/gcp-project/gcp/pkg/controlplane/registry/typed"
)

// APIGroup is the coordination.k8s.io group.
type APIGroup struct{}

var _ registry.APIGroup = APIGroup{}

// GroupName returns coordination.k8s.io.
func (APIGroup) GroupName() string { return coordinationv1.GroupName }

// DiscoveryPriorities implements registry.DiscoveryPrioritizer with
// kube-apiserver's priorities for the group; v1beta1 is off unless
// --runtime-config turns it on.
func (APIGroup) DiscoveryPriorities() map[string]registry.DiscoveryPriority {
	return map[string]registry.DiscoveryPriority{
		"v1":      {Group: 16500, Version: 15},
		"v1beta1": {Group: 16500, Version: 13},
	}
}

// InstallScheme registers v1 leases and v1beta1 lease candidates. v1 comes
// first in the group's version priority, so v1 is the preferred version and
// leases are stored as v1; lease candidates, which only v1beta1 has, are
// stored as v1beta1 (the storage factory picks the first version of a kind).
func (APIGroup) InstallScheme(scheme *runtime.Scheme) error {
	typed.AddVersionedAsInternal(scheme, coordinationv1.SchemeGroupVersion, &coordinationv1.Lease{}, &coordinationv1.LeaseList{})
	typed.AddVersionedAsInternal(scheme, coordinationv1beta1.SchemeGroupVersion, &coordinationv1beta1.LeaseCandidate{}, &coordinationv1beta1.LeaseCandidateList{})
	return scheme.SetVersionPriority(coordinationv1.SchemeGroupVersion, coordinationv1beta1.SchemeGroupVersion)
}

// NewRESTStorage builds the storage of the enabled versions: v1 leases
// (on by default) and v1beta1 leasecandidates (off by default).
func (APIGroup) NewRESTStorage(opts registry.StorageOptions) (genericapiserver.APIGroupInfo, bool, error) {
	info := opts.NewAPIGroupInfo(coordinationv1.GroupName)
	enabled := false
	if opts.ResourceConfig.ResourceEnabled(coordinationv1.SchemeGroupVersion.WithResource("leases")) {
		leases, err := lease.NewStore(opts.Scheme, opts.RESTOptionsGetter)
		if err != nil {
			return info, false, err
		}
		enabled = opts.Enabled(&info, coordinationv1.SchemeGroupVersion, map[string]rest.Storage{"leases": leases})
	}
	if opts.ResourceConfig.ResourceEnabled(coordinationv1beta1.SchemeGroupVersion.WithResource("leasecandidates")) {
		candidates, err := leasecandidate.NewStore(opts.Scheme, opts.RESTOptionsGetter)
		if err != nil {
			return info, false, err
		}
		if opts.Enabled(&info, coordinationv1beta1.SchemeGroupVersion, map[string]rest.Storage{"leasecandidates": candidates}) {
			enabled = true
		}
	}
	return info, enabled, nil
}
