package workarounds

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/apiserver/pkg/storage/storagebackend/factory"
	"k8s.io/client-go/tools/cache"
)

// conversionWebhookFailure starts apiextensions-apiserver's message for a
// conversion webhook that could not be called or answered badly.
const conversionWebhookFailure = "conversion webhook for "

// WithConversionWebhookErrors wraps the custom resources' storage so that
// a read that fails because the CRD's conversion webhook failed says so,
// with a 503 naming the CRD, the webhook's address and the failure.
//
// apiextensions-apiserver converts a custom resource from its stored
// version while decoding it from etcd, so when the webhook is down (or
// answers nonsense) the decoding fails and k8s.io/apiserver reports a
// "StorageError: corrupt object" as a 500: the object is intact, and the
// fault is the webhook's. Deletes are left as they are, so that an object
// that really cannot be decoded can still be deleted unsafely.
//
// The watch cache fails differently: its watch of etcd cannot decode the
// first event written since the webhook went down, so it stops there and
// retries, still ready, and serves what it had, with no error at all: a
// LIST or GET at resourceVersion=0 answers without the objects written
// since, and a watch never sees them. So the storage's codec notes a
// webhook failure decoding a watch event (the etcd watcher's decode, the
// one without an object to decode into; the store's reads decode into
// one), and until a watch event decodes again, reads that the cache may
// serve (those with a resourceVersion) and new watches get the 503, and
// open watches end with it as an error event. (Upstream passes the last
// etcd error on only from a cache that reinitialises,
// kubernetes/kubernetes#130899; this one stays ready.) Held by
// TestConversionWebhookDown.
func WithConversionWebhookErrors(g generic.RESTOptionsGetter) generic.RESTOptionsGetter {
	if g == nil {
		return nil
	}
	return conversionErrorsGetter{g}
}

type conversionErrorsGetter struct{ getter generic.RESTOptionsGetter }

func (g conversionErrorsGetter) GetRESTOptions(resource schema.GroupResource, example runtime.Object) (generic.RESTOptions, error) {
	opts, err := g.getter.GetRESTOptions(resource, example)
	if err != nil || opts.Decorator == nil {
		return opts, err
	}
	decorate := opts.Decorator
	opts.Decorator = func(config *storagebackend.ConfigForResource, resourcePrefix string, keyFunc func(runtime.Object) (string, error),
		newFunc, newListFunc func() runtime.Object, getAttrs storage.AttrFunc, triggers storage.IndexerFuncs, indexers *cache.Indexers) (storage.Interface, factory.DestroyFunc, error) {
		// The codec is apiextensions-apiserver's converting one by now: it
		// sets it after this getter returns.
		watches := &watchConversion{}
		c := *config
		c.Codec = watchDecodeCodec{Codec: config.Codec, watches: watches}
		s, destroy, err := decorate(&c, resourcePrefix, keyFunc, newFunc, newListFunc, getAttrs, triggers, indexers)
		if err != nil || s == nil {
			return s, destroy, err
		}
		return conversionErrorStorage{Interface: s, resource: resource, watches: watches}, destroy, nil
	}
	return opts, nil
}

// watchConversion is whether decoding watch events of one storage fails
// for its conversion webhook: the watch cache's watch of etcd, which
// retries the event it cannot decode, or a watch served by etcd itself.
type watchConversion struct {
	failing atomic.Bool // cause != "", read without the lock on every decode
	mu      sync.Mutex
	cause   string        // the webhook's failure, "" while watch events decode
	failed  chan struct{} // closed when cause is set; nil until a watch waits on it
}

// record notes the result of decoding a watch event.
func (w *watchConversion) record(err error) {
	if err == nil && !w.failing.Load() {
		return
	}
	var cause string
	if err != nil {
		i := strings.Index(err.Error(), conversionWebhookFailure)
		if i < 0 {
			return
		}
		cause = webhookCause(err.Error()[i:])
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if cause != "" && w.cause == "" && w.failed != nil {
		close(w.failed)
		w.failed = nil
	}
	w.cause = cause
	w.failing.Store(cause != "")
}

// state is the webhook's failure, or "" and a channel closed when one is
// recorded.
func (w *watchConversion) state() (string, <-chan struct{}) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.cause != "" {
		return w.cause, nil
	}
	if w.failed == nil {
		w.failed = make(chan struct{})
	}
	return "", w.failed
}

// watchDecodeCodec records in watches how decoding watch events goes.
type watchDecodeCodec struct {
	runtime.Codec
	watches *watchConversion
}

// Decode decodes with the storage's codec; a decode with nothing to decode
// into is the etcd watcher's (pkg/storage/etcd3/watcher.go decodeObj).
func (c watchDecodeCodec) Decode(data []byte, defaults *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	obj, gvk, err := c.Codec.Decode(data, defaults, into)
	if into == nil {
		c.watches.record(err)
	}
	return obj, gvk, err
}

// conversionErrorStorage rewrites conversion webhook failures on reads.
type conversionErrorStorage struct {
	storage.Interface
	resource schema.GroupResource
	watches  *watchConversion
}

func (s conversionErrorStorage) Get(ctx context.Context, key string, opts storage.GetOptions, objPtr runtime.Object) error {
	err := s.Interface.Get(ctx, key, opts, objPtr)
	if err == nil && opts.ResourceVersion != "" {
		return s.cacheBehind()
	}
	return conversionError(err, s.resource)
}

func (s conversionErrorStorage) GetList(ctx context.Context, key string, opts storage.ListOptions, listObj runtime.Object) error {
	err := s.Interface.GetList(ctx, key, opts, listObj)
	if err == nil && opts.ResourceVersion != "" {
		return s.cacheBehind()
	}
	return conversionError(err, s.resource)
}

func (s conversionErrorStorage) GuaranteedUpdate(ctx context.Context, key string, destination runtime.Object, ignoreNotFound bool,
	preconditions *storage.Preconditions, tryUpdate storage.UpdateFunc, cachedExistingObject runtime.Object) error {
	return conversionError(s.Interface.GuaranteedUpdate(ctx, key, destination, ignoreNotFound, preconditions, tryUpdate, cachedExistingObject), s.resource)
}

// Watch refuses a watch while watch events cannot be converted, and ends
// one with the webhook's failure when they no longer can.
func (s conversionErrorStorage) Watch(ctx context.Context, key string, opts storage.ListOptions) (watch.Interface, error) {
	cause, failed := s.watches.state()
	if cause != "" {
		return nil, webhookFailed(cause, s.resource)
	}
	w, err := s.Interface.Watch(ctx, key, opts)
	if err != nil {
		return nil, conversionError(err, s.resource)
	}
	out := &conversionWatch{in: w, out: make(chan watch.Event), stop: make(chan struct{})}
	go out.run(failed, s.watches, s.resource)
	return out, nil
}

// cacheBehind is the 503 for a read that the watch cache may have served
// while it cannot follow etcd, or nil.
func (s conversionErrorStorage) cacheBehind() error {
	if !s.watches.failing.Load() {
		return nil
	}
	if cause, _ := s.watches.state(); cause != "" {
		return webhookFailed(cause, s.resource)
	}
	return nil
}

// conversionWatch passes a watch's events on, naming the conversion
// webhook in its error events, and ends with such an event when watch
// events of its storage can no longer be converted.
type conversionWatch struct {
	in       watch.Interface
	out      chan watch.Event
	stop     chan struct{}
	stopOnce sync.Once
}

// Stop ends the watch; it is idempotent.
func (w *conversionWatch) Stop() { w.stopOnce.Do(func() { close(w.stop) }) }

// ResultChan delivers the events, and is closed when the watch ends.
func (w *conversionWatch) ResultChan() <-chan watch.Event { return w.out }

func (w *conversionWatch) run(failed <-chan struct{}, watches *watchConversion, resource schema.GroupResource) {
	defer close(w.out)
	defer w.in.Stop()
	send := func(e watch.Event) bool {
		select {
		case w.out <- e:
			return true
		case <-w.stop:
			return false
		}
	}
	for {
		select {
		case e, ok := <-w.in.ResultChan():
			if !ok {
				return
			}
			if status, isStatus := e.Object.(*metav1.Status); e.Type == watch.Error && isStatus {
				if i := strings.Index(status.Message, conversionWebhookFailure); i >= 0 {
					e.Object = &webhookFailed(webhookCause(status.Message[i:]), resource).ErrStatus
				}
			}
			if !send(e) {
				return
			}
		case <-failed:
			cause, next := watches.state()
			if cause != "" {
				send(watch.Event{Type: watch.Error, Object: &webhookFailed(cause, resource).ErrStatus})
				return
			}
			// Recovered meanwhile: wait for the next failure.
			failed = next
		case <-w.stop:
			return
		}
	}
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
	return webhookFailed(webhookCause(msg[i:]), resource)
}

// webhookCause is the webhook's failure in msg, which starts with
// conversionWebhookFailure: a list's error joins one storage error per
// object, so only the first is kept.
func webhookCause(msg string) string {
	if j := strings.Index(msg, "StorageError: "); j >= 0 {
		msg = msg[:j]
	}
	return strings.TrimRight(msg, ", ]")
}

// webhookFailed is the 503 for resource's conversion webhook failing with
// cause.
func webhookFailed(cause string, resource schema.GroupResource) *apierrors.StatusError {
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
