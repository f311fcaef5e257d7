// Package certificates holds what gcp's certificates.k8s.io admission
// plugins share: the permission check on the synthetic "signers" resource
// and the skeleton of the plugins that check it (SignerPlugin). The plugins live in the subpackages
// approval, signing, ctbattest and subjectrestriction.
package certificates

import (
	"context"
	"fmt"
	"io"
	"reflect"
	"strings"

	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/initializer"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/klog/v2"
)

// IsAuthorizedForSignerName reports whether u may do verb (approve, sign,
// attest) on resource "signers" of certificates.k8s.io named signerName,
// or, failing that, named "<domain>/*" for the signer's domain, which
// grants verb for every signer of the domain. Authorizer errors count as
// a refusal.
func IsAuthorizedForSignerName(ctx context.Context, authz authorizer.UnconditionalAuthorizer, u user.Info, verb, signerName string) bool {
	domain, _, _ := strings.Cut(signerName, "/")
	for _, name := range []string{signerName, domain + "/*"} {
		attrs := authorizer.AttributesRecord{
			User:            u,
			Verb:            verb,
			APIGroup:        certificatesv1.GroupName,
			APIVersion:      "*",
			Resource:        "signers",
			Name:            name,
			ResourceRequest: true,
		}
		decision, reason, err := authz.Authorize(ctx, attrs)
		if err != nil {
			klog.V(3).InfoS("Cannot authorize signer access", "verb", verb, "signer", name, "reason", reason, "err", err)
			continue
		}
		if decision == authorizer.DecisionAllow {
			return true
		}
	}
	return false
}

// SignerPlugin is an admission plugin that checks a permission on signers
// (CertificateApproval, CertificateSigning, ClusterTrustBundleAttest): it
// receives the server's authorizer from k8s.io/apiserver's plugin
// initializer, refuses to run without one, and validates each request of
// its operations with its Check.
type SignerPlugin struct {
	*admission.Handler
	// Authorizer decides signer permissions.
	Authorizer authorizer.UnconditionalAuthorizer
	name       string
	check      Check
}

var (
	_ admission.ValidationInterface            = &SignerPlugin{}
	_ initializer.WantsUnconditionalAuthorizer = &SignerPlugin{}
)

// Check validates a request, with authz deciding signer permissions (see
// IsAuthorizedForSignerName); an error refuses it.
type Check func(ctx context.Context, authz authorizer.UnconditionalAuthorizer, a admission.Attributes) error

// NewSignerPlugin returns the plugin named name that validates requests of
// the operations ops with check; it still needs an authorizer.
func NewSignerPlugin(name string, check Check, ops ...admission.Operation) *SignerPlugin {
	return &SignerPlugin{Handler: admission.NewHandler(ops...), name: name, check: check}
}

// Register registers the plugin newPlugin makes under name.
func Register(plugins *admission.Plugins, name string, newPlugin func() *SignerPlugin) {
	plugins.Register(name, func(io.Reader) (admission.Interface, error) { return newPlugin(), nil })
}

// SetUnconditionalAuthorizer implements initializer.WantsUnconditionalAuthorizer.
func (p *SignerPlugin) SetUnconditionalAuthorizer(authz authorizer.UnconditionalAuthorizer) {
	p.Authorizer = authz
}

// ValidateInitialization fails when no authorizer was set.
func (p *SignerPlugin) ValidateInitialization() error {
	if p.Authorizer == nil {
		return fmt.Errorf("%s requires an authorizer", p.name)
	}
	return nil
}

// Validate implements admission.ValidationInterface with the plugin's
// Check.
func (p *SignerPlugin) Validate(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	return p.check(ctx, p.Authorizer, a)
}

// As returns obj, an object of request a, as a *T, or the request's
// refusal when it is of another type.
func As[T any](a admission.Attributes, obj runtime.Object) (*T, error) {
	t, ok := any(obj).(*T)
	if !ok {
		return nil, admission.NewForbidden(a, fmt.Errorf("expected type %s, got: %T", reflect.TypeFor[T]().Name(), obj))
	}
	return t, nil
}
