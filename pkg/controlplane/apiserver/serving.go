package apiserver

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/dynamic"
	clientgoinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// applyServing is NewConfig's serving stage: the generic run options,
// secure serving with its loopback connection (loopback.go), the loopback
// client's protobuf without compression, and tracing, which comes before
// the loopback clients are made so that they carry the trace context.
func (c *Config) applyServing() error {
	gc := c.Generic
	if err := c.Options.GenericServerRunOptions.ApplyTo(gc); err != nil {
		return fmt.Errorf("server run options: %w", err)
	}
	if err := applySecureServing(c.Options.SecureServing, gc); err != nil {
		return fmt.Errorf("secure serving: %w", err)
	}
	gc.LoopbackClientConfig.ContentConfig.ContentType = "application/vnd.kubernetes.protobuf"
	gc.LoopbackClientConfig.DisableCompression = true
	if err := c.Options.Traces.ApplyTo(gc); err != nil {
		return fmt.Errorf("tracing: %w", err)
	}
	return nil
}

// applyLoopbackClients is NewConfig's loopback stage: the clients that
// talk to this server over its loopback connection (Client, and the
// dynamic client it returns for admission) and the shared informers over
// them, which drop managed fields as kube-apiserver's do.
func (c *Config) applyLoopbackClients() (dynamic.Interface, error) {
	gc := c.Generic
	client, err := kubernetes.NewForConfig(gc.LoopbackClientConfig)
	if err != nil {
		return nil, fmt.Errorf("loopback client: %w", err)
	}
	dynamicClient, err := dynamic.NewForConfig(gc.LoopbackClientConfig)
	if err != nil {
		return nil, fmt.Errorf("loopback dynamic client: %w", err)
	}
	c.Client = client
	// Named in client-go's informer metrics, as kube-apiserver's are; a
	// second server in one process (tests) has unnamed ones, without
	// metrics, since names are process-wide. The server releases the name
	// when it stops.
	if n, err := cache.NewInformerName(InformerName); err == nil {
		c.informerName = n
	} else {
		klog.V(2).InfoS("Loopback informers without metrics", "err", err)
	}
	c.Informers = clientgoinformers.NewSharedInformerFactoryWithOptions(client, 10*time.Minute,
		clientgoinformers.WithTransform(func(obj interface{}) (interface{}, error) {
			if accessor, err := meta.Accessor(obj); err == nil {
				accessor.SetManagedFields(nil)
			}
			return obj, nil
		}),
		clientgoinformers.WithInformerName(c.informerName))
	return dynamicClient, nil
}
