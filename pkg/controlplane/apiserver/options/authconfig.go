package options

import (
	"fmt"

	apiserverapi "k8s.io/apiserver/pkg/apis/apiserver"
	authenticationcel "k8s.io/apiserver/pkg/authentication/cel"

	"github.com/gcp-project/gcp/pkg/controlplane/auth/authn"
	"github.com/gcp-project/gcp/pkg/controlplane/auth/configfile"
)

// loadAuthenticationConfig reads an AuthenticationConfiguration file
// (apiserver.config.k8s.io, the format of kube-apiserver's
// --authentication-config) and validates it, no JWT authenticator using
// one of disallowedIssuers (the service account issuers). It returns the
// file's content too, the baseline of reloads.
func loadAuthenticationConfig(path string, disallowedIssuers []string) (*apiserverapi.AuthenticationConfiguration, []byte, error) {
	data, err := configfile.Read(path)
	if err != nil {
		return nil, nil, fmt.Errorf("--authentication-config: %w", err)
	}
	cfg, err := authn.DecodeConfig(data)
	if err != nil {
		return nil, nil, fmt.Errorf("--authentication-config %s: %w", path, err)
	}
	if err := authn.ValidateConfig(authenticationcel.NewDefaultCompiler(), cfg, disallowedIssuers); err != nil {
		return nil, nil, fmt.Errorf("--authentication-config %s: %w", path, err)
	}
	return cfg, data, nil
}
