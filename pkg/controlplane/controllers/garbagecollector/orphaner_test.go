package garbagecollector

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	clienttesting "k8s.io/client-go/testing"
)

// runQueued works attemptToDelete and the events it makes until both are
// empty, as the workers and the graph builder would.
func (c *controller) runQueued(t *testing.T) {
	t.Helper()
	for range 100 {
		c.processEvents()
		if c.builder.attemptToDelete.Len() == 0 {
			return
		}
		n, _ := c.builder.attemptToDelete.Get()
		_ = c.collector.attemptToDelete(context.Background(), n, true)
		c.builder.attemptToDelete.Done(n)
	}
	t.Fatal("attemptToDelete does not settle")
}

// TestOrphanedOwnerDependentSeenLate: the orderings in which the graph
// gets a dependent of an owner deleted with the orphan policy only after
// the orphaner removed the owner's finalizer (its resource not watched
// yet, its event late): the dependent loses the reference and stays,
// whether its event comes before or after the owner's deletion event.
// Losing the reference to a remembered owner leaves the other references
// to decide.
func TestOrphanedOwnerDependentSeenLate(t *testing.T) {
	owner := deleted(configMap("owner", "u-owner"), metav1.FinalizerOrphanDependents)
	gone := configMap("gone", "u-gone")
	live := configMap("live", "u-live")
	for _, tc := range []struct {
		name string
		// dependentFirst: the dependent's add event comes before the
		// owner's deletion event.
		dependentFirst bool
		others         []metav1.OwnerReference
		wantOwners     []string
		wantDeleted    bool
	}{
		{name: "owner deletion seen first"},
		{name: "dependent seen first", dependentFirst: true},
		{name: "another owner lives", others: []metav1.OwnerReference{refTo(live, false)}, wantOwners: []string{"live"}},
		{name: "another owner is gone too", others: []metav1.OwnerReference{refTo(gone, false)}, wantDeleted: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dep := configMap("dependent", "u-dep", append([]metav1.OwnerReference{refTo(owner, true)}, tc.others...)...)
			c, client := testController(t, owner, live, dep)
			ctx := context.Background()
			observeAll(c, live)
			c.notify(addEvent, owner, nil)
			if got := drain(c.builder.attemptToOrphan); !slices.Equal(got, []string{"owner"}) {
				t.Fatalf("attemptToOrphan %v", got)
			}
			// The graph does not hold the dependent yet.
			if err := c.collector.attemptToOrphan(ctx, nodeOf(t, c, "u-owner"), true); err != nil {
				t.Fatal(err)
			}
			if got := stored(t, client, "owner").Finalizers; len(got) != 0 {
				t.Fatalf("owner finalizers %v", got)
			}
			// The API server deletes the owner.
			if err := client.Resource(configMaps).Namespace("ns").Delete(ctx, "owner", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			if tc.dependentFirst {
				c.notify(addEvent, dep, nil)
				c.runQueued(t)
				c.notify(deleteEvent, owner, nil)
			} else {
				c.notify(deleteEvent, owner, nil)
				c.notify(addEvent, dep, nil)
			}
			c.runQueued(t)

			got, err := client.Resource(configMaps).Namespace("ns").Get(ctx, "dependent", metav1.GetOptions{})
			if tc.wantDeleted {
				if err == nil {
					t.Fatalf("dependent kept, owners %v; actions %v", got.OwnerReferences, actions(client))
				}
				return
			}
			if err != nil {
				t.Fatalf("dependent: %v; actions %v", err, actions(client))
			}
			var owners []string
			for _, ref := range got.OwnerReferences {
				owners = append(owners, ref.Name)
			}
			if !slices.Equal(owners, tc.wantOwners) {
				t.Errorf("dependent owners %v, want %v", owners, tc.wantOwners)
			}
		})
	}
}

// TestResyncPausesWorkersUntilGraphHoldsNewResource: an owner with the
// orphan finalizer listed before its dependent (with other objects
// between them) in the first listing of a newly watched resource. The
// orphan worker, running all along, must not act until the graph holds
// the whole listing, so it orphans the dependent before it removes the
// owner's finalizer.
func TestResyncPausesWorkersUntilGraphHoldsNewResource(t *testing.T) {
	owner := deleted(configMap("a-owner", "u-owner"), metav1.FinalizerOrphanDependents)
	objs := []*metav1.PartialObjectMetadata{owner}
	for i := range 200 {
		objs = append(objs, configMap(fmt.Sprintf("m-other-%03d", i), types.UID(fmt.Sprint("u-other-", i))))
	}
	objs = append(objs, configMap("z-dependent", "u-dep", refTo(owner, true)))
	c, client := testController(t, objs...)
	d := &fakeDiscovery{}
	d.set(nil, resourceList("v1", metav1.APIResource{Name: "configmaps", Kind: "ConfigMap", Namespaced: true, Verbs: allVerbs}))
	c.monitors.Discover = d.discover

	ctx, cancel := context.WithCancel(context.Background())
	defer c.monitors.StopAll()
	defer cancel()
	go c.builder.run()
	go c.collector.runOrphanWorker(ctx)

	c.resync(ctx)
	err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		return len(stored(t, client, "a-owner").Finalizers) == 0, nil
	})
	if err != nil {
		t.Fatalf("the orphan finalizer was not removed: %v", actions(client))
	}
	if got := stored(t, client, "z-dependent").OwnerReferences; len(got) != 0 {
		t.Errorf("dependent owners %v: the orphaner acted before the graph held the dependent", got)
	}
	var patched []string
	for _, a := range client.Actions() {
		if p, ok := a.(clienttesting.PatchAction); ok {
			patched = append(patched, p.GetName())
		}
	}
	if !slices.Equal(patched, []string{"z-dependent", "a-owner"}) {
		t.Errorf("patched %v, want the dependent, then the owner", patched)
	}
}

// TestOrphanerWatchesNewResourcesFirst (issue 28): the dependent of an
// owner deleted with the orphan policy is of a resource that discovery
// serves but the collector does not watch yet (a custom resource
// definition newer than its last discovery). The orphaner reads discovery
// again and waits for the new resource's first listing before it reads
// the owner's dependents, so it removes the dependent's reference before
// the owner's finalizer: a successor, which would not remember the owner,
// has nothing left to delete.
func TestOrphanerWatchesNewResourcesFirst(t *testing.T) {
	owner := deleted(configMap("owner", "u-owner"), metav1.FinalizerOrphanDependents)
	dep := object(widgetKind, "ns", "dependent", "u-dep", refTo(owner, true))
	c, client := testController(t, owner, dep)
	ctx := watchBeforeWidgets(t, c)
	go c.collector.runOrphanWorker(ctx)

	err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		return len(stored(t, client, "owner").Finalizers) == 0, nil
	})
	if err != nil {
		t.Fatalf("the orphan finalizer was not removed: %v", actions(client))
	}
	got, err := client.Resource(widgets).Namespace("ns").Get(ctx, "dependent", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.OwnerReferences) != 0 {
		t.Errorf("dependent owners %v: the orphaner removed the finalizer without knowing the dependent", got.OwnerReferences)
	}
}
