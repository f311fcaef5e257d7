package garbagecollector

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
)

// attemptToDelete looks at the object of n with a live GET and deletes it
// if all its owners are gone or waiting for their dependents to go; if
// only some are, it removes the references to those. If n waits for its
// own dependents (foreground deletion), it finishes that deletion when no
// blocking dependent is left. A node whose object does not exist (a
// virtual owner never created, or deleted meanwhile) is reported to the
// graph builder.
func (c *collector) attemptToDelete(ctx context.Context, n *node, fresh bool) error {
	st, ok := c.graph.state(n)
	if !ok || (st.beingDeleted && !st.deletingDependents) {
		// Gone from the graph, or on its way out: its deletion event
		// will queue what follows.
		return nil
	}
	latest, id, err := c.objects.get(ctx, st.identity)
	switch {
	case apierrors.IsNotFound(err), err == nil && latest.UID != id.UID:
		c.builder.addVirtualDelete(id)
		return nil
	case err != nil:
		return err
	}
	if st.deletingDependents {
		err = c.finishForeground(ctx, n, id, fresh)
	} else {
		err = c.collect(ctx, n, st, id, latest)
	}
	if err != nil {
		return err
	}
	if st, ok := c.graph.state(n); ok && st.virtual {
		return fmt.Errorf("%s: %w", id, errNotObserved)
	}
	return nil
}

// collect deletes latest, the object of n at id, or removes its dangling
// owner references, depending on its owners' state.
func (c *collector) collect(ctx context.Context, n *node, st nodeState, id objectRef, latest *metav1.PartialObjectMetadata) error {
	logger := klog.FromContext(ctx)
	if len(latest.OwnerReferences) == 0 {
		return nil
	}
	solid, dangling, waiting, orphaned, err := c.classify(ctx, id, latest.OwnerReferences)
	if err != nil {
		return err
	}
	if len(orphaned) > 0 {
		// Owners deleted with the orphan policy while the graph did not
		// hold this object yet (see orphanedOwners).
		logger.V(2).Info("Removing references to owners deleted with the orphan policy", "object", id, "owners", orphaned)
		if err := c.objects.updateMeta(ctx, id, removeOwners(uids(orphaned)...)); err != nil {
			return err
		}
		if len(orphaned) < len(latest.OwnerReferences) {
			// The other owners decide, on the object as it is now.
			c.builder.attemptToDelete.Add(n)
		}
		return nil
	}
	switch {
	case len(solid) > 0:
		if len(dangling) == 0 && len(waiting) == 0 {
			return nil
		}
		// An owner waiting for its dependents would wait forever for
		// this one, which another owner keeps: drop that reference too.
		logger.V(2).Info("Removing owner references", "object", id, "dangling", dangling, "waiting", waiting)
		return c.objects.updateMeta(ctx, id, removeOwners(append(uids(dangling), uids(waiting)...)...))
	case len(waiting) > 0 && st.dependents > 0:
		if c.graph.anyDependentDeletingDependents(n) {
			// A dependent waits for its dependents too, maybe for this
			// object: unblock this object's owners so that a cycle of
			// foreground deletions cannot deadlock.
			if err := c.objects.updateMeta(ctx, id, unblockOwners); err != nil {
				return err
			}
			if latest, _, err = c.objects.get(ctx, id); err != nil {
				return err
			}
		}
		logger.V(2).Info("Deleting object in the foreground, an owner waits for its dependents", "object", id)
		return c.delete(ctx, id, latest, metav1.DeletePropagationForeground)
	default:
		policy := metav1.DeletePropagationBackground
		switch {
		case hasFinalizer(latest, metav1.FinalizerOrphanDependents):
			policy = metav1.DeletePropagationOrphan
		case hasFinalizer(latest, metav1.FinalizerDeleteDependents):
			policy = metav1.DeletePropagationForeground
		}
		logger.V(2).Info("Deleting object, its owners are gone", "object", id, "propagationPolicy", policy)
		return c.delete(ctx, id, latest, policy)
	}
}

// delete deletes latest, the object at id; if it is gone already, the
// graph builder is told.
func (c *collector) delete(ctx context.Context, id objectRef, latest *metav1.PartialObjectMetadata, policy metav1.DeletionPropagation) error {
	err := c.objects.delete(ctx, id, latest, policy)
	if apierrors.IsNotFound(err) {
		c.builder.addVirtualDelete(id)
		return nil
	}
	return err
}

// finishForeground removes the foregroundDeletion finalizer from the
// object of n, at id, once none of its dependents blocks that; until
// then it queues the blocking dependents for deletion. That no dependent
// blocks is only believed of a fresh graph: a blocking dependent of a
// resource the collector did not watch yet would otherwise outlive its
// owner.
func (c *collector) finishForeground(ctx context.Context, n *node, id objectRef, fresh bool) error {
	blocking := c.graph.blockingDependents(n)
	if len(blocking) == 0 && !fresh {
		return errStale
	}
	if len(blocking) == 0 {
		klog.FromContext(ctx).V(2).Info("Finishing foreground deletion, no dependent blocks it", "object", id)
		return c.objects.updateMeta(ctx, id, removeFinalizer(metav1.FinalizerDeleteDependents))
	}
	for _, dep := range blocking {
		if !c.graph.deletingDependents(dep) {
			c.builder.attemptToDelete.Add(dep)
		}
	}
	return nil
}

// classify sorts the owner references of the object at dep: solid (the
// owner exists), dangling (it does not), waiting (it exists, being deleted
// in the foreground) and orphaned (it does not, and the collector removed
// its orphan finalizer).
func (c *collector) classify(ctx context.Context, dep objectRef, refs []metav1.OwnerReference) (solid, dangling, waiting, orphaned []metav1.OwnerReference, err error) {
	for _, ref := range refs {
		owner, err := c.owner(ctx, dep, ref)
		switch {
		case err != nil:
			return nil, nil, nil, nil, err
		case owner == nil && c.orphaned.has(ref.UID):
			orphaned = append(orphaned, ref)
		case owner == nil:
			dangling = append(dangling, ref)
		case deleting(owner) && hasFinalizer(owner, metav1.FinalizerDeleteDependents):
			waiting = append(waiting, ref)
		default:
			solid = append(solid, ref)
		}
	}
	return solid, dangling, waiting, orphaned, nil
}

// owner returns the owner that ref names for the object at dep, or nil if
// it does not exist: nothing at the reference's coordinates (in dep's
// namespace if the owner's kind is namespaced) or an object with another
// uid there.
func (c *collector) owner(ctx context.Context, dep objectRef, ref metav1.OwnerReference) (*metav1.PartialObjectMetadata, error) {
	if c.absent.has(ownerRef(ref, "")) || c.absent.has(ownerRef(ref, dep.Namespace)) {
		return nil, nil
	}
	obj, id, err := c.objects.get(ctx, ownerRef(ref, dep.Namespace))
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return nil, err
	case obj.UID != ref.UID:
	default:
		return obj, nil
	}
	c.absent.add(id)
	return nil, nil
}

func uids(refs []metav1.OwnerReference) []types.UID {
	out := make([]types.UID, 0, len(refs))
	for _, ref := range refs {
		out = append(out, ref.UID)
	}
	return out
}
