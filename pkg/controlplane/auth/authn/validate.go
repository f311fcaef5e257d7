package authn

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"
	apiserverapi "k8s.io/apiserver/pkg/apis/apiserver"
	apiservervalidation "k8s.io/apiserver/pkg/apis/apiserver/validation"
	authenticationcel "k8s.io/apiserver/pkg/authentication/cel"
	certutil "k8s.io/client-go/util/cert"
)

// ValidateJWT checks JWT authenticators as kube-apiserver does
// (ValidateAuthenticationConfiguration: https issuers, no issuer twice,
// CEL that compiles, claim mappings that make sense) and, beyond it, that
// each certificateAuthority is PEM that holds a certificate, which upstream
// reports only when the authenticator starts. Errors name the field.
func ValidateJWT(compiler authenticationcel.Compiler, authenticators []apiserverapi.JWTAuthenticator, disallowedIssuers []string) error {
	cfg := &apiserverapi.AuthenticationConfiguration{JWT: authenticators}
	errs := apiservervalidation.ValidateAuthenticationConfiguration(compiler, cfg, disallowedIssuers)
	for i, a := range authenticators {
		if a.Issuer.CertificateAuthority == "" {
			continue
		}
		if _, err := certutil.NewPoolFromBytes([]byte(a.Issuer.CertificateAuthority)); err != nil {
			errs = append(errs, field.Invalid(field.NewPath("jwt").Index(i).Child("issuer", "certificateAuthority"), "<PEM>",
				fmt.Sprintf("not a PEM bundle of certificates: %v", err)))
		}
	}
	return errs.ToAggregate()
}
