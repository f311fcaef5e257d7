// Package informertest runs a unit test's shared informers, over a fake
// clientset, for the length of the test: started, synced before the test
// goes on, and stopped when it ends.
package informertest

import (
	"context"
	"testing"

	"k8s.io/client-go/informers"
)

// Start starts the informers factory has been asked for so far and waits
// until their caches have synced. When t ends it stops them and shuts
// down queues (a controller's work queues, which its workers would
// otherwise shut down), so that nothing of the test runs on.
func Start(t testing.TB, factory informers.SharedInformerFactory, queues ...interface{ ShutDown() }) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	factory.Start(ctx.Done())
	t.Cleanup(func() {
		cancel()
		factory.Shutdown()
		for _, q := range queues {
			q.ShutDown()
		}
	})
	for typ, synced := range factory.WaitForCacheSync(ctx.Done()) {
		if !synced {
			t.Fatalf("the %v informer's cache did not sync", typ)
		}
	}
}
