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
// deletes it and leaves its dependents. It acts only on a fresh graph (see
// orphanedOwners for why).
func (c *collector) attemptToOrphan(ctx context.Context, owner *node, fresh bool) error {
	st, ok := c.graph.state(owner)
	if !ok {
		return nil
	}
	if !fresh {
		return errStale
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
// for having an owner that is gone.
//
// The orphaner does not depend on it for the dependents that existed when
// it took the owner: before it reads the owner's dependents, a refresh
// (fresh.go) reads discovery, watches every resource served, and waits
// for their first listings to be in the graph. So, for a dependent of an
// owner deleted with the orphan policy, created before the owner's
// deletion was seen:
//
//   - its resource is watched and its add event applied: in the graph;
//   - its resource is not watched yet (a custom resource definition newer
//     than the last discovery, up to 30 s old), whether the owner's
//     resource is watched (the finalizer is handled at once) or is new as
//     well: the refresh's discovery lists it, its first listing shows the
//     dependent;
//   - its resource's monitor has not shown its first listing yet, or the
//     owner comes before it in the same first listing: the refresh waits
//     for the listing and for the graph builder to apply it (resync also
//     pauses the workers meanwhile);
//   - discovery fails, or a resource cannot be watched or listed within a
//     discovery period: the owner keeps its finalizer and is tried again
//     later (a group whose discovery fails while the rest answers, an
//     aggregated API that is down, is the exception: it cannot be watched
//     either way).
//
// Each of these is the same after a restart of the controllers: the
// reference goes before the finalizer, so a successor that finds the owner
// gone finds no reference to it. The memory is left for what the refresh
// cannot see: a dependent whose add event is still on the way on its
// resource's watch after the refresh (its watch lags the owner's), one
// created after the owner's deletion started, one whose resource is
// served a moment before discovery lists it. Such a dependent reaches the
// graph after the orphaner read the owner's dependents, before or after
// the owner's deletion event. If the owner is still there, nothing is
// done until its deletion event queues the dependent; then (or if the
// owner was gone already: the virtual owner is checked, found absent, and
// its dependents queued) collect finds the owner absent, and removes the
// reference because the owner is remembered here. The memory is bounded
// (the least recently used forgotten first) and does not survive a
// restart: such a dependent, seen first by a successor after the owner is
// gone, is deleted, as upstream's would be.
//
// Foreground deletion has the same shape and the same answer: the
// foregroundDeletion finalizer is removed only when a fresh graph shows no
// blocking dependent (finishForeground). Without it, a blocking dependent
// of a resource not watched yet would outlive its owner (it is collected
// afterwards, so nothing is kept that should go, but blockOwnerDeletion
// promises the other order).
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
