package options

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"
	apiserverapi "k8s.io/apiserver/pkg/apis/apiserver"
	"k8s.io/apiserver/plugin/pkg/authenticator/token/oidc"
	cliflag "k8s.io/component-base/cli/flag"
)

// OIDCOptions are kube-apiserver's legacy --oidc-* flags: one JWT
// authenticator for one issuer. They are turned into the
// AuthenticationConfiguration upstream turns them into; a configuration
// file says everything they say and more.
type OIDCOptions struct {
	IssuerURL      string
	ClientID       string
	CAFile         string
	UsernameClaim  string
	UsernamePrefix string
	GroupsClaim    string
	GroupsPrefix   string
	SigningAlgs    []string
	RequiredClaims map[string]string
}

// AddFlags adds the --oidc-* flags, with upstream's names and defaults.
func (o *OIDCOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.IssuerURL, "oidc-issuer-url", o.IssuerURL,
		"The URL of the OpenID issuer, only the https scheme is accepted. With --oidc-client-id, it logs users in with the issuer's ID tokens. Mutually exclusive with --authentication-config, whose jwt section says more.")
	fs.StringVar(&o.ClientID, "oidc-client-id", o.ClientID,
		"The client ID for the OpenID Connect client, the audience ID tokens must have; required with --oidc-issuer-url.")
	fs.StringVar(&o.CAFile, "oidc-ca-file", o.CAFile,
		"A PEM file of the authorities that signed the issuer's serving certificate; the host's root authorities if unset.")
	fs.StringVar(&o.UsernameClaim, "oidc-username-claim", o.UsernameClaim,
		"The ID token claim that is the user name. Claims other than email are prefixed with the issuer URL unless --oidc-username-prefix says otherwise.")
	fs.StringVar(&o.UsernamePrefix, "oidc-username-prefix", o.UsernamePrefix,
		"A prefix for user names; \"-\" turns prefixing off. Unset, claims other than email get the issuer URL and '#'.")
	fs.StringVar(&o.GroupsClaim, "oidc-groups-claim", o.GroupsClaim,
		"The ID token claim holding the user's groups, a string or an array of strings.")
	fs.StringVar(&o.GroupsPrefix, "oidc-groups-prefix", o.GroupsPrefix,
		"A prefix for group names.")
	fs.StringSliceVar(&o.SigningAlgs, "oidc-signing-algs", o.SigningAlgs,
		"The signing algorithms accepted, comma-separated (RS256, RS384, RS512, ES256, ES384, ES512, PS256, PS384, PS512).")
	fs.Var(cliflag.NewMapStringStringNoSplit(&o.RequiredClaims), "oidc-required-claim",
		"A key=value pair: the ID token must have claim key with value; repeat for several.")
}

func (o *OIDCOptions) enabled() bool { return o.IssuerURL != "" || o.ClientID != "" }

// Validate checks that the issuer and client go together.
func (o *OIDCOptions) Validate() []error {
	if !o.enabled() {
		return nil
	}
	var errs []error
	if o.IssuerURL == "" || o.ClientID == "" {
		errs = append(errs, errors.New("--oidc-issuer-url and --oidc-client-id must be given together"))
	}
	valid := oidc.AllValidSigningAlgorithms()
	for _, alg := range o.SigningAlgs {
		if !slices.Contains(valid, alg) {
			errs = append(errs, fmt.Errorf("--oidc-signing-algs: %q is not one of %s", alg, strings.Join(valid, ", ")))
		}
	}
	return errs
}

// signingAlgs returns the algorithms --oidc-signing-algs allows when the
// flags are in use; nil (every valid one) for a configuration file, as
// upstream.
func (o *OIDCOptions) signingAlgs() []string {
	if !o.enabled() {
		return nil
	}
	return o.SigningAlgs
}

// configuration is the AuthenticationConfiguration the flags stand for,
// as kube-apiserver derives it.
func (o *OIDCOptions) configuration() (*apiserverapi.AuthenticationConfiguration, error) {
	prefix := o.UsernamePrefix
	switch {
	case prefix == "-":
		prefix = ""
	case prefix == "" && o.UsernameClaim != "email":
		prefix = o.IssuerURL + "#"
	}
	jwt := apiserverapi.JWTAuthenticator{
		Issuer: apiserverapi.Issuer{URL: o.IssuerURL, Audiences: []string{o.ClientID}},
		ClaimMappings: apiserverapi.ClaimMappings{
			Username: apiserverapi.PrefixedClaimOrExpression{Claim: o.UsernameClaim, Prefix: &prefix},
		},
	}
	if o.GroupsClaim != "" {
		groupsPrefix := o.GroupsPrefix
		jwt.ClaimMappings.Groups = apiserverapi.PrefixedClaimOrExpression{Claim: o.GroupsClaim, Prefix: &groupsPrefix}
	}
	if o.CAFile != "" {
		ca, err := os.ReadFile(o.CAFile)
		if err != nil {
			return nil, fmt.Errorf("--oidc-ca-file: %w", err)
		}
		jwt.Issuer.CertificateAuthority = string(ca)
	}
	claims := make([]string, 0, len(o.RequiredClaims))
	for claim := range o.RequiredClaims {
		claims = append(claims, claim)
	}
	slices.Sort(claims)
	for _, claim := range claims {
		jwt.ClaimValidationRules = append(jwt.ClaimValidationRules, apiserverapi.ClaimValidationRule{Claim: claim, RequiredValue: o.RequiredClaims[claim]})
	}
	return &apiserverapi.AuthenticationConfiguration{JWT: []apiserverapi.JWTAuthenticator{jwt}}, nil
}

// TokenWebhookOptions are kube-apiserver's
// --authentication-token-webhook-* flags.
type TokenWebhookOptions struct {
	// ConfigFile is a kubeconfig naming the TokenReview service.
	ConfigFile string
	// Version is the authentication.k8s.io version sent: v1 or v1beta1.
	Version string
	// CacheTTL is how long an answer is remembered.
	CacheTTL time.Duration
}

// AddFlags adds the token webhook flags, with upstream's names and
// defaults.
func (o *TokenWebhookOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.ConfigFile, "authentication-token-webhook-config-file", o.ConfigFile,
		"A kubeconfig file naming a TokenReview service: bearer tokens no other authenticator recognises are sent to it, and it says who they belong to.")
	fs.StringVar(&o.Version, "authentication-token-webhook-version", o.Version,
		"The authentication.k8s.io TokenReview version sent to the webhook: v1 or v1beta1.")
	fs.DurationVar(&o.CacheTTL, "authentication-token-webhook-cache-ttl", o.CacheTTL,
		"How long the webhook's answers about a token are remembered.")
}

// Validate checks the version and that the kubeconfig exists.
func (o *TokenWebhookOptions) Validate() []error {
	if o.ConfigFile == "" {
		return nil
	}
	var errs []error
	if o.Version != "v1" && o.Version != "v1beta1" {
		errs = append(errs, fmt.Errorf("--authentication-token-webhook-version %q: must be v1 or v1beta1", o.Version))
	}
	if _, err := os.Stat(o.ConfigFile); err != nil {
		errs = append(errs, fmt.Errorf("--authentication-token-webhook-config-file: %w", err))
	}
	if o.CacheTTL < 0 {
		errs = append(errs, fmt.Errorf("--authentication-token-webhook-cache-ttl %v: must not be negative", o.CacheTTL))
	}
	return errs
}
