package apiserver

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/registry/generic"
	serverstorage "k8s.io/apiserver/pkg/server/storage"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/restmapper"

	"github.com/gcp-project/gcp/pkg/controlplane/apiserver/workarounds"
	"github.com/gcp-project/gcp/pkg/controlplane/etcdstorage"
	"github.com/gcp-project/gcp/pkg/controlplane/registry"
)

// applyStorage is NewConfig's storage stage: the native groups' storage
// factory (each group's storage media type), etcd's health checks (not in
// /livez: workarounds.WithoutCheck), and every storage through the
// options' etcd clients, the bound on waits for etcd and the storage
// workarounds.
func (c *Config) applyStorage() error {
	gc := c.Generic
	o := c.Options
	// The etcd clients' spans join the request's trace: the storage
	// factory's gRPC clients and etcdstorage's in-process ones read the
	// provider from here.
	o.Etcd.StorageConfig.Transport.TracerProvider = gc.TracerProvider
	resourceEncoding := serverstorage.NewDefaultResourceEncodingConfigForEffectiveVersion(c.Scheme, gc.EffectiveVersion)
	storageFactory := serverstorage.NewDefaultStorageFactory(o.Etcd.StorageConfig, o.Etcd.DefaultStorageMediaType,
		c.Codecs, resourceEncoding, gc.MergedResourceConfig, nil)
	storageFactory.StorageConfig.StorageObjectCountTracker = gc.StorageObjectCountTracker
	for _, g := range c.Composition.APIGroups {
		if mt, ok := g.(registry.StorageMediaTyper); ok {
			storageFactory.SetSerializer(schema.GroupResource{Group: g.GroupName(), Resource: serverstorage.AllResources}, mt.StorageMediaType(), nil)
		}
	}
	if err := o.Etcd.ApplyWithStorageFactoryTo(storageFactory, gc); err != nil {
		return fmt.Errorf("etcd: %w", err)
	}
	// /livez does not depend on etcd; /readyz and /healthz keep the check.
	gc.LivezChecks = workarounds.WithoutCheck(gc.LivezChecks, "etcd")
	gc.RESTOptionsGetter = workarounds.WithStorageWorkarounds(c.withEtcd(gc.RESTOptionsGetter))
	return nil
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
