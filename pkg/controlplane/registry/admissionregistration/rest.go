// Package admissionregistration serves admissionregistration.k8s.io.
package admissionregistration

import (
	"k8s.io/apimachinery/pkg/runtime"
	genericapiserver "k8s.io/apiserver/pkg/server"

	"github.com/gcp-project/gcp/pkg/controlplane/registry"
)

// APIGroup is the admissionregistration.k8s.io group.
type APIGroup struct{}

var _ registry.APIGroup = APIGroup{}

// GroupName returns admissionregistration.k8s.io.
func (APIGroup) GroupName() string { return "admissionregistration.k8s.io" }

// InstallScheme registers the group's types.
func (APIGroup) InstallScheme(scheme *runtime.Scheme) error { return nil }

// NewRESTStorage builds the storage of the group's resources.
func (APIGroup) NewRESTStorage(opts registry.StorageOptions) (genericapiserver.APIGroupInfo, bool, error) {
	return opts.NewAPIGroupInfo("admissionregistration.k8s.io"), false, nil
}
