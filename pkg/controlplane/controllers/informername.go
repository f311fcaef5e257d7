package controllers

import (
	"context"

	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// InformerName names the controllers' shared informers in client-go's
// informer metrics (informer_queued_items, informer_processing_latency_seconds,
// informer_store_resource_version: the name label), as
// kube-controller-manager names its own.
const InformerName = "gcp-controllers"

// namedInformers reserves name for a shared informer factory's metrics,
// or returns nil (informers without metrics) when another factory of the
// process holds it: names are process-wide, and a test process runs
// several control planes. Release the result when the informers stop; a nil
// one releases nothing.
func namedInformers(ctx context.Context, name string) *cache.InformerName {
	n, err := cache.NewInformerName(name)
	if err != nil {
		klog.FromContext(ctx).V(2).Info("Informers without metrics", "err", err)
		return nil
	}
	return n
}
