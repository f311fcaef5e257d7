package workarounds

import (
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/storage"
)

// bodyResourceVersionStorage is a storage whose Versioner answers 400 for
// an object's resourceVersion that is not a number. The object is the one
// an update or a patch sent: k8s.io/apiserver's Store.Update
// (pkg/registry/generic/registry/store.go, v0.37.2) parses it with
// e.Storage.Versioner().ObjectResourceVersion and returns the raw
// strconv error, which the handler answers 500. No upstream issue is open
// for it (kubernetes#68208 proposed a 409 and was closed unmerged).
//
// It is a storage wrapper, not a filter, because the value is inside the
// body; it wraps every storage the servers build (WithStorageWorkarounds),
// so native resources, custom resources, CRDs and APIServices all answer
// 400. A resourceVersion query parameter takes another path, the etcd
// store's and the watch cache's own versioners, which no wrapper reaches:
// WithResourceVersionCheck answers that one (kubernetes#139485).
// test/integration TestBodyResourceVersionIsAClientError holds it.
type bodyResourceVersionStorage struct {
	storage.Interface
}

// Versioner returns the storage's versioner with client errors as 400.
func (s bodyResourceVersionStorage) Versioner() storage.Versioner {
	return bodyResourceVersioner{s.Interface.Versioner()}
}

// bodyResourceVersioner reports an unparsable resourceVersion as 400.
type bodyResourceVersioner struct {
	storage.Versioner
}

// ObjectResourceVersion parses obj's resourceVersion.
func (v bodyResourceVersioner) ObjectResourceVersion(obj runtime.Object) (uint64, error) {
	rv, err := v.Versioner.ObjectResourceVersion(obj)
	if err != nil {
		return 0, apierrors.NewBadRequest(fmt.Sprintf("metadata.resourceVersion: Invalid value: %v", err))
	}
	return rv, nil
}
