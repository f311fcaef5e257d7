package garbagecollector

import (
	"context"
	"errors"
	"fmt"
	"sync"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
)

// errNotObserved asks to look at a virtual node again later: its object
// exists but no monitor has shown it yet.
var errNotObserved = errors.New("object exists but has not been observed yet")

// collector works the attemptToDelete and attemptToOrphan queues that the
// graph builder fills, reading the graph and acting through the API.
type collector struct {
	graph   *graph
	builder *graphBuilder
	objects *objects
	absent  *absentOwners
	// orphaned are the owners whose orphan finalizer the collector
	// removed (see orphanedOwners).
	orphaned *orphanedOwners
	// paused is held for writing while new monitors fill the graph with
	// their resources' objects; each worker holds it for reading while it
	// syncs a node, so that none acts on a graph that lacks them.
	paused sync.RWMutex
	// refresher brings the graph up to date before a worker removes a
	// finalizer that lets an owner go (see errStale).
	refresher *refresher
}

// syncFunc acts on a node. fresh says that a refresh, started after the
// node was taken from its queue, has ended; without it, a sync that would
// let an owner go returns errStale instead.
type syncFunc func(ctx context.Context, n *node, fresh bool) error

// runDeleteWorker processes attemptToDelete until it shuts down.
func (c *collector) runDeleteWorker(ctx context.Context) {
	for c.processNext(ctx, c.builder.attemptToDelete, c.attemptToDelete) {
	}
}

// runOrphanWorker processes attemptToOrphan until it shuts down.
func (c *collector) runOrphanWorker(ctx context.Context) {
	for c.processNext(ctx, c.builder.attemptToOrphan, c.attemptToOrphan) {
	}
}

// processNext syncs one node from q, retrying it later (rate limited) if
// that failed. The queue hands a node to one worker at a time. A sync that
// asks for it (errStale) is run again after a refresh, which is done
// without holding paused: a refresh may start monitors, which pauses the
// workers.
func (c *collector) processNext(ctx context.Context, q workqueue.TypedRateLimitingInterface[*node], sync syncFunc) bool {
	n, quit := q.Get()
	if quit {
		return false
	}
	defer q.Done(n)

	c.paused.RLock()
	err := sync(ctx, n, false)
	c.paused.RUnlock()
	if errors.Is(err, errStale) {
		if err = c.refresher.wait(ctx); err == nil {
			c.paused.RLock()
			err = sync(ctx, n, true)
			c.paused.RUnlock()
		} else {
			st, _ := c.graph.state(n)
			err = fmt.Errorf("%s waits until every resource served is watched: %w", st.identity, err)
		}
	}
	logger := klog.FromContext(ctx)
	var mapping *mappingError
	switch {
	case err == nil:
		q.Forget(n)
		return true
	case errors.Is(err, errNamespacedOwnerOfClusterScoped):
		// Retrying cannot help.
		logger.V(2).Info("Ignoring an invalid owner reference", "err", err)
		q.Forget(n)
		return true
	case errors.Is(err, errNotObserved):
		logger.V(5).Info("Waiting for an object to be observed", "err", err)
	case errors.As(err, &mapping):
		// A custom resource definition created or deleted lately; the
		// next discovery sync resets the REST mapper.
		logger.V(2).Info("Retrying later", "err", err)
	default:
		utilruntime.HandleErrorWithContext(ctx, err, "Garbage collection failed, will retry")
	}
	q.AddRateLimited(n)
	return true
}
