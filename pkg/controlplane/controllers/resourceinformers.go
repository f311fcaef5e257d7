package controllers

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"
)

// ResourceInformers gives the controllers that watch every resource (the
// garbage collector, the resource quota controller) one informer per
// resource between them, as kube-controller-manager's shared informers do,
// and, unlike those, stops a resource's informer once no controller holds
// it (its CRD was deleted). A resource the typed factory knows gets the
// factory's shared informer, which other controllers may use too and which
// runs until the manager stops; any other resource gets a metadata
// informer, which runs while it is held.
//
// With hundreds of CRDs this halves the informers (and the API server's
// watches) the two controllers keep per CRD.
type ResourceInformers struct {
	ctx      context.Context
	typed    informers.SharedInformerFactory
	metadata metadata.Interface
	resync   time.Duration
	started  <-chan struct{}

	mu   sync.Mutex
	held map[schema.GroupVersionResource]*heldInformer
	wg   sync.WaitGroup
}

// heldInformer is an informer and how many hold it.
type heldInformer struct {
	informer informers.GenericInformer
	holders  int
	// stop stops a metadata informer; nil for the typed factory's.
	stop context.CancelFunc
}

// NewResourceInformers returns ResourceInformers whose informers run until
// ctx is done. typed may be nil (every resource then gets a metadata
// informer); its informers are started once started is closed (the
// manager closes it after starting its factories), and metadata informers
// are started at once.
func NewResourceInformers(ctx context.Context, typed informers.SharedInformerFactory, client metadata.Interface, resync time.Duration, started <-chan struct{}) *ResourceInformers {
	return &ResourceInformers{
		ctx:      ctx,
		typed:    typed,
		metadata: client,
		resync:   resync,
		started:  started,
		held:     map[schema.GroupVersionResource]*heldInformer{},
	}
}

// AddEventHandler registers handler on gvr's informer, which runs (or is
// about to) while some handler is registered on it through r. Remove
// undoes it.
func (r *ResourceInformers) AddEventHandler(gvr schema.GroupVersionResource, handler cache.ResourceEventHandler) (*Handler, error) {
	inf, err := r.hold(gvr)
	if err != nil {
		return nil, err
	}
	reg, err := inf.Informer().AddEventHandler(handler)
	if err != nil {
		r.release(gvr)
		return nil, err
	}
	return &Handler{r: r, gvr: gvr, informer: inf.Informer(), registration: reg}, nil
}

// Handler is a handler AddEventHandler registered.
type Handler struct {
	r            *ResourceInformers
	gvr          schema.GroupVersionResource
	informer     cache.SharedIndexInformer
	registration cache.ResourceEventHandlerRegistration
}

// HasSynced reports whether the handler has seen the informer's first
// listing.
func (h *Handler) HasSynced() bool { return h.registration.HasSynced() }

// HasSyncedChecker is done once the handler has seen the informer's first
// listing, for cache.WaitFor.
func (h *Handler) HasSyncedChecker() cache.DoneChecker { return h.registration.HasSyncedChecker() }

// Remove unregisters the handler; the informer's last handler stops a
// metadata informer.
func (h *Handler) Remove() {
	_ = h.informer.RemoveEventHandler(h.registration)
	h.r.release(h.gvr)
}

// hold returns gvr's informer, running or about to, and counts one more
// holder; each hold is undone by one release.
func (r *ResourceInformers) hold(gvr schema.GroupVersionResource) (informers.GenericInformer, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if h, ok := r.held[gvr]; ok {
		h.holders++
		return h.informer, nil
	}
	if r.ctx.Err() != nil {
		return nil, fmt.Errorf("informer for %s: %w", gvr, r.ctx.Err())
	}
	if r.typed != nil {
		if inf, err := r.typed.ForResource(gvr); err == nil {
			r.held[gvr] = &heldInformer{informer: inf, holders: 1}
			r.wg.Go(func() {
				select {
				case <-r.started:
					r.typed.Start(r.ctx.Done())
				case <-r.ctx.Done():
				}
			})
			return inf, nil
		}
	}
	ctx, stop := context.WithCancel(r.ctx)
	inf := metadatainformer.NewFilteredMetadataInformer(r.metadata, gvr, metav1.NamespaceAll, r.resync,
		cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}, nil)
	_ = inf.Informer().SetTransform(TrimManagedFields)
	r.wg.Go(func() { inf.Informer().RunWithContext(ctx) })
	r.held[gvr] = &heldInformer{informer: inf, holders: 1, stop: stop}
	return inf, nil
}

// release undoes one hold of gvr; the last stops a metadata informer.
func (r *ResourceInformers) release(gvr schema.GroupVersionResource) {
	r.mu.Lock()
	defer r.mu.Unlock()
	h, ok := r.held[gvr]
	if !ok {
		return
	}
	if h.holders--; h.holders > 0 {
		return
	}
	if h.stop != nil {
		h.stop()
	}
	delete(r.held, gvr)
}

// ForResource returns the informer of a held resource. It is
// k8s.io/controller-manager's InformerFactory method, for listers over
// the informers (quota evaluators); it does not make informers.
func (r *ResourceInformers) ForResource(gvr schema.GroupVersionResource) (informers.GenericInformer, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if h, ok := r.held[gvr]; ok {
		return h.informer, nil
	}
	return nil, fmt.Errorf("no controller holds an informer for %s", gvr)
}

// Wait waits for the informers NewResourceInformers' ctx stops (or
// Remove stopped) to return.
func (r *ResourceInformers) Wait() {
	r.wg.Wait()
}

// TrimManagedFields is the transform of the controllers' informers: no
// controller reads managed fields, and they are often most of an object's
// metadata (kube-controller-manager trims them too).
func TrimManagedFields(obj any) (any, error) {
	if o, err := meta.Accessor(obj); err == nil && o.GetManagedFields() != nil {
		o.SetManagedFields(nil)
	}
	return obj, nil
}
