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
	c.monitors.discover = d.discover

	ctx, cancel := context.WithCancel(context.Background())
	defer c.monitors.stopAll()
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
