package garbagecollector

import (
	"context"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	metadatafake "k8s.io/client-go/metadata/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"github.com/gcp-project/gcp/pkg/controlplane/controllers"
)

var (
	configMapKind   = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	namespaceKind   = schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}
	widgetKind      = schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}
	widgets         = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	configMaps      = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	testDeletedTime = metav1.NewTime(time.Unix(1700000000, 0))
)

// get returns the node of uid, if any.
func (g *graph) get(uid types.UID) (*node, bool) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	n, ok := g.nodes[uid]
	return n, ok
}

// resettableMapper makes a static mapper a meta.ResettableRESTMapper.
type resettableMapper struct{ meta.RESTMapper }

func (resettableMapper) Reset() {}

// testMapper maps ConfigMap and Widget (namespaced) and Namespace
// (cluster-scoped).
func testMapper() meta.ResettableRESTMapper {
	m := meta.NewDefaultRESTMapper(nil)
	m.Add(configMapKind, meta.RESTScopeNamespace)
	m.Add(widgetKind, meta.RESTScopeNamespace)
	m.Add(namespaceKind, meta.RESTScopeRoot)
	return resettableMapper{m}
}

// object is the metadata of an object of kind gvk.
func object(gvk schema.GroupVersionKind, ns, name string, uid types.UID, owners ...metav1.OwnerReference) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{
		TypeMeta: metav1.TypeMeta{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind},
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ns, Name: name, UID: uid, ResourceVersion: "7", OwnerReferences: owners,
		},
	}
}

func configMap(name string, uid types.UID, owners ...metav1.OwnerReference) *metav1.PartialObjectMetadata {
	return object(configMapKind, "ns", name, uid, owners...)
}

// deleted is obj with a deletion timestamp and finalizers.
func deleted(obj *metav1.PartialObjectMetadata, finalizers ...string) *metav1.PartialObjectMetadata {
	obj = obj.DeepCopy()
	obj.DeletionTimestamp = &testDeletedTime
	obj.Finalizers = finalizers
	return obj
}

// refTo is an owner reference to obj.
func refTo(obj *metav1.PartialObjectMetadata, block bool) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: obj.APIVersion, Kind: obj.Kind, Name: obj.Name, UID: obj.UID, BlockOwnerDeletion: &block}
}

// identity is where obj is.
func identity(obj *metav1.PartialObjectMetadata) objectRef {
	return objectRef{APIVersion: obj.APIVersion, Kind: obj.Kind, Namespace: obj.Namespace, Name: obj.Name, UID: obj.UID}
}

// testController is a controller on a fake metadata client holding objs;
// nothing runs: tests feed events and call workers themselves.
func testController(t *testing.T, objs ...*metav1.PartialObjectMetadata) (*controller, *metadatafake.FakeMetadataClient) {
	t.Helper()
	scheme := metadatafake.NewTestScheme()
	metav1.AddMetaToScheme(scheme)
	var tracked []runtime.Object
	for _, o := range objs {
		tracked = append(tracked, o)
	}
	client := metadatafake.NewSimpleMetadataClient(scheme, tracked...)
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan struct{})
	close(started)
	informers := controllers.NewResourceInformers(ctx, nil, client, 0, started)
	t.Cleanup(func() {
		cancel()
		informers.Wait()
	})
	c := newController(config{
		metadata:        client,
		informers:       informers,
		mapper:          testMapper(),
		discover:        func() ([]*metav1.APIResourceList, error) { return nil, nil },
		workers:         1,
		discoveryPeriod: time.Second,
	})
	t.Cleanup(func() {
		c.builder.events.ShutDown()
		c.builder.attemptToDelete.ShutDown()
		c.builder.attemptToOrphan.ShutDown()
	})
	return c, client
}

// watchBeforeWidgets starts c's graph builder on a discovery that serves
// configmaps only and has c watch them; then the discovery serves widgets
// too, as when their definition is created after c's last discovery. The
// returned context is for c's workers; the test's end cancels it and
// stops c's monitors.
func watchBeforeWidgets(t *testing.T, c *controller) context.Context {
	t.Helper()
	d := &fakeDiscovery{}
	cms := resourceList("v1", metav1.APIResource{Name: "configmaps", Kind: "ConfigMap", Namespaced: true, Verbs: allVerbs})
	d.set(nil, cms)
	c.monitors.Discover = d.discover
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(c.monitors.StopAll)
	t.Cleanup(cancel)
	go c.builder.run()
	if err := c.resync(ctx); err != nil {
		t.Fatal(err)
	}
	d.set(nil, cms, resourceList("example.com/v1", metav1.APIResource{Name: "widgets", Kind: "Widget", Namespaced: true, Verbs: allVerbs}))
	return ctx
}

// notify passes informer notifications about obj (kind taken from its
// type meta) through the event handler and the graph builder.
func (c *controller) notify(typ eventType, obj, old *metav1.PartialObjectMetadata) {
	h := eventHandler(obj.GroupVersionKind(), c.builder.add)
	switch typ {
	case addEvent:
		h.OnAdd(obj, false)
	case updateEvent:
		h.OnUpdate(old, obj)
	case deleteEvent:
		h.OnDelete(cache.DeletedFinalStateUnknown{Key: obj.Namespace + "/" + obj.Name, Obj: obj})
	}
	c.processEvents()
}

// processEvents applies all queued events to the graph.
func (c *controller) processEvents() {
	for c.builder.events.Len() > 0 {
		e, _ := c.builder.events.Get()
		c.builder.process(e)
		c.builder.events.Done(e)
	}
}

// drain empties q and returns where its nodes were, sorted.
func drain(q interface {
	Len() int
	Get() (*node, bool)
	Done(*node)
}) []string {
	var out []string
	for q.Len() > 0 {
		n, _ := q.Get()
		out = append(out, n.identity.Name)
		q.Done(n)
	}
	slices.Sort(out)
	return out
}

// actions returns the fake client's actions as "verb resource name".
func actions(client *metadatafake.FakeMetadataClient) []string {
	var out []string
	for _, a := range client.Actions() {
		s := a.GetVerb() + " " + a.GetResource().Resource
		if n, ok := a.(interface{ GetName() string }); ok {
			s += " " + n.GetName()
		}
		out = append(out, s)
	}
	return out
}

// lastAction returns the fake client's last action of verb.
func lastAction(t *testing.T, client *metadatafake.FakeMetadataClient, verb string) clienttesting.Action {
	t.Helper()
	as := client.Actions()
	for i := len(as) - 1; i >= 0; i-- {
		if as[i].GetVerb() == verb {
			return as[i]
		}
	}
	t.Fatalf("no %s in %v", verb, actions(client))
	return nil
}
