package controllers

import (
	"context"
	"sync"
	"time"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
)

// Workers is the usual body of a queue-driven controller's Run: wait for
// the informers, then have a number of workers take keys from the queue
// and sync them, retrying a failed key with the queue's rate limit, until
// ctx is done; the queue is shut down on the way out.
type Workers[T comparable] struct {
	// Name names the controller in logs.
	Name string
	// Queue holds the keys to sync.
	Queue workqueue.TypedRateLimitingInterface[T]
	// Count is how many keys are synced at once.
	Count int
	// Synced are what to wait for before the first sync: each event
	// handler registration's HasSyncedChecker() (client-go), done once
	// its informer has listed and the handler has seen what it listed.
	Synced []cache.DoneChecker
	// Sync brings one key's state to what it should be.
	Sync func(ctx context.Context, key T) error
}

// Run works until ctx is done.
func (w Workers[T]) Run(ctx context.Context) {
	defer utilruntime.HandleCrashWithContext(ctx)
	logger := klog.FromContext(ctx).WithValues("controller", w.Name)
	logger.Info("Starting controller")
	var wg sync.WaitGroup
	defer func() {
		logger.Info("Shutting down controller")
		w.Queue.ShutDown()
		wg.Wait()
	}()
	// cache.WaitFor is told when each is done, where
	// WaitForCacheSync looks every 100 ms.
	logger.Info("Waiting for caches to sync")
	if !cache.WaitFor(ctx, "", w.Synced...) {
		return
	}
	logger.Info("Caches are synced")
	for range w.Count {
		wg.Go(func() {
			wait.UntilWithContext(ctx, func(ctx context.Context) {
				for w.processNext(ctx) {
				}
			}, time.Second)
		})
	}
	<-ctx.Done()
}

// processNext syncs one key; false once the queue is shut down.
func (w Workers[T]) processNext(ctx context.Context) bool {
	key, quit := w.Queue.Get()
	if quit {
		return false
	}
	defer w.Queue.Done(key)
	if err := w.Sync(ctx, key); err != nil {
		utilruntime.HandleErrorWithContext(ctx, err, "Sync failed, will retry", "controller", w.Name, "key", key)
		w.Queue.AddRateLimited(key)
		return true
	}
	w.Queue.Forget(key)
	return true
}
