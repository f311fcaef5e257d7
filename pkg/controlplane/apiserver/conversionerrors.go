package apiserver

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/storagebackend/factory"
)

// conversionWebhookFailure starts apiextensions-apiserver's message for a
// conversion webhook that could not be called or answered badly.
const conversionWebhookFailure = "conversion webhook for "

// withConversionWebhookErrors wraps the custom resources' storage so that
// a read that fails because the CRD's conversion webhook failed says so,
// with a 503 naming the CRD, the webhook's address and the failure.
//
// apiextensions-apiserver converts a custom resource from its stored
// version while decoding it from etcd, so when the webhook is down (or
// answers nonsense) the decoding fails and k8s.io/apiserver reports a
// "StorageError: corrupt object" as a 500: the object is intact, and the
// fault is the webhook's. Deletes are left as they are, so that an object
// that really cannot be decoded can still be deleted unsafely. Held by
// TestConversionWebhookDown.
func withConversionWebhookErrors(g generic.RESTOptionsGetter) generic.RESTOptionsGetter {
	if g == nil {
		return nil
	}
	return conversionErrorsGetter{g}
}

type conversionErrorsGetter struct{ getter generic.RESTOptionsGetter }

func (g conversionErrorsGetter) GetRESTOptions(resource schema.GroupResource, example runtime.Object) (generic.RESTOptions, error) {
	return WrapStorage(g.getter, func(s storage.Interface, _ factory.DestroyFunc) storage.Interface {
		return conversionErrorStorage{Interface: s, resource: resource}
	}).GetRESTOptions(resource, example)
}

// conversionErrorStorage rewrites conversion webhook failures on reads.
type conversionErrorStorage struct {
	storage.Interface
	resource schema.GroupResource
}

func (s conversionErrorStorage) Get(ctx context.Context, key string, opts storage.GetOptions, objPtr runtime.Object) error {
	return conversionError(s.Interface.Get(ctx, key, opts, objPtr), s.resource)
}

func (s conversionErrorStorage) GetList(ctx context.Context, key string, opts storage.ListOptions, listObj runtime.Object) error {
	return conversionError(s.Interface.GetList(ctx, key, opts, listObj), s.resource)
}

func (s conversionErrorStorage) GuaranteedUpdate(ctx context.Context, key string, destination runtime.Object, ignoreNotFound bool,
	preconditions *storage.Preconditions, tryUpdate storage.UpdateFunc, cachedExistingObject runtime.Object) error {
	return conversionError(s.Interface.GuaranteedUpdate(ctx, key, destination, ignoreNotFound, preconditions, tryUpdate, cachedExistingObject), s.resource)
}

// conversionError is err, or a 503 naming the conversion webhook's failure
// when err is a corrupt-object error caused by it.
func conversionError(err error, resource schema.GroupResource) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	i := strings.Index(msg, conversionWebhookFailure)
	if i < 0 || !(storage.IsCorruptObject(err) || strings.Contains(msg, "corrupt object")) {
		return err
	}
	// A list's error joins one storage error per object; name the first.
	cause := msg[i:]
	if j := strings.Index(cause, "StorageError: "); j >= 0 {
		cause = cause[:j]
	}
	cause = strings.TrimRight(cause, ", ]")
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure,
		Code:   http.StatusServiceUnavailable,
		Reason: metav1.StatusReasonServiceUnavailable,
		Details: &metav1.StatusDetails{Group: resource.Group, Kind: resource.Resource,
			Causes: []metav1.StatusCause{{Type: "ConversionWebhookFailed", Message: cause}}},
		Message: fmt.Sprintf("the conversion webhook of CustomResourceDefinition %s failed, so %s cannot be read in this version now (the stored objects are intact): %s",
			resource.String(), resource.Resource, cause),
	}}
}
