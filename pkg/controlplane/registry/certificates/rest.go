// Package certificates serves certificates.k8s.io/v1:
// CertificateSigningRequests (with approval and status subresources) and
// ClusterTrustBundles.
package certificates

import (
	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"

	"github.com/gcp-project/gcp/pkg/controlplane/registry"
	"github.com/gcp-project/gcp/pkg/controlplane/registry/certificates/certificatesigningrequest"
	"github.com/gcp-project/gcp/pkg/controlplane/registry/certificates/clustertrustbundle"
	"github.com/gcp-project/gcp/pkg/controlplane/registry/typed"
)

// APIGroup is the certificates.k8s.io group.
type APIGroup struct{}

var _ registry.APIGroup = APIGroup{}

// GroupName returns certificates.k8s.io.
func (APIGroup) GroupName() string { return certificatesv1.GroupName }

// DiscoveryPriorities implements registry.DiscoveryPrioritizer with
// kube-apiserver's priorities for the group.
func (APIGroup) DiscoveryPriorities() map[string]registry.DiscoveryPriority {
	return map[string]registry.DiscoveryPriority{
		"v1": {Group: 17300, Version: 15},
	}
}

// InstallScheme registers the v1 types and their field selector labels.
// The v1 types need no defaulting (upstream has none for them).
func (APIGroup) InstallScheme(scheme *runtime.Scheme) error {
	typed.AddVersionedAsInternal(scheme, certificatesv1.SchemeGroupVersion,
		&certificatesv1.CertificateSigningRequest{}, &certificatesv1.CertificateSigningRequestList{},
		&certificatesv1.ClusterTrustBundle{}, &certificatesv1.ClusterTrustBundleList{},
	)
	for kind, labels := range map[string]map[string]string{
		"CertificateSigningRequest": certificatesigningrequest.FieldLabels(),
		"ClusterTrustBundle":        clustertrustbundle.FieldLabels(),
	} {
		if err := typed.AddFieldLabels(scheme, certificatesv1.SchemeGroupVersion.WithKind(kind), labels); err != nil {
			return err
		}
	}
	return nil
}

// NewRESTStorage builds the storage of the group's v1 resources.
func (APIGroup) NewRESTStorage(opts registry.StorageOptions) (genericapiserver.APIGroupInfo, bool, error) {
	info := opts.NewAPIGroupInfo(certificatesv1.GroupName)
	csr, err := certificatesigningrequest.NewStorage(opts.Scheme, opts.RESTOptionsGetter)
	if err != nil {
		return info, false, err
	}
	bundles, err := clustertrustbundle.NewStore(opts.Scheme, opts.RESTOptionsGetter)
	if err != nil {
		return info, false, err
	}
	storage := map[string]rest.Storage{
		"certificatesigningrequests":          csr.CertificateSigningRequest,
		"certificatesigningrequests/approval": csr.Approval,
		"certificatesigningrequests/status":   csr.Status,
		"clustertrustbundles":                 bundles,
	}
	return info, opts.Enabled(&info, certificatesv1.SchemeGroupVersion, storage), nil
}
