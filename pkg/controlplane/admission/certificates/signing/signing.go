// Package signing is the CertificateSigning admission plugin: issuing a
// certificate for a CertificateSigningRequest, or changing its status
// conditions, needs permission to sign for its signer.
package signing

import (
	"bytes"
	"context"
	"fmt"
	"io"

	certificatesv1 "k8s.io/api/certificates/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/initializer"

	"github.com/gcp-project/gcp/pkg/controlplane/admission/certificates"
)

// PluginName is the name the plugin is enabled by.
const PluginName = "CertificateSigning"

// Register registers the plugin.
func Register(plugins *admission.Plugins) {
	plugins.Register(PluginName, func(io.Reader) (admission.Interface, error) { return New(), nil })
}

// Plugin checks updates of certificatesigningrequests/status.
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

// Validate requires verb "sign" on signers for the stored request's
// signerName when the update changes status.certificate or
// status.conditions; other status updates pass.
func (p *Plugin) Validate(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if a.GetSubresource() != "status" || a.GetResource().GroupResource() != certificatesv1.Resource("certificatesigningrequests") {
		return nil
	}
	old, ok := a.GetOldObject().(*certificatesv1.CertificateSigningRequest)
	if !ok {
		return admission.NewForbidden(a, fmt.Errorf("expected type CertificateSigningRequest, got: %T", a.GetOldObject()))
	}
	csr, ok := a.GetObject().(*certificatesv1.CertificateSigningRequest)
	if !ok {
		return admission.NewForbidden(a, fmt.Errorf("expected type CertificateSigningRequest, got: %T", a.GetObject()))
	}
	if bytes.Equal(old.Status.Certificate, csr.Status.Certificate) && apiequality.Semantic.DeepEqual(old.Status.Conditions, csr.Status.Conditions) {
		return nil
	}
	if !certificates.IsAuthorizedForSignerName(ctx, p.Authorizer, a.GetUserInfo(), "sign", old.Spec.SignerName) {
		return admission.NewForbidden(a, fmt.Errorf("user not permitted to sign requests with signerName %q", old.Spec.SignerName))
	}
	return nil
}
