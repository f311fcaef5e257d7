package authn

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"
	apiserverapi "k8s.io/apiserver/pkg/apis/apiserver"
	apiservervalidation "k8s.io/apiserver/pkg/apis/apiserver/validation"
	authenticationcel "k8s.io/apiserver/pkg/authentication/cel"
	certutil "k8s.io/client-go/util/cert"
)

// ValidateConfig checks an AuthenticationConfiguration as kube-apiserver
// does (ValidateAuthenticationConfiguration: https issuers, no issuer
// twice, CEL that compiles, claim mappings that make sense, the anonymous
// section) and, beyond it, that each JWT issuer's certificateAuthority is
// PEM that holds a certificate, which upstream reports only when the
// authenticator starts, and that no issuer asks for an egress selector,
// which gcp does not have. No JWT issuer may be one of disallowedIssuers
// (the service account issuers). Errors name the field.
func ValidateConfig(compiler authenticationcel.Compiler, cfg *apiserverapi.AuthenticationConfiguration, disallowedIssuers []string) error {
	errs := apiservervalidation.ValidateAuthenticationConfiguration(compiler, cfg, disallowedIssuers)
	for i, a := range cfg.JWT {
		issuer := field.NewPath("jwt").Index(i).Child("issuer")
		if a.Issuer.EgressSelectorType != "" {
			// Upstream would start, then fail the authenticator for ever.
			errs = append(errs, field.Invalid(issuer.Child("egressSelectorType"), a.Issuer.EgressSelectorType,
				"gcp has no egress selector (--egress-selector-config-file); the issuer is reached directly, or through the proxy the HTTPS_PROXY and NO_PROXY environment variables name"))
		}
		if a.Issuer.CertificateAuthority == "" {
			continue
		}
		if _, err := certutil.NewPoolFromBytes([]byte(a.Issuer.CertificateAuthority)); err != nil {
			errs = append(errs, field.Invalid(issuer.Child("certificateAuthority"), "<PEM>",
				fmt.Sprintf("not a PEM bundle of certificates: %v", err)))
		}
	}
	return errs.ToAggregate()
}
