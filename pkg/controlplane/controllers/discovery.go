package controllers

import (
	"errors"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
)

// Discovered is for controllers that follow every resource of some kind
// (one informer each): it calls discover and returns the resources pick
// selects from what it lists, and keep, which says whether a followed
// resource that is no longer listed is to be kept anyway because the
// discovery of its group version failed. err is a partial discovery
// failure, to report; when discovery failed altogether or pick selected
// nothing, want is nil and err says why.
func Discovered[V any](discover func() ([]*metav1.APIResourceList, error), pick func([]*metav1.APIResourceList) map[schema.GroupVersionResource]V) (want map[schema.GroupVersionResource]V, keep func(schema.GroupVersionResource) bool, err error) {
	lists, err := discover()
	failed, partial := discovery.GroupDiscoveryFailedErrorGroups(err)
	if err != nil && !partial {
		return nil, nil, err
	}
	want = pick(lists)
	if len(want) == 0 {
		return nil, nil, errors.Join(err, errors.New("discovery lists no resources"))
	}
	keep = func(gvr schema.GroupVersionResource) bool {
		_, ok := failed[gvr.GroupVersion()]
		return ok
	}
	return want, keep, err
}
