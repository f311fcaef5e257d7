package garbagecollector

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/gcp-project/gcp/pkg/controlplane/controllers"
)

// ignoredResources are never watched: events are many, short-lived and
// nobody owns them, as upstream decided.
var ignoredResources = map[schema.GroupResource]bool{
	{Group: "", Resource: "events"}:              true,
	{Group: "events.k8s.io", Resource: "events"}: true,
}

// monitors keeps an event handler (a monitor) on an informer of each
// resource that discovery lists with the verbs list, watch and delete, and
// feeds their notifications to the graph builder. The informers are
// shared with the quota controller (controllers.ResourceInformers). The
// set follows discovery: sync adds monitors for new resources (new custom
// resource definitions) and removes those of removed ones.
type monitors struct {
	informers *controllers.ResourceInformers
	discover  func() ([]*metav1.APIResourceList, error)
	handler   func(schema.GroupVersionKind) cache.ResourceEventHandler

	mu      sync.Mutex
	running map[schema.GroupVersionResource]*monitor
}

// monitor is the graph builder's handler on one resource's informer.
type monitor = controllers.Handler

// sync reads discovery and adds and removes monitors to match. It reports
// whether the set changed. When discovery fails for some groups, the
// monitors of those groups are kept and partial says so; err is a failure
// that leaves resources served but not watched: discovery failed
// altogether, or a monitor could not be started. beforeStart, if not nil,
// is called once, before the first new monitor starts.
func (m *monitors) sync(ctx context.Context, beforeStart func()) (changed bool, partial, err error) {
	want, keep, derr := controllers.Discovered(m.discover, deletableResources)
	if want == nil {
		return false, nil, fmt.Errorf("discovery: %w", derr)
	}

	logger := klog.FromContext(ctx)
	m.mu.Lock()
	defer m.mu.Unlock()
	for gvr, mon := range m.running {
		if _, ok := want[gvr]; ok || keep(gvr) {
			continue
		}
		logger.V(2).Info("Stopping garbage collector monitor", "resource", gvr)
		m.stop(gvr, mon)
		changed = true
	}
	var errs []error
	for gvr, kind := range want {
		if _, ok := m.running[gvr]; ok {
			continue
		}
		if beforeStart != nil {
			beforeStart()
			beforeStart = nil
		}
		mon, err := m.start(gvr, gvr.GroupVersion().WithKind(kind))
		if err != nil {
			errs = append(errs, fmt.Errorf("watching %s: %w", gvr, err))
			continue
		}
		logger.V(2).Info("Started garbage collector monitor", "resource", gvr)
		m.running[gvr] = mon
		changed = true
	}
	return changed, derr, errors.Join(errs...)
}

// start registers the graph builder's handler on gvr's informer.
func (m *monitors) start(gvr schema.GroupVersionResource, gvk schema.GroupVersionKind) (*monitor, error) {
	return m.informers.AddEventHandler(gvr, m.handler(gvk))
}

// stop removes mon; m.mu is held.
func (m *monitors) stop(gvr schema.GroupVersionResource, mon *monitor) {
	mon.Remove()
	delete(m.running, gvr)
}

// synced reports whether there are monitors and all have seen their
// informer's first listing.
func (m *monitors) synced() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, mon := range m.running {
		if !mon.HasSynced() {
			return false
		}
	}
	return len(m.running) > 0
}

// syncedCheckers are done once each running monitor has seen its
// informer's first listing.
func (m *monitors) syncedCheckers() []cache.DoneChecker {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]cache.DoneChecker, 0, len(m.running))
	for _, mon := range m.running {
		out = append(out, mon.HasSyncedChecker())
	}
	return out
}

// unsynced returns the resources whose monitors have not seen their
// informer's first listing, sorted.
func (m *monitors) unsynced() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for gvr, mon := range m.running {
		if !mon.HasSynced() {
			out = append(out, gvr.String())
		}
	}
	slices.Sort(out)
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

// deletableResources returns the kind of each resource of lists that
// supports list, watch and delete, subresources and ignored resources
// left out.
func deletableResources(lists []*metav1.APIResourceList) map[schema.GroupVersionResource]string {
	out := map[schema.GroupVersionResource]string{}
	verbs := discovery.SupportsAllVerbs{Verbs: []string{"list", "watch", "delete"}}
	for _, list := range discovery.FilteredBy(verbs, lists) {
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range list.APIResources {
			if strings.Contains(r.Name, "/") || ignoredResources[gv.WithResource(r.Name).GroupResource()] {
				continue
			}
			out[gv.WithResource(r.Name)] = r.Kind
		}
	}
	return out
}
