package apiserver

import (
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsv1beta1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1beta1"
	apiextensionsapiserver "k8s.io/apiextensions-apiserver/pkg/apiserver"
	apiextensionsoptions "k8s.io/apiextensions-apiserver/pkg/cmd/server/options"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	genericapiserver "k8s.io/apiserver/pkg/server"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	serverstorage "k8s.io/apiserver/pkg/server/storage"
	"k8s.io/apiserver/pkg/util/webhook"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	apiregistrationv1beta1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1beta1"
	aggregatorapiserver "k8s.io/kube-aggregator/pkg/apiserver"
	aggregatorscheme "k8s.io/kube-aggregator/pkg/apiserver/scheme"

	"github.com/gcp-project/gcp/pkg/controlplane/apiserver/workarounds"
)

// applyDelegates is the last stage of NewConfig: the configurations of the
// servers behind and in front of the native one (apiextensions, the
// aggregator) when the composition has them, made from the native
// server's, and the etcd alarm's readiness check on every server.
func (c *Config) applyDelegates() error {
	if c.Composition.APIExtensions {
		cfg, err := c.newAPIExtensionsConfig(c.ServiceResolver)
		if err != nil {
			return fmt.Errorf("apiextensions: %w", err)
		}
		c.APIExtensions = cfg
	}
	if c.Composition.Aggregator {
		cfg, err := c.newAggregatorConfig(c.ServiceResolver)
		if err != nil {
			return fmt.Errorf("aggregator: %w", err)
		}
		c.Aggregator = cfg
	}
	// Readiness fails while etcd has an alarm raised, on whichever server
	// of the chain serves /readyz.
	alarms := (&etcdAlarms{transport: c.Options.Etcd.StorageConfig.Transport}).checks()
	c.Generic.AddReadyzChecks(alarms...)
	if c.APIExtensions != nil {
		c.APIExtensions.GenericConfig.AddReadyzChecks(alarms...)
	}
	if c.Aggregator != nil {
		c.Aggregator.GenericConfig.AddReadyzChecks(alarms...)
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
