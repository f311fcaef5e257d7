// Package approval is the CertificateApproval admission plugin: approving
// or denying a CertificateSigningRequest needs permission to approve for
// its signer.
package approval

import (
	"context"
	"fmt"
	"io"

	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/initializer"

	"github.com/gcp-project/gcp/pkg/controlplane/admission/certificates"
)

// PluginName is the name the plugin is enabled by.
const PluginName = "CertificateApproval"

// Register registers the plugin.
func Register(plugins *admission.Plugins) {
	plugins.Register(PluginName, func(io.Reader) (admission.Interface, error) { return New(), nil })
}

// Plugin checks updates of certificatesigningrequests/approval.
type Plugin struct {
	*admission.Handler
	certificates.Authorized
}

var (
	_ admission.ValidationInterface            = &Plugin{}
	_ initializer.WantsUnconditionalAuthorizer = &Plugin{}
)

// New returns the plugin, which still needs an authorizer.
func New() *Plugin {
	return &Plugin{
		Handler:    admission.NewHandler(admission.Update),
		Authorized: certificates.NewAuthorized(PluginName),
	}
}

// Validate requires verb "approve" on signers for the request's
// signerName. The stored (old) object's signer counts, so a request
// cannot switch signers on the way through.
func (p *Plugin) Validate(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if a.GetSubresource() != "approval" || a.GetResource().GroupResource() != certificatesv1.Resource("certificatesigningrequests") {
		return nil
	}
	csr, ok := a.GetOldObject().(*certificatesv1.CertificateSigningRequest)
	if !ok {
		return admission.NewForbidden(a, fmt.Errorf("expected type CertificateSigningRequest, got: %T", a.GetOldObject()))
	}
	if !certificates.IsAuthorizedForSignerName(ctx, p.Authorizer, a.GetUserInfo(), "approve", csr.Spec.SignerName) {
		return admission.NewForbidden(a, fmt.Errorf("user not permitted to approve requests with signerName %q", csr.Spec.SignerName))
	}
	return nil
}
