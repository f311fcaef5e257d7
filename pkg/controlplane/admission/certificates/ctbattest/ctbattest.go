// Package ctbattest is the ClusterTrustBundleAttest admission plugin:
// creating or updating a ClusterTrustBundle that names a signer needs
// permission to attest for that signer.
package ctbattest

import (
	"context"
	"fmt"

	certificatesv1 "k8s.io/api/certificates/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/gcp-project/gcp/pkg/controlplane/admission/certificates"
)

// PluginName is the name the plugin is enabled by.
const PluginName = "ClusterTrustBundleAttest"

// Register registers the plugin.
func Register(plugins *admission.Plugins) { certificates.Register(plugins, PluginName, New) }

// New returns the plugin, which still needs an authorizer.
func New() *certificates.SignerPlugin {
	return certificates.NewSignerPlugin(PluginName, validate, admission.Create, admission.Update)
}

// validate requires verb "attest" on signers for the bundle's signerName.
// A bundle without a signer needs nothing, and neither does an update
// that touches only the fields garbage collection and storage migration
// write (owner references, finalizers, managed fields). The new object's
// signer is checked: validation refuses to change it.
func validate(ctx context.Context, authz authorizer.UnconditionalAuthorizer, a admission.Attributes) error {
	if a.GetResource().GroupResource() != certificatesv1.Resource("clustertrustbundles") || a.GetSubresource() != "" {
		return nil
	}
	bundle, err := certificates.As[certificatesv1.ClusterTrustBundle](a, a.GetObject())
	if err != nil {
		return err
	}
	if bundle.Spec.SignerName == "" {
		return nil
	}
	if a.GetOperation() == admission.Update {
		if old, ok := a.GetOldObject().(*certificatesv1.ClusterTrustBundle); ok && onlyGCFieldsChanged(bundle, old) {
			return nil
		}
	}
	if !certificates.IsAuthorizedForSignerName(ctx, authz, a.GetUserInfo(), "attest", bundle.Spec.SignerName) {
		return admission.NewForbidden(a, fmt.Errorf("user not permitted to attest for signerName %q", bundle.Spec.SignerName))
	}
	return nil
}

// onlyGCFieldsChanged reports whether bundle equals old but for owner
// references, finalizers, selfLink and managed fields.
func onlyGCFieldsChanged(bundle, old *certificatesv1.ClusterTrustBundle) bool {
	if old == nil {
		return false
	}
	copied := bundle.DeepCopy()
	copied.OwnerReferences = old.OwnerReferences
	copied.Finalizers = old.Finalizers
	copied.SelfLink = old.SelfLink //nolint:staticcheck // compared, as upstream, so a change of it alone is a GC-only update
	copied.ManagedFields = old.ManagedFields
	return apiequality.Semantic.DeepEqual(copied, old)
}
