package garbagecollector

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
)

var allVerbs = metav1.Verbs{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}

func resourceList(gv string, resources ...metav1.APIResource) *metav1.APIResourceList {
	return &metav1.APIResourceList{GroupVersion: gv, APIResources: resources}
}

func TestDeletableResources(t *testing.T) {
	got := deletableResources([]*metav1.APIResourceList{
		resourceList("v1",
			metav1.APIResource{Name: "configmaps", Kind: "ConfigMap", Namespaced: true, Verbs: allVerbs},
			metav1.APIResource{Name: "namespaces/status", Kind: "Namespace", Verbs: allVerbs},
			metav1.APIResource{Name: "events", Kind: "Event", Namespaced: true, Verbs: allVerbs},
			metav1.APIResource{Name: "bindings", Kind: "Binding", Namespaced: true, Verbs: metav1.Verbs{"create"}},
		),
		resourceList("events.k8s.io/v1", metav1.APIResource{Name: "events", Kind: "Event", Namespaced: true, Verbs: allVerbs}),
		resourceList("example.com/v1", metav1.APIResource{Name: "widgets", Kind: "Widget", Namespaced: true, Verbs: metav1.Verbs{"delete", "list", "watch"}}),
	})
	want := map[schema.GroupVersionResource]string{
		configMaps: "ConfigMap",
		{Group: "example.com", Version: "v1", Resource: "widgets"}: "Widget",
	}
	if !maps.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

// fakeDiscovery answers what a test sets.
type fakeDiscovery struct {
	mu    sync.Mutex
	lists []*metav1.APIResourceList
	err   error
}

func (d *fakeDiscovery) set(err error, lists ...*metav1.APIResourceList) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.lists, d.err = lists, err
}

func (d *fakeDiscovery) discover() ([]*metav1.APIResourceList, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.lists, d.err
}

func running(m *monitors) []string {
	var out []string
	for _, gvr := range m.Resources() {
		out = append(out, gvr.Resource)
	}
	slices.Sort(out)
	return out
}

func TestMonitorsFollowDiscovery(t *testing.T) {
	c, _ := testController(t)
	d := &fakeDiscovery{}
	c.monitors.Discover = d.discover
	ctx, cancel := context.WithCancel(context.Background())
	defer func() {
		cancel()
		c.monitors.StopAll()
	}()
	cms := resourceList("v1", metav1.APIResource{Name: "configmaps", Kind: "ConfigMap", Namespaced: true, Verbs: allVerbs})
	widgetList := resourceList("example.com/v1", metav1.APIResource{Name: "widgets", Kind: "Widget", Namespaced: true, Verbs: allVerbs})

	steps := []struct {
		name    string
		err     error
		lists   []*metav1.APIResourceList
		changed bool
		want    []string
	}{
		{"start", nil, []*metav1.APIResourceList{cms}, true, []string{"configmaps"}},
		{"unchanged", nil, []*metav1.APIResourceList{cms}, false, []string{"configmaps"}},
		{"new resource", nil, []*metav1.APIResourceList{cms, widgetList}, true, []string{"configmaps", "widgets"}},
		{"group discovery failed", &discovery.ErrGroupDiscoveryFailed{Groups: map[schema.GroupVersion]error{{Group: "example.com", Version: "v1"}: errors.New("unavailable")}}, []*metav1.APIResourceList{cms}, false, []string{"configmaps", "widgets"}},
		{"resource removed", nil, []*metav1.APIResourceList{cms}, true, []string{"configmaps"}},
		{"discovery failed", errors.New("down"), nil, false, []string{"configmaps"}},
	}
	for _, s := range steps {
		d.set(s.err, s.lists...)
		added, removed, partial, err := c.monitors.Sync(ctx, nil)
		changed := added || removed
		// A group's failure is partial; discovery's failure is not.
		var groups *discovery.ErrGroupDiscoveryFailed
		if wantPartial := errors.As(s.err, &groups); (partial != nil) != wantPartial || (err != nil) != (s.err != nil && !wantPartial) {
			t.Errorf("%s: partial %v, err %v", s.name, partial, err)
		}
		if changed != s.changed {
			t.Errorf("%s: changed %v, want %v", s.name, changed, s.changed)
		}
		if got := running(c.monitors); !slices.Equal(got, s.want) {
			t.Errorf("%s: monitors %v, want %v", s.name, got, s.want)
		}
	}
}

// TestRun runs the whole controller on fakes: a dependent whose owner
// does not exist is deleted, and Run returns when its context ends.
func TestRun(t *testing.T) {
	owner := configMap("owner", "u-owner")
	c, client := testController(t, configMap("child", "u-child", refTo(owner, false)), configMap("unowned", "u-unowned"))
	d := &fakeDiscovery{}
	d.set(nil, resourceList("v1", metav1.APIResource{Name: "configmaps", Kind: "ConfigMap", Namespaced: true, Verbs: allVerbs}))
	c.monitors.Discover = d.discover

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Run(ctx)
	}()
	err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := client.Resource(configMaps).Namespace("ns").Get(ctx, "child", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Fatalf("child not deleted: %v", actions(client))
	}
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return")
	}
	if _, err := client.Resource(configMaps).Namespace("ns").Get(context.Background(), "unowned", metav1.GetOptions{}); err != nil {
		t.Errorf("unowned: %v", err)
	}
}
