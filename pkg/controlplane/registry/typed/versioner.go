package typed

import (
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/apiserver/pkg/storage/storagebackend/factory"
	"k8s.io/client-go/tools/cache"
)

// badRequestVersioner reports an object's unparsable resourceVersion as a
// 400 instead of the raw parse error k8s.io/apiserver turns into a 500
// (kubernetes#139485): the value came from the client's request body.
type badRequestVersioner struct {
	storage.Versioner
}

// ObjectResourceVersion parses obj's resourceVersion.
func (v badRequestVersioner) ObjectResourceVersion(obj runtime.Object) (uint64, error) {
	rv, err := v.Versioner.ObjectResourceVersion(obj)
	if err != nil {
		return 0, apierrors.NewBadRequest(fmt.Sprintf("metadata.resourceVersion: Invalid value: %v", err))
	}
	return rv, nil
}

// checkedStorage is the store's storage with badRequestVersioner.
type checkedStorage struct {
	storage.Interface
}

func (s checkedStorage) Versioner() storage.Versioner {
	return badRequestVersioner{s.Interface.Versioner()}
}

// checkedOptions makes the storage the store is completed with a
// checkedStorage. Wrapping it in the decorator, before the store starts
// its goroutines, instead of replacing it after, keeps the swap free of
// races with the store's object count observer.
type checkedOptions struct {
	generic.RESTOptionsGetter
}

// GetRESTOptions returns the getter's options with a checking decorator.
func (g checkedOptions) GetRESTOptions(resource schema.GroupResource, example runtime.Object) (generic.RESTOptions, error) {
	opts, err := g.RESTOptionsGetter.GetRESTOptions(resource, example)
	if err != nil {
		return opts, err
	}
	decorator := opts.Decorator
	opts.Decorator = func(config *storagebackend.ConfigForResource, resourcePrefix string, cacheKeyFunc func(runtime.Object) (string, error),
		newFunc, newListFunc func() runtime.Object, getAttrs storage.AttrFunc, trigger storage.IndexerFuncs, indexers *cache.Indexers) (storage.Interface, factory.DestroyFunc, error) {
		s, destroy, err := decorator(config, resourcePrefix, cacheKeyFunc, newFunc, newListFunc, getAttrs, trigger, indexers)
		if err != nil {
			return nil, nil, err
		}
		return checkedStorage{s}, destroy, nil
	}
	return opts, nil
}
