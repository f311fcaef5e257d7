// Package certificates serves certificates.k8s.io.
package certificates

import (
	"k8s.io/apimachinery/pkg/runtime"
	genericapiserver "k8s.io/apiserver/pkg/server"

	"github.com/gcp-project/gcp/pkg/controlplane/registry"
)

// APIGroup is the certificates.k8s.io group.
type APIGroup struct{}

var _ registry.APIGroup = APIGroup{}

// GroupName returns certificates.k8s.io.
func (APIGroup) GroupName() string { return "certificates.k8s.io" }

// InstallScheme registers the group's types.
func (APIGroup) InstallScheme(scheme *runtime.Scheme) error { return nil }

// NewRESTStorage builds the storage of the group's resources.
func (APIGroup) NewRESTStorage(opts registry.StorageOptions) (genericapiserver.APIGroupInfo, bool, error) {
	return opts.NewAPIGroupInfo("certificates.k8s.io"), false, nil
}
