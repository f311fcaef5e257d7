package typed

import (
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/storage"
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
