package garbagecollector

import (
	"context"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/tools/cache"

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
// shared with the quota controller (controllers.ResourceInformers); the
// value of each resource is its kind.
type monitors = controllers.Monitors[string]

// newMonitors returns the monitors that feed add.
func newMonitors(informers *controllers.ResourceInformers, discover func() ([]*metav1.APIResourceList, error), add func(*event)) *monitors {
	return &monitors{
		Name:      "garbage collector",
		Informers: informers,
		Discover:  discover,
		Pick:      deletableResources,
		Handler: func(_ context.Context, gvr schema.GroupVersionResource, kind string) cache.ResourceEventHandler {
			return eventHandler(gvr.GroupVersion().WithKind(kind), add)
		},
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
