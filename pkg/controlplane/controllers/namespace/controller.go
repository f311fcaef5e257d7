// Package namespace is gcp's namespace controller: it empties namespaces
// that are being deleted (every namespaced resource that discovery lists,
// custom and aggregated ones included), reports progress in the
// namespace's status conditions and, once nothing is left, removes the
// "kubernetes" finalizer so the API server deletes the namespace. It
// behaves like kube-controller-manager's namespace controller.
package namespace

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/gcp-project/gcp/pkg/controlplane/auth/rbac/bootstrappolicy"
	"github.com/gcp-project/gcp/pkg/controlplane/controllers"
)

const (
	// defaultWorkers is how many namespaces are emptied at once.
	defaultWorkers = 5
	// defaultResyncPeriod re-examines every namespace this often, so a
	// namespace stuck Terminating is retried even without events.
	defaultResyncPeriod = 5 * time.Minute
	// defaultGracePeriod delays work on a namespace after it is seen
	// deleted, so that admission on every API server (and every etcd
	// member) has observed the deletion before the content is listed:
	// objects created in the last moment are then caught too.
	defaultGracePeriod = 5 * time.Second
)

// Name is the controller's name for --controllers, kube-controller-manager's.
const Name = "namespace-controller"

// ServiceAccount is the ServiceAccount in kube-system the namespace
// controller runs as, kube-controller-manager's name for it; Rules are its
// permissions.
const ServiceAccount = "namespace-controller"

// Rules are what ServiceAccount may do: ClusterRole
// system:controller:<ServiceAccount>.
func Rules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		// Empties a terminating namespace of every kind, then finalizes it.
		bootstrappolicy.NewRule("get", "list", "watch", "delete").Groups("").Resources("namespaces").Rule(),
		bootstrappolicy.NewRule("update").Groups("").Resources("namespaces/finalize", "namespaces/status").Rule(),
		bootstrappolicy.NewRule("get", "list", "watch", "delete", "deletecollection").Groups("*").Resources("*").Rule(),
	}
}

// Descriptor returns the namespace controller's descriptor, named Name
// with alias "namespace", on by default.
func Descriptor() controllers.Descriptor {
	return controllers.Descriptor{
		Name:           Name,
		ServiceAccount: ServiceAccount,
		Rules:          Rules(),
		Aliases:        []string{"namespace"},
		New:            newFromContext,
	}
}

func newFromContext(ctx context.Context, c controllers.Context) (controllers.Controller, error) {
	cfg, err := c.ClientBuilder.Config(ServiceAccount)
	if err != nil {
		return nil, fmt.Errorf("client config for %s: %w", ServiceAccount, err)
	}
	cfg = rest.CopyConfig(cfg)
	// Emptying a namespace is a burst of list and delete requests across
	// every resource; kube-controller-manager gives its namespace
	// controller 20 times the rate and 100 times the burst for it.
	cfg.QPS *= 20
	cfg.Burst *= 100
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	metadataClient, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	// With aggregation served, APIServices say why a group cannot be
	// discovered, and a change to one (back, or removed) retries the
	// namespaces waiting on it at once.
	var apiServices cache.SharedIndexInformer
	if resources, err := client.Discovery().ServerResourcesForGroupVersion(apiServicesResource.GroupVersion().String()); err == nil &&
		slices.ContainsFunc(resources.APIResources, func(r metav1.APIResource) bool { return r.Name == apiServicesResource.Resource }) {
		apiServices = c.DynamicInformerFactory.ForResource(apiServicesResource).Informer()
	}
	return newController(ctx, options{
		apiServices: apiServices,
		namespaces:  client.CoreV1().Namespaces(),
		metadata:    metadataClient,
		discover:    client.Discovery().ServerPreferredNamespacedResources,
		informer:    c.InformerFactory.Core().V1().Namespaces(),
		resync:      defaultResyncPeriod,
		workers:     defaultWorkers,
		gracePeriod: defaultGracePeriod,
	}), nil
}

// options are what newController needs; tests fill them with fakes.
type options struct {
	// apiServices, if not nil, is an informer of APIServices (unstructured).
	apiServices cache.SharedIndexInformer
	namespaces  namespaceClient
	metadata    metadata.Interface
	discover    func() ([]*metav1.APIResourceList, error)
	informer    coreinformers.NamespaceInformer
	resync      time.Duration
	workers     int
	gracePeriod time.Duration
}

// controller queues deleted namespaces and has workers empty them.
type controller struct {
	lister      corelisters.NamespaceLister
	synced      cache.DoneChecker
	queue       workqueue.TypedRateLimitingInterface[string]
	deleter     *deleter
	workers     int
	gracePeriod time.Duration
}

var _ controllers.Controller = &controller{}

func newController(ctx context.Context, o options) *controller {
	c := &controller{
		lister: o.informer.Lister(),
		synced: o.informer.Informer().HasSyncedChecker(),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(rateLimiter(),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "namespace"}),
		deleter:     newDeleter(o.namespaces, o.metadata, o.discover, corev1.FinalizerKubernetes),
		workers:     o.workers,
		gracePeriod: o.gracePeriod,
	}
	_, err := o.informer.Informer().AddEventHandlerWithResyncPeriod(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueue,
		UpdateFunc: func(_, obj any) { c.enqueue(obj) },
	}, o.resync)
	if err != nil {
		// Only possible once the informer has stopped.
		utilruntime.HandleErrorWithContext(ctx, err, "Adding the namespace event handler")
	}
	if o.apiServices != nil {
		c.deleter.explain = apiServiceExplainer{store: o.apiServices.GetStore()}.explain
		_, err := o.apiServices.AddEventHandler(cache.ResourceEventHandlerFuncs{
			UpdateFunc: func(_, _ any) { c.retryTerminating() },
			DeleteFunc: func(any) { c.retryTerminating() },
		})
		if err != nil {
			utilruntime.HandleErrorWithContext(ctx, err, "Adding the APIService event handler")
		}
	}
	return c
}

// retryTerminating queues every namespace being deleted at once: an
// APIService changed (became Available, or was removed), so one waiting on
// its group's discovery may finish now instead of after its backoff.
func (c *controller) retryTerminating() {
	namespaces, err := c.lister.List(labels.Everything())
	if err != nil {
		return
	}
	for _, ns := range namespaces {
		if !ns.DeletionTimestamp.IsZero() {
			c.queue.Add(ns.Name)
		}
	}
}

// rateLimiter retries a namespace quickly at first, backing off to once a
// minute, and bounds the overall retry rate to 10 per second (bursts of
// 100): there are far fewer namespaces than objects in them, so cleanup
// may be eager without flooding the server.
func rateLimiter() workqueue.TypedRateLimiter[string] {
	return workqueue.NewTypedMaxOfRateLimiter(
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](5*time.Millisecond, time.Minute),
		&workqueue.TypedBucketRateLimiter[string]{Limiter: rate.NewLimiter(rate.Limit(10), 100)},
	)
}

// Name implements controller.Interface.
func (c *controller) Name() string { return Name }

// enqueue queues a namespace that has a deletion timestamp, after the
// grace period; others are left alone.
func (c *controller) enqueue(obj any) {
	ns, ok := obj.(*corev1.Namespace)
	if !ok || ns.DeletionTimestamp.IsZero() {
		return
	}
	c.queue.AddAfter(ns.Name, c.gracePeriod)
}

// Run waits for the namespace informer, then works until ctx is done.
func (c *controller) Run(ctx context.Context) {
	defer utilruntime.HandleCrashWithContext(ctx)
	logger := klog.FromContext(ctx)
	logger.Info("Starting namespace controller")

	var wg sync.WaitGroup
	defer func() {
		logger.Info("Shutting down namespace controller")
		c.queue.ShutDown()
		wg.Wait()
	}()
	if !cache.WaitFor(ctx, "", c.synced) {
		return
	}
	for range c.workers {
		wg.Go(func() { wait.UntilWithContext(ctx, c.worker, time.Second) })
	}
	<-ctx.Done()
}

// worker processes namespaces until the queue shuts down. The queue hands
// a namespace to one worker at a time.
func (c *controller) worker(ctx context.Context) {
	for c.processNext(ctx) {
	}
}

func (c *controller) processNext(ctx context.Context) bool {
	name, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(name)

	err := c.sync(ctx, name)
	if err == nil {
		c.queue.Forget(name)
		return true
	}
	var remaining *remainingError
	if errors.As(err, &remaining) {
		// Content is going away on its own (finalizers); look again in
		// about half the estimate.
		wait := time.Duration(remaining.estimate/2+1) * time.Second
		klog.FromContext(ctx).V(4).Info("Content remaining in namespace", "namespace", name, "wait", wait)
		c.queue.AddAfter(name, wait)
		return true
	}
	c.queue.AddRateLimited(name)
	utilruntime.HandleErrorWithContext(ctx, err, "Deletion of namespace failed", "namespace", name)
	return true
}

// sync empties and finalizes one namespace, if it still exists.
func (c *controller) sync(ctx context.Context, name string) error {
	start := time.Now()
	logger := klog.FromContext(ctx)
	defer func() {
		logger.V(4).Info("Finished syncing namespace", "namespace", name, "duration", time.Since(start))
	}()

	if _, err := c.lister.Get(name); apierrors.IsNotFound(err) {
		logger.V(2).Info("Namespace has been deleted", "namespace", name)
		return nil
	} else if err != nil {
		return err
	}
	return c.deleter.delete(ctx, name)
}
