package controllers

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	genericapiserver "k8s.io/apiserver/pkg/server"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	cliflag "k8s.io/component-base/cli/flag"
	metricsfeatures "k8s.io/component-base/metrics/features"
	cmconfig "k8s.io/controller-manager/config"
	cmconfigv1alpha1 "k8s.io/controller-manager/config/v1alpha1"
	cmoptions "k8s.io/controller-manager/options"

	"github.com/gcp-project/gcp/pkg/controlplane/auth/tlspolicy"
)

// DefaultSecurePort is where `gcp controllers` serves /healthz and
// /metrics by default, kube-controller-manager's port.
const DefaultSecurePort = 10257

// LeaseName is the coordination.k8s.io Lease in kube-system the controller
// managers elect a leader with.
const LeaseName = "gcp-controllers"

// Options are the flags of `gcp controllers`: k8s.io/controller-manager's
// generic options (--controllers, leader election, client connection,
// debugging), secure serving with delegated authentication and
// authorization, the controllers' credentials, and each controller's own
// options from its descriptor.
type Options struct {
	Generic        *cmoptions.GenericControllerManagerConfigurationOptions
	SecureServing  *genericoptions.SecureServingOptionsWithLoopback
	Authentication *genericoptions.DelegatingAuthenticationOptions
	Authorization  *genericoptions.DelegatingAuthorizationOptions

	// Kubeconfig is how the controller manager reaches the API server.
	Kubeconfig string
	// UseServiceAccountCredentials gives each controller its own service
	// account (kube-system/<name>) and token, as upstream's flag does.
	UseServiceAccountCredentials bool
	// ClusterSigningCA, if set, is the CA every controller that signs
	// certificates signs with, in place of its own flags' (the CSR
	// signer's --cluster-signing-{cert,key}-file): `gcp start` gives its
	// cluster CA, the one the API server trusts for client certificates,
	// without knowing which controllers sign. Such a controller's options
	// implement ClusterSigningCAUser.
	ClusterSigningCA CAFiles

	// descriptors are the controllers the options choose from.
	descriptors []Descriptor
	// own are the controllers' own options by descriptor name.
	own map[string]ControllerOptions
}

// NewOptions returns the defaults for the given controllers.
func NewOptions(descriptors []Descriptor) *Options {
	var v1 cmconfigv1alpha1.GenericControllerManagerConfiguration
	cmconfigv1alpha1.RecommendedDefaultGenericControllerManagerConfiguration(&v1)
	generic := &cmconfig.GenericControllerManagerConfiguration{}
	// The conversion functions of these types never use their scope.
	_ = cmconfigv1alpha1.Convert_v1alpha1_GenericControllerManagerConfiguration_To_config_GenericControllerManagerConfiguration(&v1, generic, nil)
	generic.LeaderElection.ResourceName = LeaseName
	generic.LeaderElection.ResourceNamespace = "kube-system"
	generic.ClientConnection.ContentType = "application/vnd.kubernetes.protobuf"
	generic.ClientConnection.QPS, generic.ClientConnection.Burst = 50, 100

	o := &Options{
		Generic:                      cmoptions.NewGenericControllerManagerConfigurationOptions(generic),
		SecureServing:                genericoptions.NewSecureServingOptions().WithLoopback(),
		Authentication:               genericoptions.NewDelegatingAuthenticationOptions(),
		Authorization:                genericoptions.NewDelegatingAuthorizationOptions(),
		UseServiceAccountCredentials: true,
		descriptors:                  descriptors,
		own:                          map[string]ControllerOptions{},
	}
	for _, d := range descriptors {
		if d.NewOptions != nil {
			o.own[d.Name] = d.NewOptions()
		}
	}
	o.SecureServing.BindPort = DefaultSecurePort
	o.SecureServing.ServerCert.PairName = "gcp-controllers"
	tlspolicy.Apply(o.SecureServing.SecureServingOptions)
	// /debug/pprof only with --profiling (CIS 1.3.2).
	o.Generic.Debugging.EnableProfiling = false
	// Without --tls-cert-file the self-signed serving certificate stays in
	// memory, as kube-controller-manager's does, instead of being written
	// under the working directory.
	o.SecureServing.ServerCert.CertDirectory = ""
	// The health paths are always allowed by default already.
	o.Authorization.WithAlwaysAllowGroups("system:masters")
	return o
}

// CAFiles are the PEM files of a certificate authority: its certificate
// and its private key.
type CAFiles struct {
	CertFile, KeyFile string
}

// ControllerOptions returns the own options of the controller named name,
// nil if it has none or is not one of the options' controllers. A caller
// sets them before Config.
func (o *Options) ControllerOptions(name string) ControllerOptions { return o.own[name] }

// ownInOrder returns the controllers' own options in name order.
func (o *Options) ownInOrder() []ControllerOptions {
	names := make([]string, 0, len(o.own))
	for name := range o.own {
		names = append(names, name)
	}
	slices.Sort(names)
	out := make([]ControllerOptions, len(names))
	for i, name := range names {
		out[i] = o.own[name]
	}
	return out
}

// names returns every controller name, the disabled-by-default ones and
// the aliases, as k8s.io/controller-manager's options take them.
func (o *Options) names() (all, disabled []string, aliases map[string]string) {
	aliases = map[string]string{}
	for _, d := range o.descriptors {
		all = append(all, d.Name)
		if d.DisabledByDefault {
			disabled = append(disabled, d.Name)
		}
		for _, a := range d.Aliases {
			aliases[a] = d.Name
		}
	}
	slices.Sort(all)
	slices.Sort(disabled)
	return all, disabled, aliases
}

// nameClashes returns an error for each name --controllers could not
// resolve to one controller: a name or alias that two descriptors have
// (layering.Stack.Compose refuses them too, naming the layers; this holds
// for descriptors given to NewOptions directly).
func nameClashes(descriptors []Descriptor) []error {
	var errs []error
	owner := map[string]string{}
	claim := func(name, controller string) {
		if other, ok := owner[name]; ok {
			if other == controller {
				errs = append(errs, fmt.Errorf("two controllers are named %q", name))
			} else {
				errs = append(errs, fmt.Errorf("controller name or alias %q is both controller %q's and controller %q's", name, other, controller))
			}
			return
		}
		owner[name] = controller
	}
	for _, d := range descriptors {
		claim(d.Name, d.Name)
	}
	for _, d := range descriptors {
		for _, a := range d.Aliases {
			claim(a, d.Name)
		}
	}
	return errs
}

// AddFlags adds the flags in sections like kube-controller-manager's.
func (o *Options) AddFlags(fss *cliflag.NamedFlagSets) {
	all, disabled, aliases := o.names()
	o.Generic.AddFlags(fss, all, disabled, aliases)
	o.SecureServing.AddFlags(fss.FlagSet("secure serving"))
	o.Authentication.AddFlags(fss.FlagSet("authentication"))
	o.Authorization.AddFlags(fss.FlagSet("authorization"))
	fs := fss.FlagSet("misc")
	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig, "Path to a kubeconfig file with the API server's address and the controller manager's credentials.")
	fs.BoolVar(&o.UseServiceAccountCredentials, "use-service-account-credentials", o.UseServiceAccountCredentials,
		"If true, each controller uses the token of its own service account in kube-system (and the RBAC role of that account); otherwise all use the kubeconfig's credentials.")
	for _, own := range o.ownInOrder() {
		own.AddFlags(fss)
	}
}

// Config is the completed configuration Run takes.
type Config struct {
	Generic cmconfig.GenericControllerManagerConfiguration
	// Kubeconfig is the manager's own client configuration.
	Kubeconfig *rest.Config
	// UseServiceAccountCredentials: see Options.
	UseServiceAccountCredentials bool
	// ControllerOptions are the controllers' own options, completed, by
	// descriptor name; each controller finds its own in Context.Options.
	ControllerOptions map[string]ControllerOptions
	// SecureServing is nil when serving is off (--secure-port=0).
	SecureServing  *genericapiserver.SecureServingInfo
	Authentication genericapiserver.AuthenticationInfo
	Authorization  genericapiserver.AuthorizationInfo
	// Descriptors are every known controller; Generic.Controllers says
	// which run.
	Descriptors []Descriptor
	// OnAPIServerReached, if set, is called once the API server answers,
	// as /readyz's apiserver-reachable check says: the manager is then
	// ready, a leader-election standby too (`gcp controllers` says READY=1
	// to systemd then).
	OnAPIServerReached func()
	// OnInformersSynced, if set, is called once the controllers are
	// running and their informers have synced (after winning leader
	// election, when it is on); a test server waits for it.
	OnInformersSynced func()
}

// Validate returns every problem with the options; it reads no file.
func (o *Options) Validate() []error {
	all, disabled, aliases := o.names()
	errs := nameClashes(o.descriptors)
	errs = append(errs, o.Generic.Validate(all, disabled, aliases)...)
	errs = append(errs, o.SecureServing.Validate()...)
	for _, own := range o.ownInOrder() {
		errs = append(errs, own.Validate()...)
	}
	if o.Kubeconfig == "" {
		errs = append(errs, errors.New("--kubeconfig is required"))
	}
	// k8s.io/controller-manager's generic options bring these flags; leader
	// migration moves controllers between kube-controller-manager and
	// cloud-controller-manager, which gcp does not have.
	if m := o.Generic.LeaderMigration; m != nil && (m.Enabled || m.ControllerMigrationConfig != "") {
		errs = append(errs, errors.New("--enable-leader-migration and --leader-migration-config are not supported: gcp has no cloud controller manager to migrate controllers to"))
	}
	return errs
}

// Config validates the options and builds the configuration.
func (o *Options) Config() (*Config, error) {
	if o.ClusterSigningCA != (CAFiles{}) {
		for _, own := range o.ownInOrder() {
			if signer, ok := own.(ClusterSigningCAUser); ok {
				signer.UseClusterSigningCA(o.ClusterSigningCA)
			}
		}
	}
	if errs := o.Validate(); len(errs) > 0 {
		return nil, utilerrors.NewAggregate(errs)
	}
	// Histograms made from here on (the serving's and the controllers' work
	// queues') get native buckets beside the classic ones when
	// NativeHistograms is on, as kube-controller-manager's do. In `gcp
	// start` the API server's options apply the same gates again once its
	// flags are final.
	metricsfeatures.ApplyFeatureGates(utilfeature.DefaultFeatureGate)
	all, disabled, aliases := o.names()
	c := &Config{UseServiceAccountCredentials: o.UseServiceAccountCredentials, ControllerOptions: map[string]ControllerOptions{}}
	c.Descriptors = o.descriptors
	for _, name := range slices.Sorted(maps.Keys(o.own)) {
		own := o.own[name]
		if completer, ok := own.(OptionsCompleter); ok {
			if err := completer.Complete(); err != nil {
				return nil, err
			}
		}
		c.ControllerOptions[name] = own
	}
	if err := o.Generic.ApplyTo(&c.Generic, all, disabled, aliases); err != nil {
		return nil, err
	}
	kc, err := clientcmd.BuildConfigFromFlags("", o.Kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("--kubeconfig: %w", err)
	}
	kc.ContentType = c.Generic.ClientConnection.ContentType
	kc.QPS, kc.Burst = c.Generic.ClientConnection.QPS, int(c.Generic.ClientConnection.Burst)
	c.Kubeconfig = kc
	if o.SecureServing.BindPort != 0 {
		if err := o.SecureServing.MaybeDefaultWithSelfSignedCerts("localhost", nil, nil); err != nil {
			return nil, fmt.Errorf("secure serving: %w", err)
		}
		var loopback *rest.Config
		if err := o.SecureServing.ApplyTo(&c.SecureServing, &loopback); err != nil {
			return nil, fmt.Errorf("secure serving: %w", err)
		}
		// Delegated authentication and authorization ask the API server
		// the controller manager talks to.
		if o.Authentication.RemoteKubeConfigFile == "" {
			o.Authentication.RemoteKubeConfigFile = o.Kubeconfig
		}
		if o.Authorization.RemoteKubeConfigFile == "" {
			o.Authorization.RemoteKubeConfigFile = o.Kubeconfig
		}
		if err := o.Authentication.ApplyTo(&c.Authentication, c.SecureServing, nil); err != nil {
			return nil, fmt.Errorf("authentication: %w", err)
		}
		if err := o.Authorization.ApplyTo(&c.Authorization); err != nil {
			return nil, fmt.Errorf("authorization: %w", err)
		}
	}
	return c, nil
}
