// Package apiserverinternal serves internal.apiserver.k8s.io/v1alpha1
// storageversions when --runtime-config enables that version; like
// upstream, the group is off by default.
package apiserverinternal

import (
	apiserverinternalv1alpha1 "k8s.io/api/apiserverinternal/v1alpha1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"

	"github.com/gcp-project/gcp/pkg/controlplane/registry"
	"github.com/gcp-project/gcp/pkg/controlplane/registry/apiserverinternal/storageversion"
	"github.com/gcp-project/gcp/pkg/controlplane/registry/typed"
)

// APIGroup is the internal.apiserver.k8s.io group.
type APIGroup struct{}

var _ registry.APIGroup = APIGroup{}

// GroupName returns internal.apiserver.k8s.io.
func (APIGroup) GroupName() string { return apiserverinternalv1alpha1.GroupName }

// DiscoveryPriorities implements registry.DiscoveryPrioritizer with
// kube-apiserver's priorities for the group.
func (APIGroup) DiscoveryPriorities() map[string]registry.DiscoveryPriority {
	return map[string]registry.DiscoveryPriority{
		"v1alpha1": {Group: 16000, Version: 9},
	}
}

// InstallScheme registers storage versions.
func (APIGroup) InstallScheme(scheme *runtime.Scheme) error {
	typed.AddVersionedAsInternal(scheme, apiserverinternalv1alpha1.SchemeGroupVersion,
		&apiserverinternalv1alpha1.StorageVersion{}, &apiserverinternalv1alpha1.StorageVersionList{})
	return scheme.SetVersionPriority(apiserverinternalv1alpha1.SchemeGroupVersion)
}

// NewRESTStorage builds the storage of storageversions and their status
// when internal.apiserver.k8s.io/v1alpha1 is enabled.
func (APIGroup) NewRESTStorage(opts registry.StorageOptions) (genericapiserver.APIGroupInfo, bool, error) {
	info := opts.NewAPIGroupInfo(apiserverinternalv1alpha1.GroupName)
	if !opts.ResourceConfig.ResourceEnabled(apiserverinternalv1alpha1.SchemeGroupVersion.WithResource("storageversions")) {
		return info, false, nil
	}
	s, err := storageversion.NewStorage(opts.Scheme, opts.RESTOptionsGetter)
	if err != nil {
		return info, false, err
	}
	enabled := opts.Enabled(&info, apiserverinternalv1alpha1.SchemeGroupVersion, map[string]rest.Storage{
		"storageversions":        s.StorageVersion,
		"storageversions/status": s.Status,
	})
	return info, enabled, nil
}
