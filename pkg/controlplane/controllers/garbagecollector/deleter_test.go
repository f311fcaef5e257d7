package garbagecollector

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	metadatafake "k8s.io/client-go/metadata/fake"
	clienttesting "k8s.io/client-go/testing"
)

// nodeOf returns the graph node of uid.
func nodeOf(t *testing.T, c *controller, uid types.UID) *node {
	t.Helper()
	n, ok := c.builder.graph.get(uid)
	if !ok {
		t.Fatalf("no node %s", uid)
	}
	return n
}

// observeAll notifies the controller of objs, then forgets what that
// queued.
func observeAll(c *controller, objs ...*metav1.PartialObjectMetadata) {
	for _, o := range objs {
		c.notify(addEvent, o, nil)
	}
	drain(c.builder.attemptToDelete)
	drain(c.builder.attemptToOrphan)
}

// stored returns the fake's copy of configmap ns/name.
func stored(t *testing.T, client *metadatafake.FakeMetadataClient, name string) *metav1.PartialObjectMetadata {
	t.Helper()
	obj, err := client.Resource(configMaps).Namespace("ns").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return obj
}

func TestDeleteDecisions(t *testing.T) {
	owner := configMap("owner", "u-owner")
	other := configMap("other", "u-other")
	foreground := deleted(owner, metav1.FinalizerDeleteDependents)
	orphaning := configMap("child", "u-child", refTo(owner, false))
	orphaning.Finalizers = []string{metav1.FinalizerOrphanDependents}
	for _, tc := range []struct {
		name string
		// server are the objects that exist; graph the ones observed.
		server, graph []*metav1.PartialObjectMetadata
		// want is the propagation policy of the child's deletion, or
		// "" for none.
		want metav1.DeletionPropagation
	}{{
		name:   "owner gone",
		server: []*metav1.PartialObjectMetadata{configMap("child", "u-child", refTo(owner, false))},
		want:   metav1.DeletePropagationBackground,
	}, {
		name:   "owner re-created with another uid",
		server: []*metav1.PartialObjectMetadata{configMap("owner", "u-new"), configMap("child", "u-child", refTo(owner, false))},
		want:   metav1.DeletePropagationBackground,
	}, {
		name:   "owner exists",
		server: []*metav1.PartialObjectMetadata{owner, configMap("child", "u-child", refTo(owner, false))},
	}, {
		name:   "owner gone, child has the orphan finalizer",
		server: []*metav1.PartialObjectMetadata{orphaning},
		want:   metav1.DeletePropagationOrphan,
	}, {
		name:   "owner waits for its dependents, child has none",
		server: []*metav1.PartialObjectMetadata{foreground, configMap("child", "u-child", refTo(owner, true))},
		want:   metav1.DeletePropagationBackground,
	}, {
		name:   "owner waits for its dependents, child has some",
		server: []*metav1.PartialObjectMetadata{foreground, configMap("child", "u-child", refTo(owner, true))},
		graph:  []*metav1.PartialObjectMetadata{configMap("grandchild", "u-grandchild", metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "child", UID: "u-child"})},
		want:   metav1.DeletePropagationForeground,
	}, {
		name:   "one owner gone, another exists",
		server: []*metav1.PartialObjectMetadata{other, configMap("child", "u-child", refTo(owner, false), refTo(other, false))},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			c, client := testController(t, tc.server...)
			observeAll(c, append(tc.server, tc.graph...)...)
			if err := c.collector.attemptToDelete(context.Background(), nodeOf(t, c, "u-child"), true); err != nil {
				t.Fatal(err)
			}
			var got []clienttesting.DeleteActionImpl
			for _, a := range client.Actions() {
				if d, ok := a.(clienttesting.DeleteActionImpl); ok {
					got = append(got, d)
				}
			}
			if tc.want == "" {
				if len(got) != 0 {
					t.Fatalf("deleted: %v", actions(client))
				}
				return
			}
			if len(got) != 1 || got[0].Name != "child" {
				t.Fatalf("actions %v, want the child deleted", actions(client))
			}
			opts := got[0].DeleteOptions
			if p := opts.Preconditions; p == nil || p.UID == nil || *p.UID != "u-child" || p.ResourceVersion == nil || *p.ResourceVersion != "7" {
				t.Errorf("preconditions %+v, want the child's uid and resourceVersion", p)
			}
			if opts.PropagationPolicy == nil || *opts.PropagationPolicy != tc.want {
				t.Errorf("propagation %v, want %s", opts.PropagationPolicy, tc.want)
			}
		})
	}
}

func TestDanglingReferenceIsRemovedWhenAnotherOwnerLives(t *testing.T) {
	owner := configMap("owner", "u-owner")
	other := configMap("other", "u-other")
	c, client := testController(t, other, configMap("child", "u-child", refTo(owner, false), refTo(other, false)))
	observeAll(c, other, configMap("child", "u-child", refTo(owner, false), refTo(other, false)))

	if err := c.collector.attemptToDelete(context.Background(), nodeOf(t, c, "u-child"), true); err != nil {
		t.Fatal(err)
	}
	patch := lastAction(t, client, "patch").(clienttesting.PatchActionImpl)
	if patch.PatchType != types.MergePatchType {
		t.Errorf("patch type %s, want a merge patch (custom resources support no strategic merge)", patch.PatchType)
	}
	var body struct {
		Metadata struct {
			ResourceVersion string                  `json:"resourceVersion"`
			OwnerReferences []metav1.OwnerReference `json:"ownerReferences"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(patch.Patch, &body); err != nil {
		t.Fatal(err)
	}
	if body.Metadata.ResourceVersion != "7" {
		t.Errorf("patch %s, want conditioned on resourceVersion 7", patch.Patch)
	}
	if got := stored(t, client, "child").OwnerReferences; len(got) != 1 || got[0].UID != "u-other" {
		t.Errorf("owners after the patch %v", got)
	}
	if slices.Contains(actions(client), "delete configmaps child") {
		t.Error("child deleted")
	}
}

func TestVirtualOwnerChecks(t *testing.T) {
	owner := configMap("owner", "u-owner")
	child := configMap("child", "u-child", refTo(owner, false))

	t.Run("absent", func(t *testing.T) {
		c, _ := testController(t, child)
		observeAll(c, child)
		if err := c.collector.attemptToDelete(context.Background(), nodeOf(t, c, "u-owner"), true); err != nil {
			t.Fatal(err)
		}
		c.processEvents()
		if _, ok := c.builder.graph.get("u-owner"); ok {
			t.Error("absent owner still in the graph")
		}
		if got := drain(c.builder.attemptToDelete); !slices.Equal(got, []string{"child"}) {
			t.Errorf("attemptToDelete %v", got)
		}
	})
	t.Run("exists, not observed yet", func(t *testing.T) {
		c, client := testController(t, owner, child)
		observeAll(c, child)
		err := c.collector.attemptToDelete(context.Background(), nodeOf(t, c, "u-owner"), true)
		if !errors.Is(err, errNotObserved) {
			t.Fatalf("err %v, want %v", err, errNotObserved)
		}
		if got := actions(client); !slices.Equal(got, []string{"get configmaps owner"}) {
			t.Errorf("actions %v", got)
		}
	})
}

func TestForegroundOwnerFinishes(t *testing.T) {
	owner := deleted(configMap("owner", "u-owner"), metav1.FinalizerDeleteDependents, "example.com/other")

	t.Run("blocked", func(t *testing.T) {
		c, client := testController(t, owner)
		observeAll(c, owner, configMap("blocking", "u-b", refTo(owner, true)), configMap("free", "u-f", refTo(owner, false)))
		if err := c.collector.attemptToDelete(context.Background(), nodeOf(t, c, "u-owner"), true); err != nil {
			t.Fatal(err)
		}
		if got := drain(c.builder.attemptToDelete); !slices.Equal(got, []string{"blocking"}) {
			t.Errorf("attemptToDelete %v, want the blocking dependent", got)
		}
		if slices.ContainsFunc(client.Actions(), func(a clienttesting.Action) bool { return a.GetVerb() == "patch" }) {
			t.Errorf("finalizer removed while blocked: %v", actions(client))
		}
	})
	t.Run("unblocked", func(t *testing.T) {
		c, client := testController(t, owner)
		observeAll(c, owner, configMap("free", "u-f", refTo(owner, false)))
		if err := c.collector.attemptToDelete(context.Background(), nodeOf(t, c, "u-owner"), true); err != nil {
			t.Fatal(err)
		}
		if got := stored(t, client, "owner").Finalizers; !slices.Equal(got, []string{"example.com/other"}) {
			t.Errorf("finalizers %v, want only foregroundDeletion removed", got)
		}
	})
}

func TestClusterScopedDependentOfNamespacedOwnerIsLeftAlone(t *testing.T) {
	ns := object(namespaceKind, "", "team", "u-ns", metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: "u-owner"})
	c, client := testController(t, ns)
	observeAll(c, ns)
	err := c.collector.attemptToDelete(context.Background(), nodeOf(t, c, "u-ns"), true)
	if !errors.Is(err, errNamespacedOwnerOfClusterScoped) {
		t.Fatalf("err %v", err)
	}
	if got := actions(client); !slices.Equal(got, []string{"get namespaces team"}) {
		t.Errorf("actions %v", got)
	}
}

func TestOrphan(t *testing.T) {
	owner := deleted(configMap("owner", "u-owner"), metav1.FinalizerOrphanDependents)
	other := configMap("other", "u-other")
	objs := []*metav1.PartialObjectMetadata{
		owner, other,
		configMap("a", "u-a", refTo(owner, true)),
		configMap("b", "u-b", refTo(owner, false), refTo(other, false)),
	}
	c, client := testController(t, objs...)
	observeAll(c, objs...)
	if err := c.collector.attemptToOrphan(context.Background(), nodeOf(t, c, "u-owner"), true); err != nil {
		t.Fatal(err)
	}
	if got := stored(t, client, "a").OwnerReferences; len(got) != 0 {
		t.Errorf("a owners %v", got)
	}
	if got := stored(t, client, "b").OwnerReferences; len(got) != 1 || got[0].UID != "u-other" {
		t.Errorf("b owners %v", got)
	}
	if got := stored(t, client, "owner").Finalizers; len(got) != 0 {
		t.Errorf("owner finalizers %v", got)
	}
	if slices.ContainsFunc(client.Actions(), func(a clienttesting.Action) bool { return a.GetVerb() == "delete" }) {
		t.Errorf("something deleted: %v", actions(client))
	}
}

// TestForegroundCycleIsUnblocked: a dependent of a waiting owner whose own
// dependent waits too (maybe for it) drops blockOwnerDeletion from its
// references before it is deleted in the foreground.
func TestForegroundCycleIsUnblocked(t *testing.T) {
	owner := deleted(configMap("owner", "u-owner"), metav1.FinalizerDeleteDependents)
	child := configMap("child", "u-child", refTo(owner, true))
	grandchild := deleted(configMap("grandchild", "u-grandchild", refTo(child, true)), metav1.FinalizerDeleteDependents)
	c, client := testController(t, owner, child, grandchild)
	observeAll(c, owner, child, grandchild)

	if err := c.collector.attemptToDelete(context.Background(), nodeOf(t, c, "u-child"), true); err != nil {
		t.Fatal(err)
	}
	if got := actions(client); !slices.Contains(got, "patch configmaps child") || !slices.Contains(got, "delete configmaps child") {
		t.Fatalf("actions %v, want child unblocked then deleted", got)
	}
	patch := lastAction(t, client, "patch").(clienttesting.PatchActionImpl)
	var body struct {
		Metadata struct {
			OwnerReferences []metav1.OwnerReference `json:"ownerReferences"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(patch.Patch, &body); err != nil {
		t.Fatal(err)
	}
	if refs := body.Metadata.OwnerReferences; len(refs) != 1 || blocks(refs[0]) {
		t.Errorf("child owners patched to %v, want unblocked", refs)
	}
	del := lastAction(t, client, "delete").(clienttesting.DeleteActionImpl)
	if p := del.DeleteOptions.PropagationPolicy; p == nil || *p != metav1.DeletePropagationForeground {
		t.Errorf("propagation %v, want Foreground", p)
	}
}

// TestForegroundOwnerWaitsForResourcesNotWatchedYet (issue 28): a blocking
// dependent of an owner deleted in the foreground is of a resource that
// discovery serves but the collector does not watch yet. The owner's
// foregroundDeletion finalizer stays until the dependent is deleted.
func TestForegroundOwnerWaitsForResourcesNotWatchedYet(t *testing.T) {
	owner := deleted(configMap("owner", "u-owner"), metav1.FinalizerDeleteDependents)
	dep := object(widgetKind, "ns", "dependent", "u-dep", refTo(owner, true))
	c, client := testController(t, owner, dep)
	ctx := watchBeforeWidgets(t, c)
	go c.collector.runDeleteWorker(ctx)

	err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		return len(stored(t, client, "owner").Finalizers) == 0, nil
	})
	if err != nil {
		t.Fatalf("the foregroundDeletion finalizer was not removed: %v", actions(client))
	}
	var acts []string
	for _, a := range actions(client) {
		if strings.HasPrefix(a, "delete ") || strings.HasPrefix(a, "patch ") {
			acts = append(acts, a)
		}
	}
	if !slices.Equal(acts, []string{"delete widgets dependent", "patch configmaps owner"}) {
		t.Errorf("deletes and patches %v, want the blocking dependent deleted before the owner's finalizer is removed", acts)
	}
}
