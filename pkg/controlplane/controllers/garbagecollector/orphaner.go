package garbagecollector

import (
	"context"
	"errors"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
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
	return c.objects.updateMeta(ctx, st.identity, removeFinalizer(metav1.FinalizerOrphanDependents))
}
