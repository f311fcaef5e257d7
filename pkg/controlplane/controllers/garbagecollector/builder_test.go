package garbagecollector

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestVirtualOwnerIsVerifiedThenObserved(t *testing.T) {
	c, _ := testController(t)
	owner := configMap("owner", "u-owner")
	c.notify(addEvent, configMap("child", "u-child", refTo(owner, false)), nil)

	n, ok := c.builder.graph.get("u-owner")
	if !ok || !n.virtual || n.identity != identity(owner) {
		t.Fatalf("virtual owner node: %+v %v", n, ok)
	}
	if got := drain(c.builder.attemptToDelete); !slices.Equal(got, []string{"owner"}) {
		t.Fatalf("attemptToDelete %v, want the virtual owner", got)
	}

	c.notify(addEvent, owner, nil)
	observed, _ := c.builder.graph.get("u-owner")
	if observed != n || observed.virtual || len(observed.dependents) != 1 {
		t.Fatalf("observed owner: %+v", observed)
	}
	if got := drain(c.builder.attemptToDelete); len(got) != 0 {
		t.Fatalf("attemptToDelete %v after a matching observation", got)
	}
}

func TestObservedOwnerAtOtherCoordinatesQueuesDependent(t *testing.T) {
	c, _ := testController(t)
	c.notify(addEvent, configMap("child", "u-child", metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "wrong-name", UID: "u-owner"}), nil)
	drain(c.builder.attemptToDelete)

	c.notify(addEvent, configMap("owner", "u-owner"), nil)
	if got := drain(c.builder.attemptToDelete); !slices.Equal(got, []string{"child"}) {
		t.Fatalf("attemptToDelete %v, want the child to verify its reference", got)
	}
}

func TestOwnerDeletionQueuesDependents(t *testing.T) {
	c, _ := testController(t)
	owner := configMap("owner", "u-owner")
	other := configMap("other", "u-other")
	c.notify(addEvent, owner, nil)
	c.notify(addEvent, other, nil)
	c.notify(addEvent, configMap("a", "u-a", refTo(owner, false)), nil)
	c.notify(addEvent, configMap("b", "u-b", refTo(owner, false), refTo(other, false)), nil)
	c.notify(addEvent, configMap("c", "u-c", refTo(other, false)), nil)
	drain(c.builder.attemptToDelete)

	c.notify(deleteEvent, owner, nil)
	if _, ok := c.builder.graph.get("u-owner"); ok {
		t.Fatal("deleted owner still in the graph")
	}
	if got := drain(c.builder.attemptToDelete); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("attemptToDelete %v, want the owner's dependents", got)
	}
	if !c.builder.absent.has(identity(owner)) {
		t.Error("deleted owner not remembered as absent")
	}
}

func TestVirtualDeleteRemovesVirtualOwner(t *testing.T) {
	c, _ := testController(t)
	owner := configMap("owner", "u-owner")
	c.notify(addEvent, configMap("a", "u-a", refTo(owner, false)), nil)
	c.notify(addEvent, configMap("b", "u-b", refTo(owner, false)), nil)
	drain(c.builder.attemptToDelete)

	c.builder.addVirtualDelete(identity(owner))
	c.processEvents()
	if _, ok := c.builder.graph.get("u-owner"); ok {
		t.Fatal("absent virtual owner still in the graph")
	}
	if got := drain(c.builder.attemptToDelete); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("attemptToDelete %v", got)
	}
	if !c.builder.absent.has(identity(owner)) {
		t.Error("absent owner not remembered")
	}
}

func TestVirtualDeleteOfClusterScopedOwnerCoversAllNamespaces(t *testing.T) {
	c, _ := testController(t)
	ns := object(namespaceKind, "", "team", "u-ns")
	c.notify(addEvent, object(configMapKind, "a", "x", "u-a", refTo(ns, false)), nil)
	c.notify(addEvent, object(configMapKind, "b", "x", "u-b", refTo(ns, false)), nil)
	drain(c.builder.attemptToDelete)

	// The worker found the kind cluster-scoped and reports it so.
	c.builder.addVirtualDelete(identity(ns))
	c.processEvents()
	if _, ok := c.builder.graph.get("u-ns"); ok {
		t.Fatal("absent virtual owner still in the graph")
	}
	if got := len(drain(c.builder.attemptToDelete)); got != 2 {
		t.Fatalf("%d dependents queued, want 2", got)
	}
}

func TestVirtualDeleteKeepsOwnerReferencedElsewhere(t *testing.T) {
	c, _ := testController(t)
	c.notify(addEvent, configMap("a", "u-a", metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "first", UID: "u-owner"}), nil)
	c.notify(addEvent, configMap("b", "u-b", metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "second", UID: "u-owner"}), nil)
	n, _ := c.builder.graph.get("u-owner")
	first := n.identity
	drain(c.builder.attemptToDelete)

	c.builder.addVirtualDelete(first)
	c.processEvents()
	kept, ok := c.builder.graph.get("u-owner")
	if !ok || kept.identity.Name != "second" || !kept.virtual {
		t.Fatalf("owner node %+v %v, want it virtual at its other coordinates", kept, ok)
	}
	if got := drain(c.builder.attemptToDelete); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("attemptToDelete %v, want the dependent of the absent coordinates", got)
	}
}

func TestRemovingLastDependentForgetsVirtualOwner(t *testing.T) {
	c, _ := testController(t)
	owner := configMap("owner", "u-owner")
	child := configMap("child", "u-child", refTo(owner, false))
	c.notify(addEvent, child, nil)
	c.notify(updateEvent, configMap("child", "u-child"), child)
	if _, ok := c.builder.graph.get("u-owner"); ok {
		t.Fatal("virtual owner without dependents still in the graph")
	}
}

func TestForegroundDeletionQueuesDependentsAndOwner(t *testing.T) {
	c, _ := testController(t)
	owner := configMap("owner", "u-owner")
	c.notify(addEvent, owner, nil)
	c.notify(addEvent, configMap("a", "u-a", refTo(owner, true)), nil)
	drain(c.builder.attemptToDelete)

	c.notify(updateEvent, deleted(owner, metav1.FinalizerDeleteDependents), owner)
	n, _ := c.builder.graph.get("u-owner")
	if !n.deletingDependents || !n.beingDeleted {
		t.Fatalf("owner node %+v, want deletingDependents", n)
	}
	if got := drain(c.builder.attemptToDelete); !slices.Equal(got, []string{"a", "owner"}) {
		t.Fatalf("attemptToDelete %v", got)
	}
	if got := drain(c.builder.attemptToOrphan); len(got) != 0 {
		t.Fatalf("attemptToOrphan %v", got)
	}
}

// A dependent observed after its owner's foreground deletion started (a
// handler added to a running informer gets its objects in no set order)
// is queued: the owner's transition queued only the dependents it had.
func TestDependentObservedAfterForegroundDeletionIsQueued(t *testing.T) {
	c, _ := testController(t)
	owner := configMap("owner", "u-owner")
	c.notify(addEvent, deleted(owner, metav1.FinalizerDeleteDependents), nil)
	if got := drain(c.builder.attemptToDelete); !slices.Equal(got, []string{"owner"}) {
		t.Fatalf("attemptToDelete %v, want the owner", got)
	}
	c.notify(addEvent, configMap("late", "u-late", refTo(owner, false)), nil)
	if got := drain(c.builder.attemptToDelete); !slices.Equal(got, []string{"late"}) {
		t.Fatalf("attemptToDelete %v, want the late dependent", got)
	}
	// An owner reference added later to an object observed before.
	other := configMap("other", "u-other")
	c.notify(addEvent, other, nil)
	drain(c.builder.attemptToDelete)
	c.notify(updateEvent, configMap("other", "u-other", refTo(owner, false)), other)
	if got := drain(c.builder.attemptToDelete); !slices.Equal(got, []string{"other"}) {
		t.Fatalf("attemptToDelete %v, want the object that gained the owner", got)
	}
}

func TestOrphanDeletionQueuesOwner(t *testing.T) {
	c, _ := testController(t)
	owner := configMap("owner", "u-owner")
	c.notify(addEvent, owner, nil)
	c.notify(addEvent, configMap("a", "u-a", refTo(owner, false)), nil)
	drain(c.builder.attemptToDelete)

	c.notify(updateEvent, deleted(owner, metav1.FinalizerOrphanDependents), owner)
	if got := drain(c.builder.attemptToOrphan); !slices.Equal(got, []string{"owner"}) {
		t.Fatalf("attemptToOrphan %v", got)
	}
	// Observed already deleting (a restart): queued too.
	c2, _ := testController(t)
	c2.notify(addEvent, deleted(owner, metav1.FinalizerOrphanDependents), nil)
	if got := drain(c2.builder.attemptToOrphan); !slices.Equal(got, []string{"owner"}) {
		t.Fatalf("attemptToOrphan after a restart %v", got)
	}
}

func TestUnblockingQueuesWaitingOwner(t *testing.T) {
	c, _ := testController(t)
	owner := deleted(configMap("owner", "u-owner"), metav1.FinalizerDeleteDependents)
	c.notify(addEvent, owner, nil)
	child := configMap("a", "u-a", refTo(owner, true))
	c.notify(addEvent, child, nil)
	drain(c.builder.attemptToDelete)

	c.notify(updateEvent, configMap("a", "u-a", refTo(owner, false)), child)
	if got := drain(c.builder.attemptToDelete); !slices.Equal(got, []string{"owner"}) {
		t.Fatalf("attemptToDelete %v, want the unblocked owner", got)
	}
}

func TestEventHandlerFiltersAndSplitsUpdates(t *testing.T) {
	c, _ := testController(t)
	cm := configMap("cm", "u-1")
	c.notify(addEvent, cm, nil)

	changedData := cm.DeepCopy()
	changedData.ResourceVersion = "8"
	changedData.Labels = map[string]string{"a": "b"}
	eventHandler(configMapKind, c.builder.add).OnUpdate(cm, changedData)
	if n := c.builder.events.Len(); n != 0 {
		t.Fatalf("%d events queued for an update the graph does not care about", n)
	}

	recreated := configMap("cm", "u-2")
	c.notify(updateEvent, recreated, cm)
	if _, ok := c.builder.graph.get("u-1"); ok {
		t.Error("replaced object still in the graph")
	}
	if _, ok := c.builder.graph.get("u-2"); !ok {
		t.Error("new object not in the graph")
	}
}

func TestDiffOwners(t *testing.T) {
	yes, no := true, false
	ref := func(uid types.UID, block *bool) metav1.OwnerReference {
		return metav1.OwnerReference{UID: uid, BlockOwnerDeletion: block}
	}
	added, removed, unblocked := diffOwners(
		[]metav1.OwnerReference{ref("kept", &yes), ref("unblocked", &yes), ref("gone", &yes), ref("gone-free", nil)},
		[]metav1.OwnerReference{ref("kept", &yes), ref("unblocked", &no), ref("new", nil)},
	)
	uidsOf := func(refs []metav1.OwnerReference) []types.UID { return uids(refs) }
	if got := uidsOf(added); !slices.Equal(got, []types.UID{"new"}) {
		t.Errorf("added %v", got)
	}
	if got := uidsOf(removed); !slices.Equal(got, []types.UID{"gone", "gone-free"}) {
		t.Errorf("removed %v", got)
	}
	if !slices.Equal(unblocked, []types.UID{"unblocked", "gone"}) {
		t.Errorf("unblocked %v", unblocked)
	}
}
