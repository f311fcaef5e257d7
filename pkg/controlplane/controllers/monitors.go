package controllers

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// Monitors keeps an event handler (a monitor) on the ResourceInformers'
// informer of each resource that a controller following every resource of
// some kind picks from discovery: the garbage collector (every deletable
// resource) and the quota controller (every countable one). The set follows
// discovery: Sync adds monitors for new resources (new custom resource
// definitions) and removes those of removed ones, releasing their
// informers. V is what Pick tells Handler of a resource (its kind, say).
//
// Set the exported fields before the first Sync and leave them alone
// afterwards.
type Monitors[V any] struct {
	// Name is the controller's, as its log says it ("garbage collector").
	Name string
	// Informers hold the informers the monitors are registered on.
	Informers *ResourceInformers
	// Discover lists the served resources.
	Discover func() ([]*metav1.APIResourceList, error)
	// Pick selects the resources to monitor from what Discover lists.
	Pick func([]*metav1.APIResourceList) map[schema.GroupVersionResource]V
	// Handler is the event handler a new monitor registers for gvr.
	Handler func(ctx context.Context, gvr schema.GroupVersionResource, v V) cache.ResourceEventHandler
	// Started, if not nil, is called after a monitor for gvr has started;
	// what it returns, if not nil, is called when that monitor stops.
	Started func(gvr schema.GroupVersionResource) (stopped func())

	mu      sync.Mutex
	running map[schema.GroupVersionResource]*monitor
}

// monitor is one resource's handler and what stops with it.
type monitor struct {
	handler *Handler
	stopped func()
}

// Sync reads discovery and adds and removes monitors to match. It reports
// whether it added and whether it removed monitors. When discovery fails
// for some groups, the monitors of those groups are kept and partial says
// so; err is a failure that leaves resources served but not monitored:
// discovery failed altogether, or a monitor could not be started.
// beforeStart, if not nil, is called once, before the first new monitor
// starts.
func (m *Monitors[V]) Sync(ctx context.Context, beforeStart func()) (added, removed bool, partial, err error) {
	want, keep, derr := Discovered(m.Discover, m.Pick)
	if want == nil {
		return false, false, nil, fmt.Errorf("discovery: %w", derr)
	}

	logger := klog.FromContext(ctx)
	m.mu.Lock()
	defer m.mu.Unlock()
	for gvr, mon := range m.running {
		if _, ok := want[gvr]; ok || keep(gvr) {
			continue
		}
		logger.V(2).Info("Stopping "+m.Name+" monitor", "resource", gvr)
		m.stop(gvr, mon)
		removed = true
	}
	var errs []error
	for gvr, v := range want {
		if _, ok := m.running[gvr]; ok {
			continue
		}
		if beforeStart != nil {
			beforeStart()
			beforeStart = nil
		}
		handler, err := m.Informers.AddEventHandler(gvr, m.Handler(ctx, gvr, v))
		if err != nil {
			errs = append(errs, fmt.Errorf("watching %s: %w", gvr, err))
			continue
		}
		mon := &monitor{handler: handler}
		if m.Started != nil {
			mon.stopped = m.Started(gvr)
		}
		logger.V(2).Info("Started "+m.Name+" monitor", "resource", gvr)
		if m.running == nil {
			m.running = map[schema.GroupVersionResource]*monitor{}
		}
		m.running[gvr] = mon
		added = true
	}
	return added, removed, derr, errors.Join(errs...)
}

// stop removes mon; m.mu is held.
func (m *Monitors[V]) stop(gvr schema.GroupVersionResource, mon *monitor) {
	mon.handler.Remove()
	if mon.stopped != nil {
		mon.stopped()
	}
	delete(m.running, gvr)
}

// Synced reports whether there are monitors and all have seen their
// informer's first listing.
func (m *Monitors[V]) Synced() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, mon := range m.running {
		if !mon.handler.HasSynced() {
			return false
		}
	}
	return len(m.running) > 0
}

// SyncedCheckers are done once each running monitor has seen its
// informer's first listing, for cache.WaitFor.
func (m *Monitors[V]) SyncedCheckers() []cache.DoneChecker {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]cache.DoneChecker, 0, len(m.running))
	for _, mon := range m.running {
		out = append(out, mon.handler.HasSyncedChecker())
	}
	return out
}

// Unsynced returns the resources whose monitors have not seen their
// informer's first listing, sorted.
func (m *Monitors[V]) Unsynced() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for gvr, mon := range m.running {
		if !mon.handler.HasSynced() {
			out = append(out, gvr.String())
		}
	}
	slices.Sort(out)
	return out
}

// Resources returns the resources monitored, sorted.
func (m *Monitors[V]) Resources() []schema.GroupVersionResource {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]schema.GroupVersionResource, 0, len(m.running))
	for gvr := range m.running {
		out = append(out, gvr)
	}
	slices.SortFunc(out, func(a, b schema.GroupVersionResource) int {
		return cmp.Compare(a.String(), b.String())
	})
	return out
}

// StopAll removes every monitor.
func (m *Monitors[V]) StopAll() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for gvr, mon := range m.running {
		m.stop(gvr, mon)
	}
}
