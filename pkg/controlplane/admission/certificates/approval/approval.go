// Package approval is the CertificateApproval admission plugin: approving
// or denying a CertificateSigningRequest needs permission to approve for
// its signer.
package approval

import (
	"context"
	"fmt"

	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/gcp-project/gcp/pkg/controlplane/admission/certificates"
)

// PluginName is the name the plugin is enabled by.
const PluginName = "CertificateApproval"

// Register registers the plugin.
func Register(plugins *admission.Plugins) { certificates.Register(plugins, PluginName, New) }

// New returns the plugin, which still needs an authorizer.
func New() *certificates.SignerPlugin {
	return certificates.NewSignerPlugin(PluginName, validate, admission.Update)
}

// validate requires verb "approve" on signers for the request's
// signerName. The stored (old) object's signer counts, so a request
// cannot switch signers on the way through.
func validate(ctx context.Context, authz authorizer.UnconditionalAuthorizer, a admission.Attributes) error {
	if a.GetSubresource() != "approval" || a.GetResource().GroupResource() != certificatesv1.Resource("certificatesigningrequests") {
		return nil
	}
	csr, err := certificates.As[certificatesv1.CertificateSigningRequest](a, a.GetOldObject())
	if err != nil {
		return err
	}
	if !certificates.IsAuthorizedForSignerName(ctx, authz, a.GetUserInfo(), "approve", csr.Spec.SignerName) {
		return admission.NewForbidden(a, fmt.Errorf("user not permitted to approve requests with signerName %q", csr.Spec.SignerName))
	}
	return nil
}
