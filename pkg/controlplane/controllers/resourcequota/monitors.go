package resourcequota

import (
	"context"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	quota "k8s.io/apiserver/pkg/quota/v1"
	"k8s.io/apiserver/pkg/quota/v1/generic"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/tools/cache"

	"github.com/gcp-project/gcp/pkg/controlplane/controllers"
	gcpquota "github.com/gcp-project/gcp/pkg/controlplane/quota"
)

// monitors keeps an event handler (a monitor) on the informer of each
// resource that discovery lists as namespaced with the verbs create, list,
// watch and delete, and an object count evaluator for it in the registry
// (unless it has one already: a legacy one). The informers are shared with
// the garbage collector (controllers.ResourceInformers).
type monitors = controllers.Monitors[bool]

// newMonitors returns the monitors that add evaluators to registry and
// call replenish when an object of a monitored resource is created (after
// the first listing) or deleted.
func newMonitors(informers *controllers.ResourceInformers, discover func() ([]*metav1.APIResourceList, error), registry quota.Registry, listerFunc quota.ListerForResourceFunc, replenish func(ctx context.Context, gr schema.GroupResource, namespace string)) *monitors {
	return &monitors{
		Name:      "resource quota",
		Informers: informers,
		Discover:  discover,
		Pick:      quotableResources,
		Handler: func(ctx context.Context, gvr schema.GroupVersionResource, _ bool) cache.ResourceEventHandler {
			gr := gvr.GroupResource()
			replenishFor := func(obj any) {
				if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
					obj = tombstone.Obj
				}
				o, err := meta.Accessor(obj)
				if err != nil {
					return
				}
				replenish(ctx, gr, o.GetNamespace())
			}
			return cache.ResourceEventHandlerDetailedFuncs{
				// Objects of the first listing are counted when the
				// quotas are recomputed after the monitors synced.
				AddFunc: func(obj any, initial bool) {
					if !initial {
						replenishFor(obj)
					}
				},
				DeleteFunc: replenishFor,
			}
		},
		Started: func(gvr schema.GroupVersionResource) func() {
			if registry.Get(gvr.GroupResource()) != nil {
				return nil
			}
			evaluator := generic.NewObjectCountEvaluator(gvr.GroupResource(), generic.ListResourceUsingListerFunc(listerFunc, gvr), "")
			registry.Add(evaluator)
			return func() { registry.Remove(evaluator) }
		},
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
