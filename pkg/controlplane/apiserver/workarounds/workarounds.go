// Package workarounds holds gcp's corrections of k8s.io/apiserver v0.37.2
// (and apiextensions-apiserver) where upstream answers a client's mistake
// with a 500, or no answer, or does something a control plane must not:
// handler filters, storage wrappers, an admission gate and a health check
// edit, each wired by the API server's build stages. Every file but this
// one is one row of docs/architecture.md's "Workarounds for upstream",
// naming the upstream code (and issue, if any) and the test that holds it,
// so that the file and its row can be deleted the day upstream fixes it
// (TestFilesMatchTheTable keeps the two one to one). This file holds only
// what several of them share: the storage wrapping they go through.
package workarounds

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/apiserver/pkg/storage/storagebackend/factory"
	"k8s.io/client-go/tools/cache"
)

// WithStorageWorkarounds wraps g with the storage-side corrections of
// k8s.io/apiserver's answers to client input: its storage answers 413 when
// etcd refuses an object for its size and 507 when etcd is out of space
// (objectSizeStorage), and 400 for a resourceVersion in a body that is not
// a number (bodyResourceVersionStorage). docs/architecture.md's
// "Workarounds for upstream" lists them with their tests.
func WithStorageWorkarounds(g generic.RESTOptionsGetter) generic.RESTOptionsGetter {
	return WrapStorage(g, func(s storage.Interface, _ factory.DestroyFunc) storage.Interface {
		return objectSizeStorage{bodyResourceVersionStorage{s}}
	})
}

// WrapStorage returns a RESTOptionsGetter like g whose storage decorator
// passes every storage it builds, with its destroy function, through wrap
// (nil stays nil).
func WrapStorage(g generic.RESTOptionsGetter, wrap func(storage.Interface, factory.DestroyFunc) storage.Interface) generic.RESTOptionsGetter {
	if g == nil {
		return nil
	}
	return storageWrapper{getter: g, wrap: wrap}
}

type storageWrapper struct {
	getter generic.RESTOptionsGetter
	wrap   func(storage.Interface, factory.DestroyFunc) storage.Interface
}

func (g storageWrapper) GetRESTOptions(resource schema.GroupResource, example runtime.Object) (generic.RESTOptions, error) {
	opts, err := g.getter.GetRESTOptions(resource, example)
	if err != nil || opts.Decorator == nil {
		return opts, err
	}
	decorate := opts.Decorator
	opts.Decorator = func(config *storagebackend.ConfigForResource, resourcePrefix string, keyFunc func(runtime.Object) (string, error),
		newFunc, newListFunc func() runtime.Object, getAttrs storage.AttrFunc, triggers storage.IndexerFuncs, indexers *cache.Indexers) (storage.Interface, factory.DestroyFunc, error) {
		s, destroy, err := decorate(config, resourcePrefix, keyFunc, newFunc, newListFunc, getAttrs, triggers, indexers)
		if err != nil || s == nil {
			return s, destroy, err
		}
		return g.wrap(s, destroy), destroy, nil
	}
	return opts, nil
}
