package options

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/pflag"
	apiserverapi "k8s.io/apiserver/pkg/apis/apiserver"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	authenticationcel "k8s.io/apiserver/pkg/authentication/cel"
	"k8s.io/apiserver/pkg/authentication/group"
	"k8s.io/apiserver/pkg/authentication/request/anonymous"
	"k8s.io/apiserver/pkg/authentication/request/bearertoken"
	"k8s.io/apiserver/pkg/authentication/request/headerrequest"
	"k8s.io/apiserver/pkg/authentication/request/union"
	"k8s.io/apiserver/pkg/authentication/request/x509"
	tokenunion "k8s.io/apiserver/pkg/authentication/token/union"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	genericoptions "k8s.io/apiserver/pkg/server/options"

	"github.com/gcp-project/gcp/pkg/controlplane/auth/authn"
	"github.com/gcp-project/gcp/pkg/controlplane/auth/authz"
	"github.com/gcp-project/gcp/pkg/controlplane/auth/certcache"
)

// AuthenticationOptions configures who the apiserver recognises: clients
// presenting a certificate signed by the client CA, and (optionally)
// anonymous requests to the public paths. Any other request gets 401.
type AuthenticationOptions struct {
	// ClientCAFile verifies client certificates; the CN is the user name and
	// the O entries are the groups.
	ClientCAFile string
	// Anonymous lets unauthenticated requests to the public paths through
	// as system:anonymous; anything else stays 401.
	Anonymous bool
	// ConfigFile is an AuthenticationConfiguration file: its jwt section
	// adds JWT authenticators (OIDC ID tokens and other JWTs of the
	// issuers it names), reloaded when the file changes; its anonymous
	// section, when present, says when anonymous requests are allowed
	// (enabled, and on which paths) instead of Anonymous.
	ConfigFile string
	// Config is an AuthenticationConfiguration given as a Go value, the
	// test server's and a library caller's way; it is not reloaded.
	// Mutually exclusive with ConfigFile.
	Config *apiserverapi.AuthenticationConfiguration
	// OIDC holds the legacy --oidc-* flags, one JWT authenticator;
	// mutually exclusive with ConfigFile and Config, as upstream.
	OIDC OIDCOptions
	// TokenWebhook asks a TokenReview service about tokens no other
	// authenticator recognised.
	TokenWebhook TokenWebhookOptions
	// ServiceAccounts configures service account tokens.
	ServiceAccounts ServiceAccountOptions
	// RequestHeader trusts a front proxy (the aggregator of another server)
	// that presents a certificate of its CA to assert users in headers.
	RequestHeader *genericoptions.RequestHeaderAuthenticationOptions
}

// NewAuthenticationOptions returns the defaults: anonymous health checks on.
func NewAuthenticationOptions() *AuthenticationOptions {
	return &AuthenticationOptions{
		Anonymous:    true,
		OIDC:         OIDCOptions{UsernameClaim: "sub", SigningAlgs: []string{"RS256"}},
		TokenWebhook: TokenWebhookOptions{Version: "v1beta1", CacheTTL: 2 * time.Minute},
		RequestHeader: &genericoptions.RequestHeaderAuthenticationOptions{
			UsernameHeaders:     []string{"X-Remote-User"},
			UIDHeaders:          []string{"X-Remote-Uid"},
			GroupHeaders:        []string{"X-Remote-Group"},
			ExtraHeaderPrefixes: []string{"X-Remote-Extra-"},
		},
	}
}

// AddFlags adds the authentication flags.
func (o *AuthenticationOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.ClientCAFile, "client-ca-file", o.ClientCAFile,
		"If set, any request presenting a client certificate signed by one of the authorities in the client-ca-file is authenticated with an identity corresponding to the CommonName of the client certificate, and its Organizations as groups.")
	fs.BoolVar(&o.Anonymous, "anonymous-auth", o.Anonymous,
		"Enables anonymous requests to "+fmt.Sprint(authz.PublicPaths())+" (as system:anonymous). Every other unauthenticated request is rejected with 401.")
	fs.StringVar(&o.ConfigFile, "authentication-config", o.ConfigFile,
		"File with an AuthenticationConfiguration (apiserver.config.k8s.io/v1 or v1beta1). Its jwt section logs users in with tokens of the issuers it names (OIDC ID tokens), and is reloaded when the file changes; its anonymous section (enabled and the paths anonymous requests may reach) replaces --anonymous-auth. Mutually exclusive with the --oidc-* flags.")
	o.OIDC.AddFlags(fs)
	o.TokenWebhook.AddFlags(fs)
	o.ServiceAccounts.AddFlags(fs)
	o.RequestHeader.AddFlags(fs)
}

// Validate checks the options.
func (o *AuthenticationOptions) Validate() []error {
	if o.ClientCAFile == "" {
		return []error{fmt.Errorf("--client-ca-file is required: client certificates are how users authenticate")}
	}
	errs := append(o.ServiceAccounts.Validate(), o.RequestHeader.Validate()...)
	errs = append(errs, o.OIDC.Validate()...)
	errs = append(errs, o.TokenWebhook.Validate()...)
	switch {
	case o.ConfigFile != "" && o.Config != nil:
		errs = append(errs, errors.New("--authentication-config and an AuthenticationConfiguration value are mutually exclusive"))
	case (o.ConfigFile != "" || o.Config != nil) && o.OIDC.enabled():
		errs = append(errs, errors.New("--authentication-config and the --oidc-* flags are mutually exclusive: write the issuer as a jwt authenticator in the file"))
	}
	if len(errs) == 0 {
		if _, _, err := o.configuration(); err != nil {
			// CEL compilation errors span lines; a failed start is one.
			errs = append(errs, authz.OneLine(err))
		}
	}
	return errs
}

// configuration returns the AuthenticationConfiguration in effect, from
// ConfigFile (with the file's content, for reloads), Config or the
// --oidc-* flags, validated; nil if none is given.
func (o *AuthenticationOptions) configuration() (*apiserverapi.AuthenticationConfiguration, []byte, error) {
	switch {
	case o.ConfigFile != "":
		return loadAuthenticationConfig(o.ConfigFile, o.ServiceAccounts.Issuers)
	case o.Config != nil:
		if err := authn.ValidateConfig(authenticationcel.NewDefaultCompiler(), o.Config, o.ServiceAccounts.Issuers); err != nil {
			return nil, nil, fmt.Errorf("authentication configuration: %w", err)
		}
		return o.Config, nil, nil
	case o.OIDC.enabled():
		cfg, err := o.OIDC.configuration()
		if err != nil {
			return nil, nil, err
		}
		if err := authn.ValidateConfig(authenticationcel.NewDefaultCompiler(), cfg, o.ServiceAccounts.Issuers); err != nil {
			return nil, nil, fmt.Errorf("--oidc-*: %w", err)
		}
		return cfg, nil, nil
	}
	return nil, nil, nil
}

// ApplyTo sets gc's authenticator and makes its serving TLS config ask for
// client certificates signed by the client CA. tokens, if not nil,
// authenticates bearer tokens (service account tokens); JWT authenticators
// and the token webhook follow it, in that order, as in kube-apiserver.
// JWT authenticators start in a post-start hook (and, from a file, are
// reloaded while the server runs), so nothing is left running by a server
// that fails to start. extra (a composition's own authenticators) come
// after the server's own, before anonymous.
func (o *AuthenticationOptions) ApplyTo(gc *genericapiserver.Config, tokens authenticator.Token, extra ...authenticator.Request) error {
	info, serving := &gc.Authentication, gc.SecureServing
	info.APIAudiences = o.ServiceAccounts.Audiences()
	cfg, data, err := o.configuration()
	if err != nil {
		return err
	}
	var tokenAuthenticators []authenticator.Token
	if tokens != nil {
		tokenAuthenticators = append(tokenAuthenticators, tokens)
	}
	if cfg != nil && (len(cfg.JWT) > 0 || o.ConfigFile != "") {
		jwt, err := authn.NewJWT(cfg.JWT, authn.JWTOptions{
			APIServerID:          gc.APIServerID,
			DisallowedIssuers:    o.ServiceAccounts.Issuers,
			SupportedSigningAlgs: o.OIDC.signingAlgs(),
			APIAudiences:         info.APIAudiences,
		})
		if err != nil {
			return fmt.Errorf("authentication configuration: %w", err)
		}
		tokenAuthenticators = append(tokenAuthenticators, jwt)
		file := o.ConfigFile
		gc.AddPostStartHookOrDie("start-jwt-authenticators", func(hookCtx genericapiserver.PostStartHookContext) error {
			if err := jwt.Run(hookCtx); err != nil {
				return err
			}
			if file != "" {
				go jwt.WatchConfigFile(hookCtx, file, data)
			}
			return nil
		})
	}
	if o.TokenWebhook.ConfigFile != "" {
		w, err := authn.NewTokenWebhook(o.TokenWebhook.ConfigFile, o.TokenWebhook.Version, o.TokenWebhook.CacheTTL, info.APIAudiences)
		if err != nil {
			return err
		}
		tokenAuthenticators = append(tokenAuthenticators, w)
	}
	ca, err := dynamiccertificates.NewDynamicCAContentFromFile("client-ca-bundle", o.ClientCAFile)
	if err != nil {
		return fmt.Errorf("--client-ca-file: %w", err)
	}
	if err := ca.RunOnce(context.Background()); err != nil {
		return fmt.Errorf("--client-ca-file: %w", err)
	}
	var authenticators []authenticator.Request
	clientCAs := dynamiccertificates.CAContentProvider(ca)
	rh, err := o.RequestHeader.ToAuthenticationRequestHeaderConfig()
	if err != nil {
		return fmt.Errorf("--requestheader-client-ca-file: %w", err)
	}
	if rh != nil {
		if runner, ok := rh.CAContentProvider.(dynamiccertificates.ControllerRunner); ok {
			if err := runner.RunOnce(context.Background()); err != nil {
				return fmt.Errorf("--requestheader-client-ca-file: %w", err)
			}
		}
		// The front proxy's certificate must verify against the
		// requestheader CA and carry an allowed name; only then are the
		// identity headers believed. It is tried before plain certificates.
		authenticators = append(authenticators, headerrequest.NewDynamicVerifyOptionsSecure(rh.CAContentProvider.VerifyOptions,
			rh.AllowedClientNames, rh.UsernameHeaders, rh.UIDHeaders, rh.GroupHeaders, rh.ExtraHeaderPrefixes))
		info.RequestHeaderConfig = rh
		clientCAs = dynamiccertificates.NewUnionCAContentProvider(ca, rh.CAContentProvider)
	}
	if serving != nil {
		serving.ClientCA = clientCAs
	}
	// Each chain is verified once and remembered for a while, not verified
	// on every request (pkg/controlplane/auth/certcache says why).
	authenticators = append(authenticators, certcache.New(x509.NewDynamic(ca.VerifyOptions, x509.CommonNameUserConversion),
		ca.VerifyOptions, certcache.DefaultSize, certcache.DefaultTTL))
	if len(tokenAuthenticators) > 0 {
		authenticators = append(authenticators, bearertoken.New(tokenunion.New(tokenAuthenticators...)))
	}
	authenticators = append(authenticators, extra...)
	var result authenticator.Request = group.NewAuthenticatedGroupAdder(union.New(authenticators...))
	anonymousOn := o.Anonymous
	var conditions []apiserverapi.AnonymousAuthCondition
	for _, p := range authz.PublicPaths() {
		conditions = append(conditions, apiserverapi.AnonymousAuthCondition{Path: p})
	}
	if cfg != nil {
		if cfg.Anonymous != nil {
			// As upstream: no conditions means every path.
			anonymousOn, conditions = cfg.Anonymous.Enabled, cfg.Anonymous.Conditions
		}
	}
	if anonymousOn {
		// Anonymous comes last and only answers for its paths, so a
		// request elsewhere without credentials is unauthenticated: 401.
		result = union.New(result, anonymous.NewAuthenticator(conditions))
	}
	info.Authenticator = result
	return nil
}
