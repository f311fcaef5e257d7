// Package subjectrestriction is the CertificateSubjectRestriction
// admission plugin: nobody may request a kube-apiserver client
// certificate in the system:masters group, which would bypass
// authorization.
package subjectrestriction

import (
	"context"
	"fmt"
	"io"

	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/apiserver/pkg/admission"

	"github.com/gcp-project/gcp/pkg/controlplane/registry/certificates/certificatesigningrequest"
)

// PluginName is the name the plugin is enabled by.
const PluginName = "CertificateSubjectRestriction"

// restrictedGroup is the organization a kube-apiserver-client request may
// not carry.
const restrictedGroup = "system:masters"

// Register registers the plugin.
func Register(plugins *admission.Plugins) {
	plugins.Register(PluginName, func(io.Reader) (admission.Interface, error) { return New(), nil })
}

// Plugin checks new certificatesigningrequests.
type Plugin struct {
	*admission.Handler
}

var _ admission.ValidationInterface = &Plugin{}

// New returns the plugin.
func New() *Plugin {
	return &Plugin{Handler: admission.NewHandler(admission.Create)}
}

// Validate refuses a request for signer kubernetes.io/kube-apiserver-client
// whose subject organizations include system:masters.
func (p *Plugin) Validate(_ context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if a.GetResource().GroupResource() != certificatesv1.Resource("certificatesigningrequests") || a.GetSubresource() != "" {
		return nil
	}
	csr, ok := a.GetObject().(*certificatesv1.CertificateSigningRequest)
	if !ok {
		return admission.NewForbidden(a, fmt.Errorf("expected type CertificateSigningRequest, got: %T", a.GetObject()))
	}
	if csr.Spec.SignerName != certificatesv1.KubeAPIServerClientSignerName {
		return nil
	}
	req, err := certificatesigningrequest.ParseRequest(csr.Spec.Request)
	if err != nil {
		return admission.NewForbidden(a, fmt.Errorf("failed to parse CSR: %v", err))
	}
	for _, org := range req.Subject.Organization {
		if org == restrictedGroup {
			return admission.NewForbidden(a, fmt.Errorf("use of %s signer with %s group is not allowed", certificatesv1.KubeAPIServerClientSignerName, restrictedGroup))
		}
	}
	return nil
}
