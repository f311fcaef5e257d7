package options

import (
	"fmt"
	"os"

	apiserverapi "k8s.io/apiserver/pkg/apis/apiserver"
	apiservervalidation "k8s.io/apiserver/pkg/apis/apiserver/validation"
	authenticationcel "k8s.io/apiserver/pkg/authentication/cel"

	"github.com/gcp-project/gcp/pkg/controlplane/auth/authn"
)

// loadAuthenticationConfig reads an AuthenticationConfiguration file
// (apiserver.config.k8s.io, the format of kube-apiserver's
// --authentication-config) and validates it, no JWT authenticator using
// one of disallowedIssuers (the service account issuers). It returns the
// file's content too, the baseline of reloads.
func loadAuthenticationConfig(path string, disallowedIssuers []string) (*apiserverapi.AuthenticationConfiguration, []byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("--authentication-config: %w", err)
	}
	cfg, err := authn.DecodeConfig(data)
	if err != nil {
		return nil, nil, fmt.Errorf("--authentication-config %s: %w", path, err)
	}
	if err := validateAuthenticationConfig(cfg, disallowedIssuers); err != nil {
		return nil, nil, fmt.Errorf("--authentication-config %s: %w", path, err)
	}
	return cfg, data, nil
}

// validateAuthenticationConfig validates cfg as kube-apiserver does, and
// each JWT issuer's certificateAuthority, which upstream checks only when
// the authenticator starts.
func validateAuthenticationConfig(cfg *apiserverapi.AuthenticationConfiguration, disallowedIssuers []string) error {
	if errs := apiservervalidation.ValidateAuthenticationConfiguration(authenticationcel.NewDefaultCompiler(), cfg, disallowedIssuers); len(errs) > 0 {
		return errs.ToAggregate()
	}
	return authn.ValidateJWT(authenticationcel.NewDefaultCompiler(), cfg.JWT, disallowedIssuers)
}
