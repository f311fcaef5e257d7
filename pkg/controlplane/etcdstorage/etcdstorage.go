// Package etcdstorage builds each resource's storage over etcd clients
// that gcp supplies, instead of clients that k8s.io/apiserver's storage
// factory dials itself.
//
// `gcp start` uses it to give every resource a client that calls its
// embedded etcd member in the same process (etcd's v3client) rather than a
// gRPC connection over a unix socket. The storage factory makes one gRPC
// connection per resource, and so per custom resource: about 13 goroutines
// and, with 300 CRDs, 9 MiB of gRPC read buffers on the client ends alone
// (heap profile, docs/performance.md), and a protobuf encoding,
// HTTP/2 framing and a socket round trip for every etcd request. Each
// resource still gets a client of its own, so each keeps its own watch
// stream, as upstream intends: progress notifications (which consistent
// reads from the watch cache wait for) answer per stream, and a busy
// resource does not hold up another's. (One client for every resource
// saved nothing measurable with 300 CRDs: docs/performance.md, the sixth
// round.)
//
// What is built is what factory.Create and registry.StorageWithCacher
// build, from the same exported pieces of k8s.io/apiserver: the etcd3
// store with its latency tracker, decoder and transformer, and, where the
// watch cache is on, the cacher with its delegator; and, as the storage
// factory gives its gRPC clients otelgrpc's spans, a span for each KV call
// (tracing.go).
package etcdstorage

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/kubernetes"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	genericfeatures "k8s.io/apiserver/pkg/features"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/storage"
	cacherstorage "k8s.io/apiserver/pkg/storage/cacher"
	"k8s.io/apiserver/pkg/storage/etcd3"
	etcdfeature "k8s.io/apiserver/pkg/storage/feature"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/apiserver/pkg/storage/storagebackend/factory"
	"k8s.io/apiserver/pkg/storage/value/encrypt/identity"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
)

// NewClientFunc returns a new etcd client, which the storage closes when
// it is destroyed.
type NewClientFunc func() (*clientv3.Client, error)

// WithClients returns a RESTOptionsGetter like g whose storage talks to
// etcd through clients from newClient, one per resource. It must wrap the
// getter that k8s.io/apiserver's etcd options built (before anything
// else wraps its decorator): it keeps the watch cache where that getter's
// decorator has it and leaves it off where the decorator is
// generic.UndecoratedStorage.
func WithClients(g generic.RESTOptionsGetter, newClient NewClientFunc) generic.RESTOptionsGetter {
	return &getter{inner: g, clients: &clients{new: newClient}}
}

type getter struct {
	inner   generic.RESTOptionsGetter
	clients *clients
}

func (g *getter) GetRESTOptions(resource schema.GroupResource, example runtime.Object) (generic.RESTOptions, error) {
	opts, err := g.inner.GetRESTOptions(resource, example)
	if err != nil || opts.Decorator == nil {
		return opts, err
	}
	cached := !isUndecorated(opts.Decorator)
	opts.Decorator = g.clients.decorator(cached)
	return opts, nil
}

// isUndecorated says whether d is generic.UndecoratedStorage, which the
// etcd options choose for a resource whose watch cache is off.
func isUndecorated(d generic.StorageDecorator) bool {
	return reflect.ValueOf(d).Pointer() == reflect.ValueOf(generic.UndecoratedStorage).Pointer()
}

// clients makes the storage and runs one compactor for all of it, as the
// storage factory runs one per etcd cluster: started with the first
// storage, stopped when the last is destroyed.
type clients struct {
	new NewClientFunc

	checkOnce sync.Once

	mu               sync.Mutex
	refs             int
	compactor        stoppableCompactor // nil until the first storage
	compactorsClient *clientv3.Client
}

// stoppableCompactor is what etcd3.NewCompactor returns.
type stoppableCompactor interface {
	etcd3.Compactor
	Stop()
}

// decorator builds a resource's storage, with the watch cache in front
// when cached.
func (c *clients) decorator(cached bool) generic.StorageDecorator {
	return func(config *storagebackend.ConfigForResource, resourcePrefix string, keyFunc func(obj runtime.Object) (string, error),
		newFunc, newListFunc func() runtime.Object, getAttrsFunc storage.AttrFunc, triggerFuncs storage.IndexerFuncs,
		indexers *cache.Indexers) (storage.Interface, factory.DestroyFunc, error) {
		raw, destroyRaw, err := c.store(config, newFunc, newListFunc, resourcePrefix)
		if err != nil || !cached {
			return raw, destroyRaw, err
		}
		cacher, err := cacherstorage.NewCacherFromConfig(cacherstorage.Config{
			Storage:             raw,
			Versioner:           storage.APIObjectVersioner{},
			GroupResource:       config.GroupResource,
			EventsHistoryWindow: config.EventsHistoryWindow,
			ResourcePrefix:      resourcePrefix,
			KeyFunc:             keyFunc,
			NewFunc:             newFunc,
			NewListFunc:         newListFunc,
			GetAttrsFunc:        getAttrsFunc,
			IndexerFuncs:        triggerFuncs,
			Indexers:            indexers,
			Codec:               config.Codec,
		})
		if err != nil {
			destroyRaw()
			return nil, func() {}, err
		}
		delegator := cacherstorage.NewCacheDelegator(cacher, raw)
		var once sync.Once
		return delegator, func() {
			once.Do(func() {
				delegator.Stop()
				cacher.Stop()
				destroyRaw()
			})
		}, nil
	}
}

// store builds the etcd3 store of one resource over a client of its own.
func (c *clients) store(config *storagebackend.ConfigForResource, newFunc, newListFunc func() runtime.Object, resourcePrefix string) (storage.Interface, factory.DestroyFunc, error) {
	compactor, release, err := c.acquireCompactor(config.CompactionInterval)
	if err != nil {
		return nil, nil, err
	}
	client, err := c.new()
	if err != nil {
		release()
		return nil, nil, err
	}
	c.checkOnce.Do(c.checkFeatures)
	kc := &kubernetes.Client{Client: client}
	kc.Kubernetes = kc
	kc.KV = etcd3.NewETCDLatencyTracker(withSpans(client.KV, config.Transport.TracerProvider))

	transformer := config.Transformer
	if transformer == nil {
		transformer = identity.NewEncryptCheckTransformer()
	}
	versioner := storage.APIObjectVersioner{}
	decoder := etcd3.NewDefaultDecoder(config.Codec, versioner)
	unsafeDeletion := utilfeature.DefaultFeatureGate.Enabled(genericfeatures.AllowUnsafeMalformedObjectDeletion)
	if unsafeDeletion {
		transformer = etcd3.WithCorruptObjErrorHandlingTransformer(transformer)
		decoder = etcd3.WithCorruptObjErrorHandlingDecoder(decoder)
	}
	store, err := etcd3.New(kc, compactor, config.Codec, newFunc, newListFunc, config.Prefix, resourcePrefix,
		config.GroupResource, transformer, config.LeaseManagerConfig, decoder, versioner)
	if err != nil {
		_ = client.Close()
		release()
		return nil, nil, err
	}
	var once sync.Once
	destroy := func() {
		// Destroy functions are called more than once: subresources share
		// their resource's storage.
		once.Do(func() {
			store.Close()
			_ = client.Close()
			release()
		})
	}
	var s storage.Interface = store
	if unsafeDeletion {
		s = etcd3.NewStoreWithUnsafeCorruptObjectDeletion(s, config.GroupResource)
	}
	return s, destroy, nil
}

// acquireCompactor returns the compactor (nil when compaction is off) and
// a function that releases this storage's hold on it.
func (c *clients) acquireCompactor(interval time.Duration) (etcd3.Compactor, func(), error) {
	if interval == 0 {
		return nil, func() {}, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.compactor == nil {
		client, err := c.new()
		if err != nil {
			return nil, nil, err
		}
		c.compactor, c.compactorsClient = etcd3.NewCompactor(client, interval, clock.RealClock{}, nil), client
	}
	c.refs++
	var once sync.Once
	return c.compactor, func() {
		once.Do(func() {
			c.mu.Lock()
			defer c.mu.Unlock()
			if c.refs--; c.refs == 0 {
				c.compactor.Stop()
				_ = c.compactorsClient.Close()
				c.compactor, c.compactorsClient = nil, nil
			}
		})
	}, nil
}

// checkFeatures has the storage layer check, once, what the etcd member
// supports. etcd3.New asks its feature checker to check each client's
// endpoints; an in-process client has none, so without this the checker
// never learns that etcd answers watch progress requests, and the watch
// cache never serves consistent reads (every consistent list would go to
// etcd). The check goes through a client of its own, named as an endpoint
// of its own, which is closed once the check has its answer.
func (c *clients) checkFeatures() {
	client, err := c.new()
	if err != nil {
		return
	}
	checked := &checkedClient{Client: client, endpoint: fmt.Sprintf("in-process-%p", c)}
	etcdfeature.DefaultFeatureSupportChecker.CheckClient(client.Ctx(), checked, storage.RequestWatchProgress)
}

// checkedClient is an in-process client as the feature checker sees it:
// with an endpoint name, and closed after the status it was asked for.
type checkedClient struct {
	*clientv3.Client
	endpoint string
}

func (c *checkedClient) Endpoints() []string { return []string{c.endpoint} }

func (c *checkedClient) Status(ctx context.Context, _ string) (*clientv3.StatusResponse, error) {
	resp, err := c.Client.Status(ctx, c.endpoint)
	if err == nil {
		_ = c.Client.Close()
	}
	return resp, err
}
