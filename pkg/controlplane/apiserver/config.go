// Package apiserver assembles gcp's API server: the generic core with the
// native registries, apiextensions (CRDs) behind it and the aggregator in
// front, all on k8s.io/apiserver. Stages: options.CompletedOptions ->
// NewConfig -> Config.Complete -> CompletedConfig.New -> Server.PrepareRun ->
// PreparedServer.Run.
package apiserver

import (
	"context"
	"fmt"

	apiextensionsapiserver "k8s.io/apiextensions-apiserver/pkg/apiserver"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/endpoints/discovery/aggregated"
	genericapiserver "k8s.io/apiserver/pkg/server"
	clientgoinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	aggregatorapiserver "k8s.io/kube-aggregator/pkg/apiserver"

	"github.com/gcp-project/gcp/pkg/controlplane/apiserver/options"
	"github.com/gcp-project/gcp/pkg/controlplane/composition"
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
	// Filters are the steps of every server's handler chain inside
	// k8s.io/apiserver's default chain, outermost first: gcp's, then the
	// composition's (handlerChain lists them and says why in that order).
	// A caller may add its own between NewConfig and CompletedConfig.New.
	Filters []Filter

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

// NewConfig builds the configuration of every server from options and the
// composition, in stages as upstream's BuildGenericConfig does: the
// composition is checked first (validateFor), before anything touches
// storage, then serving, the loopback clients, the APIs served, storage,
// authentication and authorization, audit, the service resolver,
// admission, the handler chain, and last the delegate servers'
// configurations, made from the native server's.
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
	c := &Config{Options: o, Composition: comp, Scheme: scheme, Codecs: codecs, Generic: genericapiserver.NewConfig(codecs)}
	c.Generic.MergedResourceConfig = defaultResourceConfig(scheme, comp.APIGroups)

	if err := c.applyServing(); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			// Nothing will run this configuration: stop its exporter.
			_ = c.Generic.TracerProvider.Shutdown(context.Background())
		}
	}()
	dynamicClient, err := c.applyLoopbackClients()
	if err != nil {
		return nil, err
	}
	if err := c.applyAPIs(definitions); err != nil {
		return nil, err
	}
	if err := c.applyStorage(); err != nil {
		return nil, err
	}
	if err := c.applyAuth(); err != nil {
		return nil, err
	}
	if err := o.Audit.ApplyTo(c.Generic); err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	c.ServiceResolver = c.newServiceResolver()
	if err := c.applyAdmission(dynamicClient); err != nil {
		return nil, err
	}
	c.Generic.AggregatedDiscoveryGroupManager = aggregated.NewResourceManager("apis")
	c.Filters = c.handlerChain()
	c.Generic.BuildHandlerChainFunc = c.buildHandlerChain
	if err := c.applyDelegates(); err != nil {
		return nil, err
	}
	return c, nil
}
