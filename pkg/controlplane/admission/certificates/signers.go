// Package certificates holds what gcp's certificates.k8s.io admission
// plugins share: the permission check on the synthetic "signers" resource
// and the authorizer plumbing. The plugins live in the subpackages
// approval, signing, ctbattest and subjectrestriction.
package certificates

import (
	"context"
	"fmt"
	"strings"

	certificatesv1 "k8s.io/api/certificates/v1"
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

// Authorized is embedded by the plugins that check signer permissions: it
// receives the server's authorizer from k8s.io/apiserver's plugin
// initializer and refuses to run without one.
type Authorized struct {
	// Authorizer decides signer permissions.
	Authorizer authorizer.UnconditionalAuthorizer
	plugin     string
}

// NewAuthorized returns the authorizer holder of the plugin named plugin.
func NewAuthorized(plugin string) Authorized {
	return Authorized{plugin: plugin}
}

// SetUnconditionalAuthorizer implements initializer.WantsUnconditionalAuthorizer.
func (a *Authorized) SetUnconditionalAuthorizer(authz authorizer.UnconditionalAuthorizer) {
	a.Authorizer = authz
}

// ValidateInitialization fails when no authorizer was set.
func (a *Authorized) ValidateInitialization() error {
	if a.Authorizer == nil {
		return fmt.Errorf("%s requires an authorizer", a.plugin)
	}
	return nil
}
