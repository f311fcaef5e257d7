package controllers

import (
	"context"
	"errors"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	metadatafake "k8s.io/client-go/metadata/fake"
	"k8s.io/client-go/tools/cache"
)

// TestMonitors: Sync follows discovery, calls beforeStart once before the
// first new monitor and Started after each, keeps the monitors of a group
// whose discovery failed, and calls what Started returned when a monitor
// stops.
func TestMonitors(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan struct{})
	close(started)
	r := NewResourceInformers(ctx, nil, metadatafake.NewSimpleMetadataClient(metadatafake.NewTestScheme()), 0, started)
	defer func() {
		cancel()
		r.Wait()
	}()

	widgets := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	gadgets := schema.GroupVersionResource{Group: "example.com", Version: "v2", Resource: "gadgets"}
	var lists []*metav1.APIResourceList
	var discoveryErr error
	var startedMonitors, stoppedMonitors []string
	m := &Monitors[string]{
		Name:      "test",
		Informers: r,
		Discover:  func() ([]*metav1.APIResourceList, error) { return lists, discoveryErr },
		Pick: func(lists []*metav1.APIResourceList) map[schema.GroupVersionResource]string {
			out := map[schema.GroupVersionResource]string{}
			for _, l := range lists {
				gv, _ := schema.ParseGroupVersion(l.GroupVersion)
				for _, res := range l.APIResources {
					out[gv.WithResource(res.Name)] = res.Kind
				}
			}
			return out
		},
		Handler: func(context.Context, schema.GroupVersionResource, string) cache.ResourceEventHandler {
			return cache.ResourceEventHandlerFuncs{}
		},
		Started: func(gvr schema.GroupVersionResource) func() {
			startedMonitors = append(startedMonitors, gvr.Resource)
			return func() { stoppedMonitors = append(stoppedMonitors, gvr.Resource) }
		},
	}
	widgetList := &metav1.APIResourceList{GroupVersion: "example.com/v1", APIResources: []metav1.APIResource{{Name: "widgets", Kind: "Widget"}}}
	gadgetList := &metav1.APIResourceList{GroupVersion: "example.com/v2", APIResources: []metav1.APIResource{{Name: "gadgets", Kind: "Gadget"}}}
	cmList := &metav1.APIResourceList{GroupVersion: "v1", APIResources: []metav1.APIResource{{Name: "configmaps", Kind: "ConfigMap"}}}
	configMaps := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

	lists = []*metav1.APIResourceList{cmList, widgetList, gadgetList}
	before := 0
	added, removed, partial, err := m.Sync(ctx, func() { before++ })
	if !added || removed || partial != nil || err != nil || before != 1 {
		t.Fatalf("first sync: added %v removed %v partial %v err %v, beforeStart called %d times", added, removed, partial, err, before)
	}
	if got := m.Resources(); !slices.Equal(got, []schema.GroupVersionResource{configMaps, widgets, gadgets}) {
		t.Errorf("monitors %v", got)
	}
	slices.Sort(startedMonitors)
	if !slices.Equal(startedMonitors, []string{"configmaps", "gadgets", "widgets"}) {
		t.Errorf("Started for %v", startedMonitors)
	}
	if !cache.WaitFor(ctx, "", m.SyncedCheckers()...) || !m.Synced() || len(m.Unsynced()) != 0 {
		t.Errorf("not synced: %v", m.Unsynced())
	}

	// example.com/v2's discovery fails: its monitor stays; v1 is gone.
	lists = []*metav1.APIResourceList{cmList}
	discoveryErr = &discovery.ErrGroupDiscoveryFailed{Groups: map[schema.GroupVersion]error{gadgets.GroupVersion(): errors.New("down")}}
	added, removed, partial, err = m.Sync(ctx, func() { t.Error("beforeStart without a new monitor") })
	if added || !removed || partial == nil || err != nil {
		t.Errorf("partial sync: added %v removed %v partial %v err %v", added, removed, partial, err)
	}
	if got := m.Resources(); !slices.Equal(got, []schema.GroupVersionResource{configMaps, gadgets}) || !slices.Equal(stoppedMonitors, []string{"widgets"}) {
		t.Errorf("monitors %v, stopped %v", got, stoppedMonitors)
	}

	// Discovery fails altogether: nothing changes.
	discoveryErr = errors.New("unavailable")
	if added, removed, _, err := m.Sync(ctx, nil); added || removed || err == nil {
		t.Errorf("failed sync: added %v removed %v err %v", added, removed, err)
	}

	m.StopAll()
	slices.Sort(stoppedMonitors)
	if len(m.Resources()) != 0 || !slices.Equal(stoppedMonitors, []string{"configmaps", "gadgets", "widgets"}) {
		t.Errorf("after StopAll: monitors %v, stopped %v", m.Resources(), stoppedMonitors)
	}
}
