package authz

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	apiserverapi "k8s.io/apiserver/pkg/apis/apiserver"
	"k8s.io/apiserver/pkg/apis/apiserver/load"
	apiservervalidation "k8s.io/apiserver/pkg/apis/apiserver/validation"
	authorizationcel "k8s.io/apiserver/pkg/authorization/cel"
	webhookutil "k8s.io/apiserver/pkg/util/webhook"
	"k8s.io/client-go/rest"

	"github.com/gcp-project/gcp/pkg/controlplane/auth/configfile"
)

// The authorizer types of an AuthorizationConfiguration, as
// kube-apiserver names them (its --authorization-mode values).
const (
	TypeRBAC        = "RBAC"
	TypeWebhook     = string(apiserverapi.TypeWebhook)
	TypeAlwaysAllow = "AlwaysAllow"
	TypeAlwaysDeny  = "AlwaysDeny"
	TypeNode        = "Node"
	TypeABAC        = "ABAC"
)

// Types lists the authorizer types gcp runs, in kube-apiserver's order.
func Types() []string { return []string{TypeAlwaysAllow, TypeAlwaysDeny, TypeRBAC, TypeWebhook} }

// unavailable says why gcp refuses the types kube-apiserver has and gcp
// cannot have.
var unavailable = map[string]string{
	TypeNode: "gcp has no nodes, so no Node authorizer",
	TypeABAC: "gcp has no ABAC authorizer; use RBAC or a Webhook",
}

// Unavailable reports why an authorizer type kube-apiserver accepts is not
// available in gcp ("" when it is, or is unknown to both).
func Unavailable(typ string) string { return unavailable[typ] }

// NameForType is the name kube-apiserver requires for an authorizer of a
// type other than Webhook, and gives one made from --authorization-mode:
// the type in lower case.
func NameForType(typ string) string { return strings.ToLower(typ) }

// DefaultWebhookName is the name of the webhook --authorization-mode=Webhook
// makes from the --authorization-webhook-* flags, as kube-apiserver's.
const DefaultWebhookName = "default"

// LoadFile reads and validates an AuthorizationConfiguration file; it
// returns the configuration and the bytes read (for reloading). Errors
// name the field at fault and fit on one line.
func LoadFile(path string) (*apiserverapi.AuthorizationConfiguration, []byte, error) {
	data, err := configfile.Read(path)
	if err != nil {
		return nil, nil, err
	}
	cfg, err := LoadData(data)
	return cfg, data, err
}

// LoadData decodes (strictly: an unknown field is an error) and validates
// an AuthorizationConfiguration.
func LoadData(data []byte) (*apiserverapi.AuthorizationConfiguration, error) {
	if len(strings.TrimSpace(string(data))) == 0 {
		return nil, fmt.Errorf("the file is empty")
	}
	cfg, err := load.LoadFromData(data)
	if err != nil {
		return nil, OneLine(err)
	}
	if err := Validate(cfg); err != nil {
		return nil, err
	}
	return cfg, nil
}

// Validate checks an AuthorizationConfiguration as kube-apiserver does
// (k8s.io/apiserver's validation, plus its rule that an authorizer other
// than a Webhook is named after its type), refuses the types gcp cannot
// run, compiles each webhook's matchConditions, and checks that each
// webhook's kubeconfig loads.
func Validate(cfg *apiserverapi.AuthorizationConfiguration) error {
	if cfg == nil {
		return fmt.Errorf("no AuthorizationConfiguration")
	}
	known := sets.New(append(Types(), TypeNode, TypeABAC)...)
	errs := apiservervalidation.ValidateAuthorizationConfiguration(authorizationcel.NewDefaultCompiler(), nil, cfg, known, sets.New(TypeWebhook))
	for i, a := range cfg.Authorizers {
		p := field.NewPath("authorizers").Index(i)
		if why := unavailable[string(a.Type)]; why != "" {
			errs = append(errs, field.Invalid(p.Child("type"), a.Type, why))
			continue
		}
		if a.Type == apiserverapi.TypeWebhook || !known.Has(string(a.Type)) {
			continue
		}
		if want := NameForType(string(a.Type)); a.Name != "" && a.Name != want {
			errs = append(errs, field.Invalid(p.Child("name"), a.Name, fmt.Sprintf("an authorizer of type %s must be named %s", a.Type, want)))
		}
	}
	if len(errs) > 0 {
		return OneLine(errs.ToAggregate())
	}
	// Only now: validation has checked each kubeconfig file exists.
	return CheckWebhooks(cfg)
}

// CheckWebhooks checks that the connection of each webhook of cfg loads
// (its kubeconfig, or the in-cluster configuration). Validate calls it;
// a configuration made from --authorization-mode, which kube-apiserver
// does not validate as a file (a relative kubeconfig path and a zero TTL
// are fine there), is checked with this alone.
func CheckWebhooks(cfg *apiserverapi.AuthorizationConfiguration) error {
	for i, a := range cfg.Authorizers {
		if a.Webhook == nil {
			continue
		}
		if _, err := webhookClientConfig(a.Webhook); err != nil {
			return OneLine(field.Invalid(field.NewPath("authorizers").Index(i).Child("webhook", "connectionInfo"), connectionInfoString(a.Webhook.ConnectionInfo), err.Error()))
		}
	}
	return nil
}

// nonWebhookTypes returns the types of cfg's authorizers other than
// Webhook: a reloaded file must keep them, as kube-apiserver requires.
func nonWebhookTypes(cfg *apiserverapi.AuthorizationConfiguration) sets.Set[string] {
	types := sets.New[string]()
	for _, a := range cfg.Authorizers {
		if a.Type != apiserverapi.TypeWebhook {
			types.Insert(string(a.Type))
		}
	}
	return types
}

// HasType reports whether cfg configures an authorizer of type typ.
func HasType(cfg *apiserverapi.AuthorizationConfiguration, typ string) bool {
	return cfg != nil && slices.ContainsFunc(cfg.Authorizers, func(a apiserverapi.AuthorizerConfiguration) bool { return string(a.Type) == typ })
}

// webhookClientConfig is the client configuration a webhook calls with:
// its kubeconfig, or the in-cluster service account, timed out after the
// webhook's timeout and not rate limited.
func webhookClientConfig(w *apiserverapi.WebhookConfiguration) (*rest.Config, error) {
	var cfg *rest.Config
	var err error
	switch w.ConnectionInfo.Type {
	case apiserverapi.AuthorizationWebhookConnectionInfoTypeKubeConfigFile:
		if w.ConnectionInfo.KubeConfigFile == nil {
			return nil, fmt.Errorf("no kubeConfigFile")
		}
		cfg, err = webhookutil.LoadKubeconfig(*w.ConnectionInfo.KubeConfigFile, nil)
	case apiserverapi.AuthorizationWebhookConnectionInfoTypeInCluster:
		cfg, err = rest.InClusterConfig()
		if cfg != nil {
			cfg.QPS = -1
		}
	default:
		return nil, fmt.Errorf("unknown connection type %q", w.ConnectionInfo.Type)
	}
	if err != nil {
		return nil, err
	}
	if w.Timeout.Duration != 0 {
		cfg.Timeout = w.Timeout.Duration
	}
	return cfg, nil
}

func connectionInfoString(c apiserverapi.WebhookConnectionInfo) string {
	if c.KubeConfigFile != nil {
		return c.Type + " " + *c.KubeConfigFile
	}
	return c.Type
}

// OneLine returns err with its message on one line: CEL compilation
// errors and aggregated errors span several, and a start that fails says
// so in one line.
func OneLine(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if !strings.ContainsAny(msg, "\r\n") {
		return err
	}
	return oneLineError{err: err, msg: strings.Join(strings.Fields(msg), " ")}
}

type oneLineError struct {
	err error
	msg string
}

func (e oneLineError) Error() string { return e.msg }
func (e oneLineError) Unwrap() error { return e.err }
