package resourcequota

import (
	"context"
	"errors"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	quota "k8s.io/apiserver/pkg/quota/v1"
	"k8s.io/apiserver/pkg/quota/v1/generic"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/gcp-project/gcp/pkg/controlplane/controllers"
	gcpquota "github.com/gcp-project/gcp/pkg/controlplane/quota"
)

// monitors keeps an event handler (a monitor) on the informer of each
// resource that discovery lists as namespaced with the verbs create, list,
// watch and delete, and an object count evaluator for it in the registry.
// The informers are shared with the garbage collector
// (controllers.ResourceInformers). The set follows discovery: sync adds
// monitors and evaluators for new resources (new custom resource
// definitions) and removes those of removed ones, releasing their
// informers.
type monitors struct {
	informers  *controllers.ResourceInformers
	discover   func() ([]*metav1.APIResourceList, error)
	registry   quota.Registry
	listerFunc quota.ListerForResourceFunc
	replenish  func(ctx context.Context, gr schema.GroupResource, namespace string)

	mu      sync.Mutex
	running map[schema.GroupVersionResource]*monitor
}

// monitor is the handler registered on one resource's informer.
type monitor struct {
	handler *controllers.Handler
	// evaluator is the object count evaluator added for the resource,
	// nil when one was there already (a legacy one).
	evaluator quota.Evaluator
}

// sync reads discovery and adds and removes monitors to match; it reports
// whether monitors were added. Monitors of groups whose discovery failed
// are kept.
func (m *monitors) sync(ctx context.Context) (added bool, err error) {
	want, keep, err := controllers.Discovered(m.discover, quotableResources)
	if want == nil {
		return false, err
	}

	logger := klog.FromContext(ctx)
	m.mu.Lock()
	defer m.mu.Unlock()
	for gvr, mon := range m.running {
		if want[gvr] || keep(gvr) {
			continue
		}
		logger.V(2).Info("Stopping resource quota monitor", "resource", gvr)
		m.stop(gvr, mon)
	}
	var errs []error
	for gvr := range want {
		if _, ok := m.running[gvr]; ok {
			continue
		}
		mon, err := m.start(ctx, gvr)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		logger.V(2).Info("Started resource quota monitor", "resource", gvr)
		m.running[gvr] = mon
		added = true
	}
	return added, errors.Join(append(errs, err)...)
}

// stop removes mon's handler and evaluator; m.mu is held.
func (m *monitors) stop(gvr schema.GroupVersionResource, mon *monitor) {
	mon.handler.Remove()
	if mon.evaluator != nil {
		m.registry.Remove(mon.evaluator)
	}
	delete(m.running, gvr)
}

// start adds a monitor on gvr's informer and, unless the registry has
// one, an object count evaluator for it.
func (m *monitors) start(ctx context.Context, gvr schema.GroupVersionResource) (*monitor, error) {
	gr := gvr.GroupResource()
	replenish := func(obj any) {
		if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = tombstone.Obj
		}
		o, err := meta.Accessor(obj)
		if err != nil {
			return
		}
		m.replenish(ctx, gr, o.GetNamespace())
	}
	handler, err := m.informers.AddEventHandler(gvr, cache.ResourceEventHandlerDetailedFuncs{
		// Objects of the first listing are counted when the quotas
		// are recomputed after the monitors synced.
		AddFunc: func(obj any, initial bool) {
			if !initial {
				replenish(obj)
			}
		},
		DeleteFunc: replenish,
	})
	if err != nil {
		return nil, err
	}
	mon := &monitor{handler: handler}
	if m.registry.Get(gr) == nil {
		mon.evaluator = generic.NewObjectCountEvaluator(gr, generic.ListResourceUsingListerFunc(m.listerFunc, gvr), "")
		m.registry.Add(mon.evaluator)
	}
	return mon, nil
}

// syncedCheckers are done once each running monitor has seen its
// informer's first listing.
func (m *monitors) syncedCheckers() []cache.DoneChecker {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]cache.DoneChecker, 0, len(m.running))
	for _, mon := range m.running {
		out = append(out, mon.handler.HasSyncedChecker())
	}
	return out
}

// stopAll removes every monitor.
func (m *monitors) stopAll() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for gvr, mon := range m.running {
		m.stop(gvr, mon)
	}
}

// quotableResources returns the resources of lists that support create,
// list, watch and delete, subresources and ignored resources left out.
func quotableResources(lists []*metav1.APIResourceList) map[schema.GroupVersionResource]bool {
	out := map[schema.GroupVersionResource]bool{}
	verbs := discovery.SupportsAllVerbs{Verbs: []string{"create", "list", "watch", "delete"}}
	gvrs, _ := discovery.GroupVersionResources(discovery.FilteredBy(verbs, lists))
	for gvr := range gvrs {
		if strings.Contains(gvr.Resource, "/") || isIgnored(gvr.GroupResource()) {
			continue
		}
		out[gvr] = true
	}
	return out
}

// isIgnored reports whether quotas never count gr.
func isIgnored(gr schema.GroupResource) bool {
	_, ok := gcpquota.IgnoredResources()[gr]
	return ok
}
