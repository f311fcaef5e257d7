package garbagecollector

import (
	"context"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
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

// monitors keeps one metadata informer (a monitor) running for each
// resource that discovery lists with the verbs list, watch and delete,
// and feeds their notifications to the graph builder. The set follows
// discovery: sync starts monitors for new resources (new custom resource
// definitions) and stops those of removed ones.
type monitors struct {
	client   metadata.Interface
	discover func() ([]*metav1.APIResourceList, error)
	handler  func(schema.GroupVersionKind) cache.ResourceEventHandler

	mu      sync.Mutex
	running map[schema.GroupVersionResource]*monitor
	wg      sync.WaitGroup
}

// monitor is one resource's informer and the function that stops it.
type monitor struct {
	informer cache.SharedIndexInformer
	stop     context.CancelFunc
}

// sync reads discovery and starts and stops monitors to match; monitors
// run until stopAll or until ctx is done. It reports whether the set
// changed. When discovery fails for some groups, the monitors of those
// groups are kept.
func (m *monitors) sync(ctx context.Context) (changed bool, err error) {
	want, keep, err := controllers.Discovered(m.discover, deletableResources)
	if want == nil {
		return false, err
	}

	logger := klog.FromContext(ctx)
	m.mu.Lock()
	defer m.mu.Unlock()
	for gvr, mon := range m.running {
		if _, ok := want[gvr]; ok || keep(gvr) {
			continue
		}
		logger.V(2).Info("Stopping garbage collector monitor", "resource", gvr)
		mon.stop()
		delete(m.running, gvr)
		changed = true
	}
	for gvr, kind := range want {
		if _, ok := m.running[gvr]; ok {
			continue
		}
		logger.V(2).Info("Starting garbage collector monitor", "resource", gvr)
		m.running[gvr] = m.start(ctx, gvr, gvr.GroupVersion().WithKind(kind))
		changed = true
	}
	return changed, err
}

// start runs a metadata informer for gvr. Its cache keeps no managed
// fields: the graph never looks at them.
func (m *monitors) start(ctx context.Context, gvr schema.GroupVersionResource, gvk schema.GroupVersionKind) *monitor {
	ctx, stop := context.WithCancel(ctx)
	inf := metadatainformer.NewFilteredMetadataInformer(m.client, gvr, metav1.NamespaceAll, 0, cache.Indexers{}, nil).Informer()
	_ = inf.SetTransform(func(obj any) (any, error) {
		if o, err := meta.Accessor(obj); err == nil {
			o.SetManagedFields(nil)
		}
		return obj, nil
	})
	_, _ = inf.AddEventHandler(m.handler(gvk))
	m.wg.Go(func() { inf.RunWithContext(ctx) })
	return &monitor{informer: inf, stop: stop}
}

// synced reports whether there are monitors and all have listed their
// resource once.
func (m *monitors) synced() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, mon := range m.running {
		if !mon.informer.HasSynced() {
			return false
		}
	}
	return len(m.running) > 0
}

// stopAll stops every monitor and waits for them.
func (m *monitors) stopAll() {
	m.mu.Lock()
	for gvr, mon := range m.running {
		mon.stop()
		delete(m.running, gvr)
	}
	m.mu.Unlock()
	m.wg.Wait()
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
