// Package apiserver assembles gcp's API server: the generic core with the
// native registries, apiextensions (CRDs) behind it and the aggregator in
// front, all on k8s.io/apiserver. Stages: options.CompletedOptions ->
// NewConfig -> Config.Complete -> CompletedConfig.New -> Server.PrepareRun ->
// PreparedServer.Run.
package apiserver

import (
	"context"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsv1beta1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1beta1"
	apiextensionsapiserver "k8s.io/apiextensions-apiserver/pkg/apiserver"
	apiextensionsoptions "k8s.io/apiextensions-apiserver/pkg/cmd/server/options"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/endpoints/discovery/aggregated"
	"k8s.io/apiserver/pkg/registry/generic"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/filters"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	"k8s.io/apiserver/pkg/server/resourceconfig"
	serverstorage "k8s.io/apiserver/pkg/server/storage"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/apiserver/pkg/util/webhook"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	clientgoinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	apiregistrationv1beta1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1beta1"
	aggregatorapiserver "k8s.io/kube-aggregator/pkg/apiserver"
	aggregatorscheme "k8s.io/kube-aggregator/pkg/apiserver/scheme"
	"k8s.io/kube-openapi/pkg/common"
	openapiutil "k8s.io/kube-openapi/pkg/util"
	"k8s.io/kube-openapi/pkg/validation/spec"

	gcpadmission "github.com/gcp-project/gcp/pkg/controlplane/admission"
	"github.com/gcp-project/gcp/pkg/controlplane/apiserver/guards"
	"github.com/gcp-project/gcp/pkg/controlplane/apiserver/options"
	"github.com/gcp-project/gcp/pkg/controlplane/apiserver/workarounds"
	"github.com/gcp-project/gcp/pkg/controlplane/auth/authz"
	"github.com/gcp-project/gcp/pkg/controlplane/auth/satoken"
	"github.com/gcp-project/gcp/pkg/controlplane/composition"
	"github.com/gcp-project/gcp/pkg/controlplane/etcdstorage"
	"github.com/gcp-project/gcp/pkg/controlplane/nesting"
	"github.com/gcp-project/gcp/pkg/controlplane/openapi"
	"github.com/gcp-project/gcp/pkg/controlplane/registry"
	"github.com/gcp-project/gcp/pkg/controlplane/serviceresolver"
)

// Config is the configuration of the three servers of the delegation chain.
type Config struct {
	Options     options.CompletedOptions
	Composition composition.Composition

	// Generic configures the native server; the others are copies of it.
	Generic *genericapiserver.Config
	// Scheme and Codecs hold the native types.
	Scheme *runtime.Scheme
	Codecs serializer.CodecFactory
	// Client and Informers talk to this server over loopback.
	Client    kubernetes.Interface
	Informers clientgoinformers.SharedInformerFactory
	// RuleResolver lists what the authorizer chain allows a user.
	RuleResolver authorizer.RuleResolver
	// ServiceResolver maps service references to addresses; a post-start
	// hook starts it.
	ServiceResolver *serviceresolver.Resolver
	// ServiceAccountTokens issues and verifies service account tokens;
	// nil when they are off.
	ServiceAccountTokens *options.ServiceAccountTokens
	// APIExtensions and Aggregator are nil when disabled.
	APIExtensions *apiextensionsapiserver.Config
	Aggregator    *aggregatorapiserver.Config

	// informerName is Informers' name in client-go's informer metrics
	// (InformerName), nil when another server of the process holds it.
	informerName *cache.InformerName
}

// InformerName names the API server's loopback informers in client-go's
// informer metrics (informer_queued_items and the like: the name label),
// as kube-apiserver names its own.
const InformerName = "gcp-apiserver"

// NewScheme returns a scheme with every type of groups plus the unversioned
// meta types; each call returns a new scheme, so servers share nothing.
func NewScheme(groups []registry.APIGroup) (*runtime.Scheme, error) {
	scheme := runtime.NewScheme()
	for _, g := range groups {
		if err := g.InstallScheme(scheme); err != nil {
			return nil, fmt.Errorf("installing API group %q: %w", g.GroupName(), err)
		}
	}
	unversioned := schema.GroupVersion{Group: "", Version: "v1"}
	metav1.AddToGroupVersion(scheme, unversioned)
	scheme.AddUnversionedTypes(unversioned,
		&metav1.Status{}, &metav1.APIVersions{}, &metav1.APIGroupList{}, &metav1.APIGroup{}, &metav1.APIResourceList{})
	return scheme, nil
}

// defaultResourceConfig enables the stable versions the scheme knows for
// groups and lists their alpha and beta versions as disabled, as upstream's
// DefaultGenericAPIResourceConfigSource does: those are served only when
// --runtime-config turns them on.
func defaultResourceConfig(scheme *runtime.Scheme, groups []registry.APIGroup) *serverstorage.ResourceConfig {
	rc := serverstorage.NewResourceConfig()
	for _, g := range groups {
		for _, gv := range scheme.PrioritizedVersionsForGroup(g.GroupName()) {
			if strings.Contains(gv.Version, "alpha") || strings.Contains(gv.Version, "beta") {
				rc.DisableVersions(gv)
				continue
			}
			rc.EnableVersions(gv)
		}
	}
	return rc
}

// validateFor checks what options.Validate cannot, not knowing the
// composition, and what k8s.io/apiserver would report only while
// installing the APIs: --runtime-config names only groups of the native,
// CRD and APIService servers; --enable-admission-plugins only plugins the
// composition supports; API Priority and Fairness has its API; every
// served kind has an OpenAPI definition and can be stored in its group's
// storage media type. It returns the merged OpenAPI
// definitions. NewConfig calls it first, before touching storage, so a
// caller that builds the configuration before starting etcd (allinone,
// unless its data dir is Ephemeral) fails with nothing started.
func validateFor(o options.CompletedOptions, comp composition.Composition, scheme *runtime.Scheme) (common.GetOpenAPIDefinitions, error) {
	definitions := comp.GetOpenAPIDefinitions()
	if err := checkDefinitions(scheme, comp.APIGroups, definitions); err != nil {
		return nil, err
	}
	if err := checkStorageMediaTypes(scheme, comp.APIGroups, o.Etcd.DefaultStorageMediaType); err != nil {
		return nil, err
	}
	if errs := o.APIEnablement.Validate(scheme, apiextensionsapiserver.Scheme, aggregatorscheme.Scheme); len(errs) > 0 {
		return nil, fmt.Errorf("--runtime-config: %w", utilerrors.NewAggregate(errs))
	}
	if _, err := admissionFor(o.Admission, comp.AdmissionPlugins); err != nil {
		return nil, err
	}
	if err := checkAuthorization(o.Authorization, comp); err != nil {
		return nil, err
	}
	resources, err := resourceconfig.MergeAPIResourceConfigs(defaultResourceConfig(scheme, comp.APIGroups), o.APIEnablement.RuntimeConfig, scheme)
	if err != nil {
		return nil, fmt.Errorf("--runtime-config: %w", err)
	}
	if err := checkReadByServer(comp.APIGroups, defaultResourceConfig(scheme, comp.APIGroups), resources); err != nil {
		return nil, err
	}
	if o.Features.EnablePriorityAndFairness && servesGroup(comp.APIGroups, flowcontrolv1.GroupName) && !servesAll(resources, priorityAndFairnessResources) {
		return nil, fmt.Errorf("API Priority and Fairness needs --runtime-config=%s=true, or --enable-priority-and-fairness=false", flowcontrolv1.SchemeGroupVersion)
	}
	return definitions, nil
}

// checkReadByServer refuses a --runtime-config that turns off a version or
// resource of a group the server reads (registry.ReadByServer): enabled
// by default, off in resources.
func checkReadByServer(groups []registry.APIGroup, defaults, resources *serverstorage.ResourceConfig) error {
	for _, g := range groups {
		r, ok := g.(registry.ReadByServer)
		if !ok {
			continue
		}
		var off []string
		for gv, enabled := range defaults.GroupVersionConfigs {
			if gv.Group == g.GroupName() && enabled && !resources.GroupVersionConfigs[gv] {
				off = append(off, gv.String())
			}
		}
		for gvr, enabled := range resources.ResourceConfigs {
			if gvr.Group == g.GroupName() && !enabled && defaults.GroupVersionConfigs[gvr.GroupVersion()] {
				off = append(off, gvr.GroupVersion().String()+"/"+gvr.Resource)
			}
		}
		if len(off) > 0 {
			slices.Sort(off)
			return fmt.Errorf("--runtime-config turns off %s, which %s reads: the server cannot run without it (compose the stack without its layer instead)",
				strings.Join(off, ", "), r.ReadBy())
		}
	}
	return nil
}

// checkDefinitions fails when a kind of groups has no OpenAPI definition,
// or one of its definitions refers to a name none has, which
// k8s.io/apiserver would report only when installing the APIs.
func checkDefinitions(scheme *runtime.Scheme, groups []registry.APIGroup, definitions common.GetOpenAPIDefinitions) error {
	defined := definitions(func(path string) spec.Ref { return spec.MustCreateRef(path) })
	var missing, served []string
	for _, g := range groups {
		for _, gv := range scheme.PrioritizedVersionsForGroup(g.GroupName()) {
			for kind, t := range scheme.KnownTypes(gv) {
				if strings.HasSuffix(kind, "Options") || kind == "WatchEvent" {
					continue // meta/v1 types every version carries
				}
				name := openapiutil.GetCanonicalTypeName(reflect.New(t).Interface())
				served = append(served, name)
				if _, ok := defined[name]; !ok {
					missing = append(missing, fmt.Sprintf("%s (%s)", gv.WithKind(kind), name))
				}
			}
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return fmt.Errorf("no OpenAPI definition for %s: add the group's generated definitions to its layer (Layer.OpenAPIDefinitions)", strings.Join(missing, ", "))
	}
	return checkDependencies(defined, served)
}

// NewConfig builds the configuration of every server from options and the
// composition.
func NewConfig(o options.CompletedOptions, comp composition.Composition) (_ *Config, err error) {
	scheme, err := NewScheme(comp.APIGroups)
	if err != nil {
		return nil, err
	}
	definitions, err := validateFor(o, comp, scheme)
	if err != nil {
		return nil, err
	}
	codecs := serializer.NewCodecFactory(scheme)
	c := &Config{Options: o, Composition: comp, Scheme: scheme, Codecs: codecs}

	gc := genericapiserver.NewConfig(codecs)
	c.Generic = gc
	gc.MergedResourceConfig = defaultResourceConfig(scheme, comp.APIGroups)
	if err := o.GenericServerRunOptions.ApplyTo(gc); err != nil {
		return nil, fmt.Errorf("server run options: %w", err)
	}
	if err := applySecureServing(o.SecureServing, gc); err != nil {
		return nil, fmt.Errorf("secure serving: %w", err)
	}
	gc.LoopbackClientConfig.ContentConfig.ContentType = "application/vnd.kubernetes.protobuf"
	gc.LoopbackClientConfig.DisableCompression = true
	// Tracing before the loopback clients are made, so that they carry
	// the trace context.
	if err := o.Traces.ApplyTo(gc); err != nil {
		return nil, fmt.Errorf("tracing: %w", err)
	}
	defer func() {
		if err != nil {
			// Nothing will run this configuration: stop its exporter.
			_ = gc.TracerProvider.Shutdown(context.Background())
		}
	}()

	client, err := kubernetes.NewForConfig(gc.LoopbackClientConfig)
	if err != nil {
		return nil, fmt.Errorf("loopback client: %w", err)
	}
	dynamicClient, err := dynamic.NewForConfig(gc.LoopbackClientConfig)
	if err != nil {
		return nil, fmt.Errorf("loopback dynamic client: %w", err)
	}
	c.Client = client
	// Named in client-go's informer metrics, as kube-apiserver's are; a
	// second server in one process (tests) has unnamed ones, without
	// metrics, since names are process-wide. The server releases the name
	// when it stops.
	if n, err := cache.NewInformerName(InformerName); err == nil {
		c.informerName = n
	} else {
		klog.V(2).InfoS("Loopback informers without metrics", "err", err)
	}
	c.Informers = clientgoinformers.NewSharedInformerFactoryWithOptions(client, 10*time.Minute,
		clientgoinformers.WithTransform(func(obj interface{}) (interface{}, error) {
			if accessor, err := meta.Accessor(obj); err == nil {
				accessor.SetManagedFields(nil)
			}
			return obj, nil
		}),
		clientgoinformers.WithInformerName(c.informerName))

	if err := o.APIEnablement.ApplyTo(gc, gc.MergedResourceConfig, scheme); err != nil {
		return nil, fmt.Errorf("--runtime-config: %w", err)
	}
	features := *o.Features
	if !c.serves(priorityAndFairnessResources...) {
		// API Priority and Fairness reads its configuration from the
		// flowcontrol API; without the layer the max-in-flight limits apply.
		features.EnablePriorityAndFairness = false
	}
	if err := features.ApplyTo(gc, client, c.Informers); err != nil {
		return nil, fmt.Errorf("features: %w", err)
	}

	namer := openapi.NewDefinitionNamer(scheme, apiextensionsapiserver.Scheme, aggregatorscheme.Scheme)
	gc.OpenAPIConfig = genericapiserver.DefaultOpenAPIConfig(definitions, namer)
	gc.OpenAPIConfig.Info.Title = "gcp"
	gc.OpenAPIV3Config = genericapiserver.DefaultOpenAPIV3Config(definitions, namer)
	gc.OpenAPIV3Config.Info.Title = "gcp"
	// The native server's documents are built when first asked for
	// (lazyopenapi, installed by New), not by PrepareRun.
	gc.SkipOpenAPIInstallation = true
	gc.LongRunningFunc = filters.BasicLongRunningRequestCheck(sets.NewString("watch", "proxy"), sets.NewString("attach", "exec", "proxy", "log", "portforward"))

	// The etcd clients' spans join the request's trace: the storage
	// factory's gRPC clients and etcdstorage's in-process ones read the
	// provider from here.
	o.Etcd.StorageConfig.Transport.TracerProvider = gc.TracerProvider
	resourceEncoding := serverstorage.NewDefaultResourceEncodingConfigForEffectiveVersion(scheme, gc.EffectiveVersion)
	storageFactory := serverstorage.NewDefaultStorageFactory(o.Etcd.StorageConfig, o.Etcd.DefaultStorageMediaType,
		codecs, resourceEncoding, gc.MergedResourceConfig, nil)
	storageFactory.StorageConfig.StorageObjectCountTracker = gc.StorageObjectCountTracker
	for _, g := range comp.APIGroups {
		if mt, ok := g.(registry.StorageMediaTyper); ok {
			storageFactory.SetSerializer(schema.GroupResource{Group: g.GroupName(), Resource: serverstorage.AllResources}, mt.StorageMediaType(), nil)
		}
	}
	if err := o.Etcd.ApplyWithStorageFactoryTo(storageFactory, gc); err != nil {
		return nil, fmt.Errorf("etcd: %w", err)
	}
	// /livez does not depend on etcd; /readyz and /healthz keep the check.
	gc.LivezChecks = workarounds.WithoutCheck(gc.LivezChecks, "etcd")
	gc.RESTOptionsGetter = workarounds.WithStorageWorkarounds(c.withEtcd(gc.RESTOptionsGetter))

	tokens, err := o.Authentication.ServiceAccounts.New(func() satoken.Getter { return satoken.NewGetter(c.Informers.Core().V1(), client) })
	if err != nil {
		return nil, fmt.Errorf("service account tokens: %w", err)
	}
	c.ServiceAccountTokens = tokens
	var tokenAuthenticator authenticator.Token
	if tokens != nil {
		tokenAuthenticator = tokens.Authenticator
	}
	var extra []authenticator.Request
	for _, f := range comp.Authenticators {
		a, err := f(c.Informers)
		if err != nil {
			return nil, fmt.Errorf("authentication: %w", err)
		}
		extra = append(extra, a)
	}
	if err := o.Authentication.ApplyTo(gc, tokenAuthenticator, extra...); err != nil {
		return nil, fmt.Errorf("authentication: %w", err)
	}
	if err := c.applyAuthorization(); err != nil {
		return nil, fmt.Errorf("authorization: %w", err)
	}
	// The loopback client's token authenticates as system:apiserver in
	// system:masters; this wraps the authenticator and authorizer above.
	genericapiserver.AuthorizeClientBearerToken(gc.LoopbackClientConfig, &gc.Authentication, &gc.Authorization)

	if err := o.Audit.ApplyTo(gc); err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	// Service references (APIServices, webhooks, CRD conversion) resolve
	// through ConfigMap kube-system/service-addresses, or by DNS as
	// <service>.<namespace>.svc: gcp has no Service API
	// (docs/aggregation.md).
	var resolverClient kubernetes.Interface
	if c.serves(configMaps) {
		resolverClient = client
	}
	serviceResolver := serviceresolver.New(resolverClient)
	c.ServiceResolver = serviceResolver
	admissionOptions, err := admissionFor(o.Admission, comp.AdmissionPlugins)
	if err != nil {
		return nil, err
	}
	readiness := workarounds.NewAdmissionReadiness()
	admissionOptions.Decorators = append(append(admission.Decorators{readiness}, admissionOptions.Decorators...), guards.WithPolicyBudget(guards.EvaluationBudget))
	if err := admissionOptions.ApplyTo(gc, c.Informers, client, dynamicClient, utilfeature.DefaultFeatureGate, gc.EffectiveVersion,
		gcpadmission.Initializers(gc.LoopbackClientConfig, serviceResolver, gc.TracerProvider)...); err != nil {
		return nil, fmt.Errorf("admission: %w", err)
	}
	gc.AdmissionControl = guards.WithGuardedAdmission(readiness.Gate(gc.AdmissionControl, gc.DrainedNotify()), nesting.Limit)
	gc.AggregatedDiscoveryGroupManager = aggregated.NewResourceManager("apis")
	gc.BuildHandlerChainFunc = func(h http.Handler, c *genericapiserver.Config) http.Handler {
		inner := workarounds.WithPatchInputErrors(workarounds.WithResourceVersionCheck(workarounds.WithVersion(h), codecs), codecs)
		return genericapiserver.DefaultBuildHandlerChain(workarounds.WithClientInputChecks(guards.WithNestingLimit(guards.WithEvalBudget(inner, codecs, guards.EvaluationBudget), codecs, nesting.Limit, c.MaxRequestBodyBytes), codecs), c)
	}

	if comp.APIExtensions {
		cfg, err := c.newAPIExtensionsConfig(serviceResolver)
		if err != nil {
			return nil, fmt.Errorf("apiextensions: %w", err)
		}
		c.APIExtensions = cfg
	}
	if comp.Aggregator {
		cfg, err := c.newAggregatorConfig(serviceResolver)
		if err != nil {
			return nil, fmt.Errorf("aggregator: %w", err)
		}
		c.Aggregator = cfg
	}
	// Readiness fails while etcd has an alarm raised, on whichever server
	// of the chain serves /readyz.
	alarms := (&etcdAlarms{transport: o.Etcd.StorageConfig.Transport}).checks()
	c.Generic.AddReadyzChecks(alarms...)
	if c.APIExtensions != nil {
		c.APIExtensions.GenericConfig.AddReadyzChecks(alarms...)
	}
	if c.Aggregator != nil {
		c.Aggregator.GenericConfig.AddReadyzChecks(alarms...)
	}
	return c, nil
}

// servesGroup reports whether groups include group.
func servesGroup(groups []registry.APIGroup, group string) bool {
	return slices.ContainsFunc(groups, func(g registry.APIGroup) bool { return g.GroupName() == group })
}

// The resources the server's own features read or write: each feature
// runs only while the native server serves all of them (Config.serves),
// so a composition without a group, or a --runtime-config that turns it
// off, turns the feature off instead of leaving it failing for ever.
var (
	// configMaps: the service resolver's addresses and the published
	// authentication info (extension-apiserver-authentication).
	configMaps = corev1.SchemeGroupVersion.WithResource("configmaps")
	// identityLeaseResources: each server's identity Lease in kube-system.
	identityLeaseResources = []schema.GroupVersionResource{
		coordinationv1.SchemeGroupVersion.WithResource("leases"),
		corev1.SchemeGroupVersion.WithResource("namespaces"),
	}
	// rbacPolicyResources: the bootstrap policy reconciled at every start.
	rbacPolicyResources = []schema.GroupVersionResource{
		rbacv1.SchemeGroupVersion.WithResource("clusterroles"),
		rbacv1.SchemeGroupVersion.WithResource("clusterrolebindings"),
		rbacv1.SchemeGroupVersion.WithResource("roles"),
		rbacv1.SchemeGroupVersion.WithResource("rolebindings"),
	}
	// priorityAndFairnessResources: API Priority and Fairness's
	// configuration.
	priorityAndFairnessResources = []schema.GroupVersionResource{
		flowcontrolv1.SchemeGroupVersion.WithResource("flowschemas"),
		flowcontrolv1.SchemeGroupVersion.WithResource("prioritylevelconfigurations"),
	}
)

// servesAll reports whether resources enable every one of gvrs.
func servesAll(resources serverstorage.APIResourceConfigSource, gvrs []schema.GroupVersionResource) bool {
	for _, gvr := range gvrs {
		if !resources.ResourceEnabled(gvr) {
			return false
		}
	}
	return true
}

// serves reports whether the native server serves every one of gvrs: its
// composition's groups, as --runtime-config leaves them.
func (c *Config) serves(gvrs ...schema.GroupVersionResource) bool {
	return servesAll(c.Generic.MergedResourceConfig, gvrs)
}

// admissionFor returns a copy of o whose plugin order keeps only the
// plugins the composition supports, its own registered and ordered;
// enabling any other is an error.
func admissionFor(o *genericoptions.AdmissionOptions, plugins []gcpadmission.Plugin) (*genericoptions.AdmissionOptions, error) {
	gcpadmission.RegisterFactories(o.Plugins, plugins)
	supported := make([]string, len(plugins))
	for i, p := range plugins {
		supported[i] = p.Name
	}
	for _, name := range o.EnablePlugins {
		if !slices.Contains(supported, name) {
			return nil, fmt.Errorf("--enable-admission-plugins: %s needs an API this server does not serve (supported: %s)", name, strings.Join(supported, ", "))
		}
	}
	out := *o
	out.RecommendedPluginOrder = slices.DeleteFunc(slices.Clone(gcpadmission.AddToOrder(o.RecommendedPluginOrder, plugins)), func(name string) bool {
		return !slices.Contains(supported, name)
	})
	return &out, nil
}

// storageOptions returns what the native groups need to build storage.
func (c *Config) storageOptions() registry.StorageOptions {
	return registry.StorageOptions{
		Scheme:            c.Scheme,
		Codecs:            c.Codecs,
		ParameterCodec:    runtime.NewParameterCodec(c.Scheme),
		RESTOptionsGetter: c.Generic.RESTOptionsGetter,
		ResourceConfig:    c.Generic.MergedResourceConfig,
		Auth:              c.registryAuth(),
		RESTMapper:        restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(c.Client.Discovery())),
		EventTTL:          c.Options.EventTTL,
	}
}

// registryAuth is what the auth-facing API groups get.
func (c *Config) registryAuth() registry.Auth {
	auth := registry.Auth{
		Authorizer:         c.Generic.Authorization.Authorizer,
		RuleResolver:       c.RuleResolver,
		APIAudiences:       c.Generic.Authentication.APIAudiences,
		MaxTokenExpiration: c.Options.Authentication.ServiceAccounts.MaxTokenExpiration,
	}
	if t := c.ServiceAccountTokens; t != nil {
		auth.TokenAuthenticator = t.Authenticator
		auth.ServiceAccountTokens = t.Issuer
	}
	return auth
}

// checkAuthorization refuses an authorization configuration that names
// RBAC on a control plane without the RBAC layer (which serves the RBAC
// API its authorizer reads).
func checkAuthorization(o *options.AuthorizationOptions, comp composition.Composition) error {
	cfg, _, err := o.Configuration()
	if err != nil {
		return err
	}
	if authz.HasType(cfg, authz.TypeRBAC) && !servesGroup(comp.APIGroups, rbacv1.GroupName) {
		return fmt.Errorf("%s: authorizer type RBAC: this control plane has no RBAC (its stack has no rbac layer)", o.Source())
	}
	return nil
}

// applyAuthorization builds the authorizer chain: the composition's
// authorizers and the options' Go ones, and those the options configure
// (pkg/controlplane/auth/authz). A configuration file is reloaded by a
// post-start hook while the server runs.
func (c *Config) applyAuthorization() error {
	var named []authz.Named
	for _, f := range c.Composition.Authorizers {
		a, err := f(c.Informers)
		if err != nil {
			return err
		}
		named = append(named, a)
	}
	o := c.Options.Authorization
	if o != nil {
		named = append(named, o.Authorizers...)
	}
	cfg, data, err := o.Configuration()
	if err != nil {
		return err
	}
	if cfg == nil {
		chain, resolver, err := authz.NewChain(named...)
		if err != nil {
			return err
		}
		c.Generic.Authorization.Authorizer = chain
		c.RuleResolver = resolver
		return nil
	}
	chain, err := authz.NewReloadable(authz.Builder{Own: named, WebhookRetryBackoff: o.WebhookRetryBackoff}, cfg, c.Generic.APIServerID)
	if err != nil {
		return fmt.Errorf("%s: %w", o.Source(), err)
	}
	c.Generic.Authorization.Authorizer = chain
	c.RuleResolver = chain
	if o.ConfigFile != "" {
		file := o.ConfigFile
		c.Generic.AddPostStartHookOrDie("authorization-config-reload", func(ctx genericapiserver.PostStartHookContext) error {
			go chain.Watch(ctx, file, data)
			return nil
		})
	}
	return nil
}

// delegateGeneric returns the generic configuration of a delegate server
// (the apiextensions server, the aggregator): the native server's, without
// its post-start hooks, storing its group in etcd as the versions encode
// and decode it (the first written, the second's group read too), with
// --runtime-config applied to the server's own resource defaults. It
// returns the etcd options that storage came from.
func (c *Config) delegateGeneric(codecs serializer.CodecFactory, encode, decode schema.GroupVersion,
	resources *serverstorage.ResourceConfig, scheme *runtime.Scheme, skipOpenAPI bool) (genericapiserver.Config, genericoptions.EtcdOptions, error) {
	gc := *c.Generic
	gc.PostStartHooks = map[string]genericapiserver.PostStartHookConfigEntry{}
	gc.RESTOptionsGetter = nil
	gc.SkipOpenAPIInstallation = skipOpenAPI

	etcd := *c.Options.Etcd
	etcd.StorageConfig.Codec = codecs.LegacyCodec(encode, decode)
	etcd.StorageConfig.EncodeVersioner = runtime.NewMultiGroupVersioner(encode, schema.GroupKind{Group: decode.Group})
	etcd.SkipHealthEndpoints = true
	if err := etcd.ApplyTo(&gc); err != nil {
		return gc, etcd, err
	}
	gc.RESTOptionsGetter = workarounds.WithStorageWorkarounds(c.withEtcd(gc.RESTOptionsGetter))
	err := c.Options.APIEnablement.ApplyTo(&gc, resources, scheme)
	return gc, etcd, err
}

func (c *Config) newAPIExtensionsConfig(serviceResolver webhook.ServiceResolver) (*apiextensionsapiserver.Config, error) {
	// The apiextensions server installs its own OpenAPI: its v2
	// controller merges CRDs into the document PrepareRun builds from its
	// routes.
	gc, etcd, err := c.delegateGeneric(apiextensionsapiserver.Codecs, apiextensionsv1beta1.SchemeGroupVersion, apiextensionsv1.SchemeGroupVersion,
		apiextensionsapiserver.DefaultAPIResourceConfigSource(), apiextensionsapiserver.Scheme, false)
	if err != nil {
		return nil, err
	}
	authResolver := webhook.NewDefaultAuthenticationInfoResolverWrapper(nil, gc.EgressSelector, gc.LoopbackClientConfig, gc.TracerProvider)
	return &apiextensionsapiserver.Config{
		GenericConfig: &genericapiserver.RecommendedConfig{Config: gc, SharedInformerFactory: c.Informers},
		ExtraConfig: apiextensionsapiserver.ExtraConfig{
			CRDRESTOptionsGetter: workarounds.WithConversionWebhookErrors(workarounds.WithStorageWorkarounds(c.withEtcd(apiextensionsoptions.NewCRDRESTOptionsGetter(etcd, gc.ResourceTransformers, gc.StorageObjectCountTracker)))),
			MasterCount:          1,
			AuthResolverWrapper:  authResolver,
			ServiceResolver:      serviceResolver,
		},
	}, nil
}

func (c *Config) newAggregatorConfig(serviceResolver aggregatorapiserver.ServiceResolver) (*aggregatorapiserver.Config, error) {
	// The native server installs /openapi; the aggregator merges specs.
	gc, _, err := c.delegateGeneric(aggregatorscheme.Codecs, apiregistrationv1.SchemeGroupVersion, apiregistrationv1beta1.SchemeGroupVersion,
		aggregatorapiserver.DefaultAPIResourceConfigSource(), aggregatorscheme.Scheme, true)
	if err != nil {
		return nil, err
	}
	return &aggregatorapiserver.Config{
		// The remote availability controller sees every service reference
		// as an ExternalName Service and checks it through the resolver.
		GenericConfig: &genericapiserver.RecommendedConfig{Config: gc, SharedInformerFactory: newNoServicesInformers(c.Informers, c.ServiceResolver)},
		ExtraConfig: aggregatorapiserver.ExtraConfig{
			ProxyClientCertFile: c.Options.ProxyClientCertFile,
			ProxyClientKeyFile:  c.Options.ProxyClientKeyFile,
			ServiceResolver:     serviceResolver,
		},
	}, nil
}

// withEtcd makes g's storage use the options' etcd clients and bounds
// its waits on etcd (workarounds.WithEtcdUnavailable). It wraps the getter the etcd
// options built, before anything else wraps its decorator.
func (c *Config) withEtcd(g generic.RESTOptionsGetter) generic.RESTOptionsGetter {
	return workarounds.WithEtcdUnavailable(c.withEtcdClients(g), c.Options.EtcdRequestTimeout)
}

// withEtcdClients makes g's storage use the options' etcd clients, when
// they give a way to make them. It wraps the getter the etcd options
// built, before anything else wraps its decorator.
func (c *Config) withEtcdClients(g generic.RESTOptionsGetter) generic.RESTOptionsGetter {
	if c.Options.NewEtcdClient == nil {
		return g
	}
	return etcdstorage.WithClients(g, c.Options.NewEtcdClient)
}

// trackStorage wraps the RESTOptionsGetters of c's servers in a new
// tracker, so that a failed start destroys the storage it built
// (workarounds/failedstart.go).
func (c CompletedConfig) trackStorage() *workarounds.StorageTracker {
	t := workarounds.NewStorageTracker()
	c.Generic.RESTOptionsGetter = t.Wrap(c.Generic.RESTOptionsGetter)
	if x := c.APIExtensions; x != nil {
		// Custom resources' storage (ExtraConfig.CRDRESTOptionsGetter) is
		// built while serving, never during construction.
		x.GenericConfig.RESTOptionsGetter = t.Wrap(x.GenericConfig.RESTOptionsGetter)
	}
	if a := c.Aggregator; a != nil {
		a.GenericConfig.RESTOptionsGetter = t.Wrap(a.GenericConfig.RESTOptionsGetter)
	}
	return t
}
