package options

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	apiserverapi "k8s.io/apiserver/pkg/apis/apiserver"
	genericoptions "k8s.io/apiserver/pkg/server/options"

	"github.com/gcp-project/gcp/pkg/controlplane/auth/authz"
)

// The authorization flags, as kube-apiserver names them.
const (
	authorizationModeFlag                   = "authorization-mode"
	authorizationConfigFlag                 = "authorization-config"
	authorizationWebhookConfigFileFlag      = "authorization-webhook-config-file"
	authorizationWebhookVersionFlag         = "authorization-webhook-version"
	authorizationWebhookAuthorizedTTLFlag   = "authorization-webhook-cache-authorized-ttl"
	authorizationWebhookUnauthorizedTTLFlag = "authorization-webhook-cache-unauthorized-ttl"
)

// AuthorizationOptions configure the authorizer chain. Without any of
// them the chain is system:masters, then the composition's own
// authorizers (RBAC, in the generic stack). With --authorization-config (or
// Config) or --authorization-mode, it is system:masters, the composition's
// authorizers other than RBAC, then the configured ones in order, as
// kube-apiserver runs them (pkg/controlplane/auth/authz).
type AuthorizationOptions struct {
	// Modes is --authorization-mode: an ordered list of RBAC, Webhook,
	// AlwaysAllow and AlwaysDeny.
	Modes []string
	// WebhookConfigFile, WebhookVersion and the TTLs configure the
	// webhook of --authorization-mode=Webhook, named "default".
	WebhookConfigFile           string
	WebhookVersion              string
	WebhookCacheAuthorizedTTL   time.Duration
	WebhookCacheUnauthorizedTTL time.Duration
	// WebhookRetryBackoff is how a webhook call is retried on errors worth
	// retrying; kube-apiserver's default, and no flag, as there.
	WebhookRetryBackoff *wait.Backoff
	// ConfigFile is --authorization-config: an AuthorizationConfiguration
	// (apiserver.config.k8s.io/v1) file, reloaded while the server runs.
	ConfigFile string
	// Config is an AuthorizationConfiguration given as a Go value, by a
	// library user or a test, instead of a file; it is not reloaded.
	Config *apiserverapi.AuthorizationConfiguration
	// Authorizers are Go authorizers of a library user's (or a test's)
	// own; they join the chain after system:masters, with the
	// composition's, before any configured one.
	Authorizers []authz.Named

	// legacyFlagsSet reports whether the flags --authorization-config
	// excludes were given.
	legacyFlagsSet func() bool
}

// NewAuthorizationOptions returns kube-apiserver's defaults, except that no
// mode means gcp's own chain rather than AlwaysAllow.
func NewAuthorizationOptions() *AuthorizationOptions {
	return &AuthorizationOptions{
		WebhookVersion:              "v1beta1",
		WebhookCacheAuthorizedTTL:   5 * time.Minute,
		WebhookCacheUnauthorizedTTL: 30 * time.Second,
		WebhookRetryBackoff:         genericoptions.DefaultAuthWebhookRetryBackoff(),
	}
}

// AddFlags adds the authorization flags.
func (o *AuthorizationOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringSliceVar(&o.Modes, authorizationModeFlag, o.Modes,
		"Ordered list of plug-ins to do authorization on secure port, after system:masters (always allowed). Without it and --authorization-config: RBAC, when the control plane has it. "+
			"Comma-delimited list of: "+strings.Join(authz.Types(), ",")+" (Node and ABAC are not available: there are no nodes and no ABAC policy).")
	fs.StringVar(&o.WebhookConfigFile, authorizationWebhookConfigFileFlag, o.WebhookConfigFile,
		"File with webhook configuration in kubeconfig format, used with --authorization-mode=Webhook. "+
			"The API server will query the remote service to determine access on the API server's secure port.")
	fs.StringVar(&o.WebhookVersion, authorizationWebhookVersionFlag, o.WebhookVersion,
		"The API version of the authorization.k8s.io SubjectAccessReview to send to and expect from the webhook.")
	fs.DurationVar(&o.WebhookCacheAuthorizedTTL, authorizationWebhookAuthorizedTTLFlag, o.WebhookCacheAuthorizedTTL,
		"The duration to cache 'authorized' responses from the webhook authorizer.")
	fs.DurationVar(&o.WebhookCacheUnauthorizedTTL, authorizationWebhookUnauthorizedTTLFlag, o.WebhookCacheUnauthorizedTTL,
		"The duration to cache 'unauthorized' responses from the webhook authorizer.")
	fs.StringVar(&o.ConfigFile, authorizationConfigFlag, o.ConfigFile,
		"File with Authorization Configuration (apiserver.config.k8s.io/v1 AuthorizationConfiguration) to configure the authorizer chain; reloaded when it changes. "+
			"This flag is mutually exclusive with the other --authorization-mode and --authorization-webhook-* flags.")
	o.legacyFlagsSet = func() bool {
		return fs.Changed(authorizationModeFlag) || fs.Changed(authorizationWebhookConfigFileFlag) || fs.Changed(authorizationWebhookVersionFlag) ||
			fs.Changed(authorizationWebhookAuthorizedTTLFlag) || fs.Changed(authorizationWebhookUnauthorizedTTLFlag)
	}
}

// areLegacyFlagsSet reports whether a mode or webhook flag was given (or,
// for options built in Go, a mode or webhook file set).
func (o *AuthorizationOptions) areLegacyFlagsSet() bool {
	return len(o.Modes) > 0 || o.WebhookConfigFile != "" || (o.legacyFlagsSet != nil && o.legacyFlagsSet())
}

// Validate checks the options, loading and validating the configuration
// they describe (each webhook's kubeconfig included), so that a bad one
// stops the start before anything is served or written.
func (o *AuthorizationOptions) Validate() []error {
	if o == nil {
		return nil
	}
	if _, _, err := o.Configuration(); err != nil {
		return []error{err}
	}
	return nil
}

// Source names where the configuration comes from, for messages:
// "--authorization-config <file>", "--authorization-mode", or "" for gcp's
// own chain.
func (o *AuthorizationOptions) Source() string {
	switch {
	case o == nil:
		return ""
	case o.ConfigFile != "":
		return "--" + authorizationConfigFlag + " " + o.ConfigFile
	case o.Config != nil:
		return "the AuthorizationConfiguration of the options"
	case o.areLegacyFlagsSet():
		return "--" + authorizationModeFlag
	}
	return ""
}

// Configuration returns the AuthorizationConfiguration the options
// describe, validated, and the file's content when it comes from
// --authorization-config (to reload from); nil means gcp's own chain.
// Errors are one line naming the flag or file and the field.
func (o *AuthorizationOptions) Configuration() (*apiserverapi.AuthorizationConfiguration, []byte, error) {
	if o == nil {
		return nil, nil, nil
	}
	switch {
	case o.ConfigFile != "":
		if o.areLegacyFlagsSet() {
			return nil, nil, fmt.Errorf("--%s can not be specified when --%s or --authorization-webhook-* flags are defined", authorizationConfigFlag, authorizationModeFlag)
		}
		if o.Config != nil {
			return nil, nil, fmt.Errorf("--%s and a Go AuthorizationConfiguration cannot both be given", authorizationConfigFlag)
		}
		cfg, data, err := authz.LoadFile(o.ConfigFile)
		if err != nil {
			return nil, nil, fmt.Errorf("--%s %s: %w", authorizationConfigFlag, o.ConfigFile, err)
		}
		return cfg, data, nil
	case o.Config != nil:
		if o.areLegacyFlagsSet() {
			return nil, nil, fmt.Errorf("a Go AuthorizationConfiguration can not be given with --%s or --authorization-webhook-* flags", authorizationModeFlag)
		}
		if err := authz.Validate(o.Config); err != nil {
			return nil, nil, fmt.Errorf("AuthorizationConfiguration: %w", err)
		}
		return o.Config, nil, nil
	case o.areLegacyFlagsSet():
		cfg, err := o.fromModes()
		if err != nil {
			return nil, nil, err
		}
		if err := authz.CheckWebhooks(cfg); err != nil {
			return nil, nil, fmt.Errorf("--%s: %w", authorizationWebhookConfigFileFlag, err)
		}
		return cfg, nil, nil
	}
	return nil, nil, nil
}

// fromModes turns --authorization-mode and the webhook flags into an
// AuthorizationConfiguration, as kube-apiserver does.
func (o *AuthorizationOptions) fromModes() (*apiserverapi.AuthorizationConfiguration, error) {
	if len(o.Modes) == 0 {
		return nil, fmt.Errorf("--%s is required with --authorization-webhook-* flags", authorizationModeFlag)
	}
	cfg := &apiserverapi.AuthorizationConfiguration{}
	for i, mode := range o.Modes {
		if why := authz.Unavailable(mode); why != "" {
			return nil, fmt.Errorf("--%s %s: %s", authorizationModeFlag, mode, why)
		}
		if !slices.Contains(authz.Types(), mode) {
			return nil, fmt.Errorf("--%s %q is not a valid mode (valid: %s)", authorizationModeFlag, mode, strings.Join(authz.Types(), ","))
		}
		if slices.Contains(o.Modes[:i], mode) {
			return nil, fmt.Errorf("--%s %q has mode specified more than once", authorizationModeFlag, strings.Join(o.Modes, ","))
		}
		if mode != authz.TypeWebhook {
			cfg.Authorizers = append(cfg.Authorizers, apiserverapi.AuthorizerConfiguration{Type: apiserverapi.AuthorizerType(mode), Name: authz.NameForType(mode)})
			continue
		}
		if o.WebhookConfigFile == "" {
			return nil, fmt.Errorf("--%s Webhook needs --%s", authorizationModeFlag, authorizationWebhookConfigFileFlag)
		}
		file := o.WebhookConfigFile
		cfg.Authorizers = append(cfg.Authorizers, apiserverapi.AuthorizerConfiguration{
			Type: apiserverapi.TypeWebhook,
			Name: authz.DefaultWebhookName,
			Webhook: &apiserverapi.WebhookConfiguration{
				AuthorizedTTL:             metav1.Duration{Duration: o.WebhookCacheAuthorizedTTL},
				CacheAuthorizedRequests:   o.WebhookCacheAuthorizedTTL != 0,
				UnauthorizedTTL:           metav1.Duration{Duration: o.WebhookCacheUnauthorizedTTL},
				CacheUnauthorizedRequests: o.WebhookCacheUnauthorizedTTL != 0,
				// What kube-apiserver sets for the legacy flags.
				Timeout:                    metav1.Duration{Duration: 30 * time.Second},
				FailurePolicy:              apiserverapi.FailurePolicyNoOpinion,
				SubjectAccessReviewVersion: o.WebhookVersion,
				ConnectionInfo: apiserverapi.WebhookConnectionInfo{
					Type:           apiserverapi.AuthorizationWebhookConnectionInfoTypeKubeConfigFile,
					KubeConfigFile: &file,
				},
			},
		})
	}
	if o.WebhookConfigFile != "" && !slices.Contains(o.Modes, authz.TypeWebhook) {
		return nil, fmt.Errorf("cannot specify --%s without mode Webhook", authorizationWebhookConfigFileFlag)
	}
	return cfg, nil
}
