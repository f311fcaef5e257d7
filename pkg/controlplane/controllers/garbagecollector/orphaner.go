package garbagecollector

import (
	"context"
	"errors"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/lru"
)

// orphanParallelism is how many dependents of one owner are orphaned at
// once.
const orphanParallelism = 10

// attemptToOrphan removes the owner reference to owner from each of its
// dependents, then the orphan finalizer from owner, so that the API server
// deletes it and leaves its dependents.
func (c *collector) attemptToOrphan(ctx context.Context, owner *node) error {
	st, ok := c.graph.state(owner)
	if !ok {
		return nil
	}
	deps := c.graph.dependents(owner)
	errs := make([]error, len(deps))
	workqueue.ParallelizeUntil(ctx, orphanParallelism, len(deps), func(i int) {
		errs[i] = c.objects.updateMeta(ctx, deps[i], removeOwners(st.identity.UID))
	})
	if err := errors.Join(errs...); err != nil {
		return err
	}
	klog.FromContext(ctx).V(2).Info("Orphaned dependents, removing the orphan finalizer", "object", st.identity, "dependents", len(deps))
	// Before the owner can go: a dependent that shows up later finds it
	// gone, and must lose the reference, not its life.
	c.orphaned.add(st.identity.UID)
	return c.objects.updateMeta(ctx, st.identity, removeFinalizer(metav1.FinalizerOrphanDependents))
}

// orphanedOwners remembers the owners whose orphan finalizer the collector
// removed, by uid (never reused), so that a dependent the orphaner did not
// know of loses its reference to such an owner instead of being deleted
// for having an owner that is gone. The orphaner acts on the dependents
// the graph holds; the orderings in which a dependent of an owner deleted
// with the orphan policy is not among them when the finalizer is removed:
//
//   - its resource is not watched yet (a custom resource definition newer
//     than the last discovery, up to 30 s old), whether the owner's resource
//     is watched (the finalizer is handled at once) or is new as well;
//   - its resource's monitor has not shown its first listing yet, or its
//     add event is still on the way (another resource's watch) when the
//     owner's update arrives;
//   - the owner comes before it in the same first listing and a worker
//     takes the owner before the graph builder reaches the dependent
//     (resync pauses the workers to prevent this one).
//
// In each, the dependent reaches the graph after the orphaner read the
// owner's dependents, before or after the owner's deletion event. If the
// owner is still there, nothing is done until its deletion event queues the
// dependent; then (or if the owner was gone already: the virtual owner is
// checked, found absent, and its dependents queued) collect finds the owner
// absent, and removes the reference because the owner is remembered here.
// The memory is bounded (the least recently used forgotten first) and does
// not survive a restart: a dependent that the collector which removed the
// finalizer never saw, seen first by its successor after the owner is
// gone, is deleted, as upstream's would be.
type orphanedOwners struct {
	cache *lru.Cache
}

func newOrphanedOwners(size int) *orphanedOwners {
	return &orphanedOwners{cache: lru.New(size)}
}

func (o *orphanedOwners) add(uid types.UID) { o.cache.Add(uid, nil) }

func (o *orphanedOwners) has(uid types.UID) bool {
	_, ok := o.cache.Get(uid)
	return ok
}
