package options

import (
	"context"
	"fmt"

	"github.com/spf13/pflag"
	apiserverapi "k8s.io/apiserver/pkg/apis/apiserver"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/group"
	"k8s.io/apiserver/pkg/authentication/request/anonymous"
	"k8s.io/apiserver/pkg/authentication/request/bearertoken"
	"k8s.io/apiserver/pkg/authentication/request/headerrequest"
	"k8s.io/apiserver/pkg/authentication/request/union"
	"k8s.io/apiserver/pkg/authentication/request/x509"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	genericoptions "k8s.io/apiserver/pkg/server/options"

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
	// ConfigFile is an AuthenticationConfiguration file; its anonymous
	// section, when present, says when anonymous requests are allowed
	// (enabled, and on which paths) instead of Anonymous.
	ConfigFile string
	// ServiceAccounts configures service account tokens.
	ServiceAccounts ServiceAccountOptions
	// RequestHeader trusts a front proxy (the aggregator of another server)
	// that presents a certificate of its CA to assert users in headers.
	RequestHeader *genericoptions.RequestHeaderAuthenticationOptions
}

// NewAuthenticationOptions returns the defaults: anonymous health checks on.
func NewAuthenticationOptions() *AuthenticationOptions {
	return &AuthenticationOptions{
		Anonymous: true,
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
		"File with an AuthenticationConfiguration (apiserver.config.k8s.io/v1). Its anonymous section (enabled and the paths anonymous requests may reach) replaces --anonymous-auth; jwt authenticators are not supported yet.")
	o.ServiceAccounts.AddFlags(fs)
	o.RequestHeader.AddFlags(fs)
}

// Validate checks the options.
func (o *AuthenticationOptions) Validate() []error {
	if o.ClientCAFile == "" {
		return []error{fmt.Errorf("--client-ca-file is required: client certificates are how users authenticate")}
	}
	errs := append(o.ServiceAccounts.Validate(), o.RequestHeader.Validate()...)
	if o.ConfigFile != "" {
		if _, err := loadAuthenticationConfig(o.ConfigFile); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// ApplyTo sets the authenticator and makes the serving TLS config ask for
// client certificates signed by the client CA. tokens, if not nil,
// authenticates bearer tokens (service account tokens).
func (o *AuthenticationOptions) ApplyTo(authn *genericapiserver.AuthenticationInfo, serving *genericapiserver.SecureServingInfo, tokens authenticator.Token) error {
	authn.APIAudiences = o.ServiceAccounts.Audiences()
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
		authn.RequestHeaderConfig = rh
		clientCAs = dynamiccertificates.NewUnionCAContentProvider(ca, rh.CAContentProvider)
	}
	if serving != nil {
		serving.ClientCA = clientCAs
	}
	// Each chain is verified once and remembered for a while, not verified
	// on every request (pkg/controlplane/auth/certcache says why).
	authenticators = append(authenticators, certcache.New(x509.NewDynamic(ca.VerifyOptions, x509.CommonNameUserConversion),
		ca.VerifyOptions, certcache.DefaultSize, certcache.DefaultTTL))
	if tokens != nil {
		authenticators = append(authenticators, bearertoken.New(tokens))
	}
	var result authenticator.Request = group.NewAuthenticatedGroupAdder(union.New(authenticators...))
	anonymousOn := o.Anonymous
	var conditions []apiserverapi.AnonymousAuthCondition
	for _, p := range authz.PublicPaths() {
		conditions = append(conditions, apiserverapi.AnonymousAuthCondition{Path: p})
	}
	if o.ConfigFile != "" {
		cfg, err := loadAuthenticationConfig(o.ConfigFile)
		if err != nil {
			return err
		}
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
	authn.Authenticator = result
	return nil
}
