// Package options holds the flags of `gcp apiserver` as option groups, most
// of them k8s.io/apiserver's own, plus gcp's authentication and data-dir
// defaults. Options -> Complete -> Validate -> CompletedOptions feeds
// apiserver.NewConfig.
package options

import (
	"fmt"
	"strconv"
	"time"

	"k8s.io/apiserver/pkg/admission"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	cliflag "k8s.io/component-base/cli/flag"
	metricsfeatures "k8s.io/component-base/metrics/features"
	netutils "k8s.io/utils/net"

	gcpadmission "github.com/gcp-project/gcp/pkg/controlplane/admission"
	"github.com/gcp-project/gcp/pkg/controlplane/auth/tlspolicy"
	"github.com/gcp-project/gcp/pkg/controlplane/etcdstorage"
	"github.com/gcp-project/gcp/pkg/controlplane/version"
)

// DefaultSecurePort is the port the apiserver serves HTTPS on by default.
const DefaultSecurePort = 6443

// Options are every flag of the apiserver.
type Options struct {
	GenericServerRunOptions *genericoptions.ServerRunOptions
	Etcd                    *genericoptions.EtcdOptions
	SecureServing           *genericoptions.SecureServingOptionsWithLoopback
	Audit                   *genericoptions.AuditOptions
	Features                *genericoptions.FeatureOptions
	APIEnablement           *genericoptions.APIEnablementOptions
	Admission               *genericoptions.AdmissionOptions
	Authentication          *AuthenticationOptions
	Authorization           *AuthorizationOptions
	Traces                  *TracingOptions

	// ProxyClientCertFile and ProxyClientKeyFile identify the aggregator to
	// aggregated API servers.
	ProxyClientCertFile string
	ProxyClientKeyFile  string
	// EventTTL is how long events are kept.
	EventTTL time.Duration
	// IdentityLeaseDuration and IdentityLeaseRenewInterval time the
	// server's identity Lease in kube-system, as kube-apiserver's
	// --identity-lease-duration-seconds and
	// --identity-lease-renew-interval-seconds.
	IdentityLeaseDuration, IdentityLeaseRenewInterval time.Duration
	// EtcdRequestTimeout is how long a request waits for etcd to answer
	// before it gets 504 naming etcd (--etcd-request-timeout); 0 leaves
	// requests to the request timeout, as kube-apiserver does. Time in
	// admission inside an update or a delete does not count.
	EtcdRequestTimeout time.Duration

	// NewEtcdClient, when set, makes the etcd client of each resource's
	// storage, instead of k8s.io/apiserver's storage factory dialing
	// Etcd.StorageConfig's servers (the health checks still dial them).
	// gcp start sets it to clients that call its embedded etcd in process;
	// pkg/controlplane/etcdstorage says why.
	NewEtcdClient etcdstorage.NewClientFunc
}

// CompletedOptions are options after Complete; only Complete makes them.
type CompletedOptions struct {
	*completedOptions
}

type completedOptions struct {
	Options
}

// DefaultShutdownWatchTerminationGracePeriod is how long a stopping API
// server lets open watches drain before it closes them, unless
// --shutdown-watch-termination-grace-period says otherwise.
const DefaultShutdownWatchTerminationGracePeriod = 2 * time.Second

// DefaultEtcdRequestTimeout is --etcd-request-timeout's default: longer
// than a healthy etcd takes (milliseconds) or an election (about a
// second), short enough that a client whose write was lost with a killed
// etcd leader learns it and retries in about two seconds rather than
// etcd's own seven (docs/performance.md).
const DefaultEtcdRequestTimeout = 2 * time.Second

// DefaultWatchCacheSizes is --watch-cache-sizes' default: no watch cache
// for CRDs. apiextensions-apiserver's own informer already holds every CRD,
// and the watch cache held each again, decoded to the internal version:
// with 1,539 CRDs of a Crossplane provider that was 520 of the 880 MiB of
// live heap (docs/performance.md, issue 38). CRDs are listed and watched by
// a few clients (the servers' own informers, operators' installers), so
// their lists and watches go to etcd. `--watch-cache-sizes
// customresourcedefinitions.apiextensions.k8s.io#100` (any size but 0)
// turns it back on; a list of other resources replaces this one.
func DefaultWatchCacheSizes() []string {
	return []string{"customresourcedefinitions.apiextensions.k8s.io#0"}
}

// NewOptions returns the defaults of a standalone apiserver.
func NewOptions() *Options {
	o := &Options{
		GenericServerRunOptions: genericoptions.NewServerRunOptions(),
		Etcd:                    genericoptions.NewEtcdOptions(storagebackend.NewDefaultConfig("/registry", nil)),
		SecureServing:           genericoptions.NewSecureServingOptions().WithLoopback(),
		Audit:                   genericoptions.NewAuditOptions(),
		Features:                genericoptions.NewFeatureOptions(),
		APIEnablement:           genericoptions.NewAPIEnablementOptions(),
		Admission:               genericoptions.NewAdmissionOptions(),
		Authentication:          NewAuthenticationOptions(),
		Authorization:           NewAuthorizationOptions(),
		Traces:                  NewTracingOptions(),
		EventTTL:                time.Hour,
		// kube-apiserver's defaults.
		IdentityLeaseDuration:      time.Hour,
		IdentityLeaseRenewInterval: 10 * time.Second,
		EtcdRequestTimeout:         DefaultEtcdRequestTimeout,
	}
	o.SecureServing.BindPort = DefaultSecurePort
	o.SecureServing.ServerCert.PairName = "apiserver"
	tlspolicy.Apply(o.SecureServing.SecureServingOptions)
	// /debug/pprof and /debug/flags/v only with --profiling (CIS 1.2.15).
	o.Features.EnableProfiling = false
	// An audit log, once --audit-log-path asks for one, is rotated as CIS
	// 1.2.17–1.2.19 ask: kept 30 days, 10 files, 100 MiB each.
	o.Audit.LogOptions.MaxAge, o.Audit.LogOptions.MaxBackups, o.Audit.LogOptions.MaxSize = 30, 10, 100
	// Open watches are closed soon after SIGTERM; kube-apiserver's default
	// (0) leaves them open until the 60 s request timeout, so a server with
	// a watching client took a minute to stop.
	o.GenericServerRunOptions.ShutdownWatchTerminationGracePeriod = DefaultShutdownWatchTerminationGracePeriod
	// Native objects are stored as protobuf, like kube-apiserver.
	o.Etcd.DefaultStorageMediaType = "application/vnd.kubernetes.protobuf"
	o.Etcd.WatchCacheSizes = DefaultWatchCacheSizes()
	// API Priority and Fairness is on, as in kube-apiserver: the flowcontrol
	// layer serves its configuration and keeps the bootstrap objects; the
	// total concurrency is --max-requests-inflight plus
	// --max-mutating-requests-inflight.
	o.Features.EnablePriorityAndFairness = true
	// Admission: gcp's plugin set in upstream's order, all on by default.
	// The composition's layers decide which of them can run
	// (composition.Composition.AdmissionPlugins) and may add their own
	// (AddAdmissionPlugins). genericoptions.NewAdmissionOptions, kept for
	// its decorators (the admission metrics), registers upstream's five
	// plugins in a registry of its own; gcp's replaces it rather than adding
	// to it, since a registry refuses a name twice and gcp's set holds
	// those five too, in its own order.
	o.Admission.Plugins = admission.NewPlugins()
	gcpadmission.Register(o.Admission.Plugins)
	o.Admission.RecommendedPluginOrder = gcpadmission.RecommendedOrder()
	o.Admission.DefaultOffPlugins = gcpadmission.DefaultOff()
	return o
}

// AddAdmissionPlugins registers a composition's own admission plugins
// (those with a Factory) and puts them in the recommended order, so that
// --enable-admission-plugins and --disable-admission-plugins accept and
// list them; call it before AddFlags. apiserver.NewConfig adds them too,
// for options built without it.
func (o *Options) AddAdmissionPlugins(plugins []gcpadmission.Plugin) {
	gcpadmission.RegisterFactories(o.Admission.Plugins, plugins)
	o.Admission.RecommendedPluginOrder = gcpadmission.AddToOrder(o.Admission.RecommendedPluginOrder, plugins)
}

// AddFlags adds every flag, in sections like kube-apiserver's --help.
func (o *Options) AddFlags(fss *cliflag.NamedFlagSets) {
	o.GenericServerRunOptions.AddUniversalFlags(fss.FlagSet("generic"))
	o.Etcd.AddFlags(fss.FlagSet("etcd"))
	o.SecureServing.AddFlags(fss.FlagSet("secure serving"))
	o.Audit.AddFlags(fss.FlagSet("auditing"))
	o.Features.AddFlags(fss.FlagSet("features"))
	o.APIEnablement.AddFlags(fss.FlagSet("API enablement"))
	o.Admission.AddFlags(fss.FlagSet("admission"))
	o.Authentication.AddFlags(fss.FlagSet("authentication"))
	o.Authorization.AddFlags(fss.FlagSet("authorization"))
	o.Traces.AddFlags(fss.FlagSet("traces"))
	fss.FlagSet("etcd").DurationVar(&o.EtcdRequestTimeout, "etcd-request-timeout", o.EtcdRequestTimeout,
		"How long a request waits for etcd to answer before it fails with 504 naming etcd; 0 waits as long as the request may. "+
			"A member without a leader is refused at once with 503 and Retry-After (a write is tried again while this lasts, so one during an election waits for the new leader).")
	fs := fss.FlagSet("aggregation")
	fs.StringVar(&o.ProxyClientCertFile, "proxy-client-cert-file", o.ProxyClientCertFile,
		"Client certificate used to prove the identity of the aggregator when it calls out to aggregated API servers.")
	fs.StringVar(&o.ProxyClientKeyFile, "proxy-client-key-file", o.ProxyClientKeyFile,
		"Private key for the client certificate used by the aggregator.")
	fss.FlagSet("generic").DurationVar(&o.EventTTL, "event-ttl", o.EventTTL, "Amount of time to retain events.")
	fss.FlagSet("generic").Var(secondsFlag{&o.IdentityLeaseDuration}, "identity-lease-duration-seconds",
		"The duration of the API server's identity Lease in kube-system, in seconds; an API server that stops renewing it is gone after that.")
	fss.FlagSet("generic").Var(secondsFlag{&o.IdentityLeaseRenewInterval}, "identity-lease-renew-interval-seconds",
		"The interval, in seconds, at which the API server renews its identity Lease.")
}

// Complete fills in defaults that depend on other options.
func (o *Options) Complete() (CompletedOptions, error) {
	// Feature gates and the emulated version are final once flags are parsed.
	if err := o.GenericServerRunOptions.ComponentGlobalsRegistry.Set(); err != nil {
		return CompletedOptions{}, err
	}
	// Histograms made from here on (the servers' own, made as they are
	// built) get native buckets beside the classic ones when NativeHistograms
	// is on, beta and on by default in 1.37, as kube-apiserver's do. The
	// setting is process-wide, as the metrics are.
	metricsfeatures.ApplyFeatureGates(utilfeature.DefaultFeatureGate)
	// kubernetes_feature_enabled, version_info and kubernetes_build_info,
	// as kube-apiserver serves them.
	utilfeature.DefaultMutableFeatureGate.AddMetrics()
	o.GenericServerRunOptions.ComponentGlobalsRegistry.AddMetrics()
	version.RegisterMetrics()
	if o.GenericServerRunOptions.AdvertiseAddress == nil {
		// Advertise the bind address, or loopback when bound to all
		// interfaces: there is no Service to publish the address to.
		o.GenericServerRunOptions.AdvertiseAddress = netutils.ParseIPSloppy("127.0.0.1")
		if ip := o.SecureServing.BindAddress; ip != nil && !ip.IsUnspecified() {
			o.GenericServerRunOptions.AdvertiseAddress = ip
		}
	}
	// No self-signed fallback: a serving certificate nobody can verify would
	// teach clients to skip verification. `gcp start` creates real ones.
	if o.SecureServing.ServerCert.CertKey.CertFile == "" || o.SecureServing.ServerCert.CertKey.KeyFile == "" {
		return CompletedOptions{}, fmt.Errorf("--tls-cert-file and --tls-private-key-file are required (gcp start creates them in its data dir)")
	}
	return CompletedOptions{&completedOptions{*o}}, nil
}

// Validate checks every option group and returns all problems.
func (o CompletedOptions) Validate() []error {
	var errs []error
	errs = append(errs, o.GenericServerRunOptions.Validate()...)
	errs = append(errs, o.Etcd.Validate()...)
	errs = append(errs, o.SecureServing.Validate()...)
	errs = append(errs, o.Audit.Validate()...)
	errs = append(errs, o.Features.Validate()...)
	// --runtime-config is checked against the schemes in apiserver.NewConfig.
	errs = append(errs, o.Admission.Validate()...)
	errs = append(errs, o.Authentication.Validate()...)
	errs = append(errs, o.Authorization.Validate()...)
	errs = append(errs, o.Traces.Validate()...)
	if (o.ProxyClientCertFile == "") != (o.ProxyClientKeyFile == "") {
		errs = append(errs, fmt.Errorf("--proxy-client-cert-file and --proxy-client-key-file must be set together"))
	}
	if o.EtcdRequestTimeout < 0 {
		errs = append(errs, fmt.Errorf("--etcd-request-timeout must not be negative, got %s", o.EtcdRequestTimeout))
	}
	if o.EventTTL <= 0 {
		errs = append(errs, fmt.Errorf("--event-ttl must be positive, got %s", o.EventTTL))
	}
	if o.IdentityLeaseRenewInterval <= 0 || o.IdentityLeaseDuration <= o.IdentityLeaseRenewInterval {
		errs = append(errs, fmt.Errorf("--identity-lease-renew-interval-seconds (%d) must be positive and less than --identity-lease-duration-seconds (%d)",
			int(o.IdentityLeaseRenewInterval/time.Second), int(o.IdentityLeaseDuration/time.Second)))
	}
	return errs
}

// secondsFlag is a duration given as whole seconds on the command line.
type secondsFlag struct{ d *time.Duration }

func (f secondsFlag) String() string {
	if f.d == nil {
		return "0"
	}
	return strconv.Itoa(int(*f.d / time.Second))
}

func (f secondsFlag) Set(v string) error {
	n, err := strconv.Atoi(v)
	if err != nil {
		return fmt.Errorf("%q is not a whole number of seconds", v)
	}
	*f.d = time.Duration(n) * time.Second
	return nil
}

func (secondsFlag) Type() string { return "int" }
