// Package signing is the CertificateSigning admission plugin: issuing a
// certificate for a CertificateSigningRequest, or changing its status
// conditions, needs permission to sign for its signer.
package signing

import (
	"bytes"
	"context"
	"fmt"

	certificatesv1 "k8s.io/api/certificates/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/gcp-project/gcp/pkg/controlplane/admission/certificates"
)

// PluginName is the name the plugin is enabled by.
const PluginName = "CertificateSigning"

// Register registers the plugin.
func Register(plugins *admission.Plugins) { certificates.Register(plugins, PluginName, New) }

// New returns the plugin, which still needs an authorizer.
func New() *certificates.SignerPlugin {
	return certificates.NewSignerPlugin(PluginName, validate, admission.Update)
}

// validate requires verb "sign" on signers for the stored request's
// signerName when the update changes status.certificate or
// status.conditions; other status updates pass.
func validate(ctx context.Context, authz authorizer.UnconditionalAuthorizer, a admission.Attributes) error {
	if a.GetSubresource() != "status" || a.GetResource().GroupResource() != certificatesv1.Resource("certificatesigningrequests") {
		return nil
	}
	old, err := certificates.As[certificatesv1.CertificateSigningRequest](a, a.GetOldObject())
	if err != nil {
		return err
	}
	csr, err := certificates.As[certificatesv1.CertificateSigningRequest](a, a.GetObject())
	if err != nil {
		return err
	}
	if bytes.Equal(old.Status.Certificate, csr.Status.Certificate) && apiequality.Semantic.DeepEqual(old.Status.Conditions, csr.Status.Conditions) {
		return nil
	}
	if !certificates.IsAuthorizedForSignerName(ctx, authz, a.GetUserInfo(), "sign", old.Spec.SignerName) {
		return admission.NewForbidden(a, fmt.Errorf("user not permitted to sign requests with signerName %q", old.Spec.SignerName))
	}
	return nil
}
