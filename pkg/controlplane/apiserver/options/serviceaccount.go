package options

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/gcp-project/gcp/pkg/controlplane/auth/satoken"
)

// ServiceAccountOptions configure bound service account tokens: who issues
// them, which keys sign and verify them, and for whom they are meant.
// Without an issuer, service account tokens are off.
type ServiceAccountOptions struct {
	// Issuers identify the token issuer; the first issues new tokens, all
	// are accepted. It is also the OIDC discovery issuer.
	Issuers []string
	// KeyFiles hold the public (or private) keys that verify tokens;
	// empty means the signing key's public key.
	KeyFiles []string
	// SigningKeyFile holds the private key that signs new tokens.
	SigningKeyFile string
	// APIAudiences are the audiences of the API; tokens requested without
	// audiences get them, and tokens must carry one of them. Empty means
	// the first issuer.
	APIAudiences []string
	// MaxTokenExpiration caps the lifetime of requested tokens (0: no cap).
	MaxTokenExpiration time.Duration
}

// AddFlags adds the service account flags (upstream's names).
func (o *ServiceAccountOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringArrayVar(&o.Issuers, "service-account-issuer", o.Issuers,
		"Identifier of the service account token issuer, an https URL. The first one issues new tokens; tokens from any listed issuer are accepted. Without it, service account tokens are off.")
	fs.StringArrayVar(&o.KeyFiles, "service-account-key-file", o.KeyFiles,
		"PEM file with public (or private) RSA or ECDSA keys that verify service account tokens; may be repeated. Defaults to the signing key.")
	fs.StringVar(&o.SigningKeyFile, "service-account-signing-key-file", o.SigningKeyFile,
		"PEM file with the private key that signs service account tokens.")
	fs.StringSliceVar(&o.APIAudiences, "api-audiences", o.APIAudiences,
		"Audiences of the API. Tokens requested without audiences are issued for them, and service account tokens must name one of them. Defaults to the first --service-account-issuer.")
	fs.DurationVar(&o.MaxTokenExpiration, "service-account-max-token-expiration", o.MaxTokenExpiration,
		"Longest lifetime a requested service account token may have; longer requests are cut to it. 0 means no limit.")
}

// Enabled reports whether service account tokens are configured.
func (o *ServiceAccountOptions) Enabled() bool { return len(o.Issuers) > 0 }

// Audiences returns the API audiences, defaulted to the first issuer.
func (o *ServiceAccountOptions) Audiences() []string {
	if len(o.APIAudiences) > 0 || len(o.Issuers) == 0 {
		return o.APIAudiences
	}
	return o.Issuers[:1]
}

// VerifyKeyFiles returns the files whose keys verify tokens.
func (o *ServiceAccountOptions) VerifyKeyFiles() []string {
	if len(o.KeyFiles) > 0 {
		return o.KeyFiles
	}
	return []string{o.SigningKeyFile}
}

// Validate checks the options.
func (o *ServiceAccountOptions) Validate() []error {
	var errs []error
	if !o.Enabled() {
		if o.SigningKeyFile != "" || len(o.KeyFiles) > 0 {
			errs = append(errs, errors.New("--service-account-signing-key-file and --service-account-key-file need --service-account-issuer"))
		}
		return errs
	}
	if o.SigningKeyFile == "" {
		errs = append(errs, errors.New("--service-account-issuer needs --service-account-signing-key-file"))
	}
	for _, issuer := range o.Issuers {
		if issuer == "" {
			errs = append(errs, errors.New("--service-account-issuer must not be empty"))
			continue
		}
		if strings.Contains(issuer, ":") {
			u, err := url.Parse(issuer)
			if err != nil || u.Scheme != "https" || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
				errs = append(errs, fmt.Errorf("--service-account-issuer %q: a URL issuer must be https with a host and no query or fragment", issuer))
			}
		}
	}
	if o.MaxTokenExpiration < 0 {
		errs = append(errs, fmt.Errorf("--service-account-max-token-expiration must not be negative, got %s", o.MaxTokenExpiration))
	}
	if o.MaxTokenExpiration > 0 && o.MaxTokenExpiration < 10*time.Minute {
		errs = append(errs, fmt.Errorf("--service-account-max-token-expiration must be at least 10m, got %s", o.MaxTokenExpiration))
	}
	return errs
}

// ServiceAccountTokens is what the options build: the issuer of new tokens,
// the authenticator of presented ones, and the OIDC discovery handlers.
type ServiceAccountTokens struct {
	Issuer        *satoken.Issuer
	Authenticator *satoken.Authenticator
	Discovery     map[string]http.Handler
}

// New loads the keys and builds the token machinery; nil when service
// account tokens are off. getter finds the objects tokens are bound to; it
// is only called when tokens are on.
func (o *ServiceAccountOptions) New(getter func() satoken.Getter) (*ServiceAccountTokens, error) {
	if !o.Enabled() {
		return nil, nil
	}
	signingKey, err := satoken.LoadSigningKey(o.SigningKeyFile)
	if err != nil {
		return nil, fmt.Errorf("--service-account-signing-key-file: %w", err)
	}
	keys, err := satoken.LoadPublicKeys(o.VerifyKeyFiles()...)
	if err != nil {
		return nil, fmt.Errorf("--service-account-key-file: %w", err)
	}
	issuer, err := satoken.NewIssuer(o.Issuers[0], signingKey)
	if err != nil {
		return nil, err
	}
	discovery, err := satoken.DiscoveryHandlers(o.Issuers[0], keys)
	if err != nil {
		return nil, err
	}
	return &ServiceAccountTokens{
		Issuer:        issuer,
		Authenticator: satoken.NewAuthenticator(o.Issuers, keys, o.Audiences(), getter()),
		Discovery:     discovery,
	}, nil
}
