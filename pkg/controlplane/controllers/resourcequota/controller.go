// Package resourcequota is gcp's resource quota controller: it keeps each
// ResourceQuota's status up to date, status.hard copied from spec.hard and
// status.used counted from the objects in the quota's namespace. It
// behaves like kube-controller-manager's, restricted to what a generic
// control plane serves: object counts (count/<resource>.<group>) of every
// namespaced resource that discovery lists, custom resources included,
// and the legacy names configmaps, secrets and resourcequotas.
//
// Usage is counted from shared informers, never from the server. Monitors
// (event handlers on the same informers) requeue a namespace's quotas
// when an object of a counted resource is created or deleted there, so
// that used follows within moments; every quota is recomputed at the
// resync period besides.
package resourcequota

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	quota "k8s.io/apiserver/pkg/quota/v1"
	"k8s.io/apiserver/pkg/quota/v1/generic"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/gcp-project/gcp/pkg/controlplane/auth/rbac/bootstrappolicy"
	"github.com/gcp-project/gcp/pkg/controlplane/controllers"
	gcpquota "github.com/gcp-project/gcp/pkg/controlplane/quota"
)

const (
	// defaultWorkers is how many quotas are recomputed at once from each
	// queue, as kube-controller-manager's --concurrent-resource-quota-syncs.
	defaultWorkers = 5
	// defaultResyncPeriod recomputes every quota this often, as
	// kube-controller-manager's --resource-quota-sync-period.
	defaultResyncPeriod = 5 * time.Minute
	// defaultDiscoveryPeriod is how often discovery is read again to
	// count new resources (custom resource definitions).
	defaultDiscoveryPeriod = 30 * time.Second
)

// Options adjust the controller; zero fields take the defaults.
type Options struct {
	// Workers is how many quotas each of the two queues (missing usage
	// and regular) syncs at once. Default 5.
	Workers int
	// ResyncPeriod is how often every quota is recomputed. Default 5m.
	ResyncPeriod time.Duration
	// DiscoveryPeriod is how often discovery is read again. Default 30s.
	DiscoveryPeriod time.Duration
}

// Name is the controller's name for --controllers, kube-controller-manager's.
const Name = "resourcequota-controller"

// ServiceAccount is the ServiceAccount in kube-system the resource quota
// controller runs as, kube-controller-manager's name for it; Rules are its
// permissions.
const ServiceAccount = "resourcequota-controller"

// Rules are what ServiceAccount may do: ClusterRole
// system:controller:<ServiceAccount>.
func Rules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		// Counts usage of anything a quota may cover.
		bootstrappolicy.NewRule("list", "watch").Groups("*").Resources("*").Rule(),
		bootstrappolicy.NewRule("update").Groups("").Resources("resourcequotas/status").Rule(),
		bootstrappolicy.EventsRule(),
	}
}

// Descriptor returns the resource quota controller's descriptor, named
// "resourcequota-controller" with alias "resourcequota", on by default.
func Descriptor() controllers.Descriptor { return DescriptorWithOptions(Options{}) }

// DescriptorWithOptions is Descriptor with adjusted options; tests use it
// to follow new resources faster.
func DescriptorWithOptions(o Options) controllers.Descriptor {
	return controllers.Descriptor{
		Name:           Name,
		ServiceAccount: ServiceAccount,
		Rules:          Rules(),
		Aliases:        []string{"resourcequota"},
		New: func(ctx context.Context, c controllers.Context) (controllers.Controller, error) {
			return newFromContext(ctx, c, o)
		},
	}
}

func newFromContext(ctx context.Context, c controllers.Context, o Options) (controllers.Controller, error) {
	if c.ResourceInformers == nil {
		return nil, errors.New("the controller context has no resource informers")
	}
	cfg, err := c.ClientBuilder.Config(ServiceAccount)
	if err != nil {
		return nil, fmt.Errorf("client config for %s: %w", ServiceAccount, err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return newController(ctx, config{
		quotas:    client.CoreV1(),
		informer:  c.InformerFactory.Core().V1().ResourceQuotas(),
		informers: c.ResourceInformers,
		discover:  client.Discovery().ServerPreferredNamespacedResources,
		options:   o,
	}), nil
}

// config is what newController needs; unit tests fill it with fakes.
type config struct {
	quotas    corev1client.ResourceQuotasGetter
	informer  coreinformers.ResourceQuotaInformer
	informers *controllers.ResourceInformers
	discover  func() ([]*metav1.APIResourceList, error)
	options   Options
}

// controller keeps ResourceQuota status up to date.
type controller struct {
	quotas   corev1client.ResourceQuotasGetter
	lister   corelisters.ResourceQuotaLister
	synced   cache.DoneChecker
	registry quota.Registry
	monitors *monitors
	// queue holds quotas to recompute; missingUsage holds those whose
	// status lags their spec, served by workers of their own so that a
	// new quota gets its status promptly however long queue is.
	queue        workqueue.TypedRateLimitingInterface[string]
	missingUsage workqueue.TypedRateLimitingInterface[string]
	// workerLock is held for reading by each sync and for writing while
	// the monitors change, so that no usage is computed from an informer
	// that has not listed yet.
	workerLock sync.RWMutex
	options    Options
}

var _ controllers.Controller = &controller{}

func newController(ctx context.Context, c config) *controller {
	o := c.options
	if o.Workers <= 0 {
		o.Workers = defaultWorkers
	}
	if o.ResyncPeriod <= 0 {
		o.ResyncPeriod = defaultResyncPeriod
	}
	if o.DiscoveryPeriod <= 0 {
		o.DiscoveryPeriod = defaultDiscoveryPeriod
	}
	listerFunc := generic.ListerFuncForResourceFunc(c.informers.ForResource)
	rc := &controller{
		quotas:   c.quotas,
		lister:   c.informer.Lister(),
		synced:   c.informer.Informer().HasSyncedChecker(),
		registry: generic.NewRegistry(gcpquota.LegacyEvaluators(listerFunc)),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "resourcequota_primary"}),
		missingUsage: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "resourcequota_priority"}),
		options: o,
	}
	rc.monitors = newMonitors(c.informers, c.discover, rc.registry, listerFunc, rc.replenish)
	logger := klog.FromContext(ctx)
	_, err := c.informer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { rc.addQuota(logger, obj) },
		UpdateFunc: func(old, cur any) {
			// Status updates are this controller's own; only a change
			// of spec.hard calls for a recomputation now.
			o, ok1 := old.(*corev1.ResourceQuota)
			n, ok2 := cur.(*corev1.ResourceQuota)
			if ok1 && ok2 && quota.Equals(o.Spec.Hard, n.Spec.Hard) {
				return
			}
			rc.addQuota(logger, cur)
		},
		DeleteFunc: func(obj any) { rc.enqueue(logger, obj) },
	})
	if err != nil {
		// Only possible once the informer has stopped.
		utilruntime.HandleErrorWithContext(ctx, err, "Adding the resource quota event handler")
	}
	return rc
}

// Name implements controller.Interface.
func (c *controller) Name() string { return Name }

// Run starts the monitors, waits (at most one discovery period for the
// monitors) for the informers, then recomputes quotas until ctx is done.
func (c *controller) Run(ctx context.Context) {
	defer utilruntime.HandleCrashWithContext(ctx)
	logger := klog.FromContext(ctx)
	logger.Info("Starting resource quota controller")

	var wg sync.WaitGroup
	defer func() {
		logger.Info("Shutting down resource quota controller")
		c.queue.ShutDown()
		c.missingUsage.ShutDown()
		wg.Wait()
		c.monitors.StopAll()
	}()

	if !cache.WaitFor(ctx, "", c.synced) {
		return
	}
	c.resyncMonitors(ctx)
	wg.Go(func() {
		// The first sync above ran already.
		select {
		case <-ctx.Done():
			return
		case <-time.After(c.options.DiscoveryPeriod):
		}
		wait.UntilWithContext(ctx, c.resyncMonitors, c.options.DiscoveryPeriod)
	})
	for range c.options.Workers {
		wg.Go(func() { wait.UntilWithContext(ctx, c.worker(c.queue), time.Second) })
		wg.Go(func() { wait.UntilWithContext(ctx, c.worker(c.missingUsage), time.Second) })
	}
	wg.Go(func() { wait.UntilWithContext(ctx, c.enqueueAll, c.options.ResyncPeriod) })
	<-ctx.Done()
}

// resyncMonitors makes the monitors follow discovery. While new monitors
// list, workers wait (at most one discovery period); then every quota is
// recomputed, as the new resources may be counted by some.
func (c *controller) resyncMonitors(ctx context.Context) {
	logger := klog.FromContext(ctx)
	c.workerLock.Lock()
	defer c.workerLock.Unlock()
	added, _, partial, err := c.monitors.Sync(ctx, nil)
	if err := errors.Join(partial, err); err != nil {
		logger.Info("Resource quota discovery failed, keeping the resources it knows", "err", err)
	}
	if !added {
		return
	}
	syncCtx, cancel := context.WithTimeout(ctx, c.options.DiscoveryPeriod)
	defer cancel()
	if !cache.WaitFor(syncCtx, "", c.monitors.SyncedCheckers()...) && ctx.Err() == nil {
		logger.Info("Not all counted resources could be listed yet, counting anyway")
	}
	c.enqueueAll(ctx)
}

// enqueueAll queues every quota for a full recomputation.
func (c *controller) enqueueAll(ctx context.Context) {
	quotas, err := c.lister.List(labels.Everything())
	if err != nil {
		utilruntime.HandleErrorWithContext(ctx, err, "Listing resource quotas")
		return
	}
	for _, q := range quotas {
		c.enqueue(klog.FromContext(ctx), q)
	}
}

// enqueue queues a quota (or the tombstone of one) in the regular queue.
func (c *controller) enqueue(logger klog.Logger, obj any) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		logger.Error(err, "Couldn't get key", "object", obj)
		return
	}
	c.queue.Add(key)
}

// addQuota queues a quota, in the missing usage queue when its status
// lags its spec or lacks usage for a resource that can be counted.
func (c *controller) addQuota(logger klog.Logger, obj any) {
	q, ok := obj.(*corev1.ResourceQuota)
	if !ok {
		c.enqueue(logger, obj)
		return
	}
	key, err := cache.MetaNamespaceKeyFunc(q)
	if err != nil {
		logger.Error(err, "Couldn't get key", "object", klog.KObj(q))
		return
	}
	if c.missingUsageOf(q) {
		c.missingUsage.Add(key)
		return
	}
	c.queue.Add(key)
}

func (c *controller) missingUsageOf(q *corev1.ResourceQuota) bool {
	if !apiequality.Semantic.DeepEqual(q.Spec.Hard, q.Status.Hard) {
		return true
	}
	for name := range q.Status.Hard {
		if _, ok := q.Status.Used[name]; ok {
			continue
		}
		for _, e := range c.registry.List() {
			if len(e.MatchingResources([]corev1.ResourceName{name})) > 0 {
				return true
			}
		}
	}
	return false
}

// worker syncs quotas from queue until it shuts down.
func (c *controller) worker(queue workqueue.TypedRateLimitingInterface[string]) func(context.Context) {
	return func(ctx context.Context) {
		for c.processNext(ctx, queue) {
		}
	}
}

func (c *controller) processNext(ctx context.Context, queue workqueue.TypedRateLimitingInterface[string]) bool {
	key, quit := queue.Get()
	if quit {
		return false
	}
	defer queue.Done(key)
	c.workerLock.RLock()
	err := c.syncKey(ctx, key)
	c.workerLock.RUnlock()
	if apierrors.IsConflict(err) {
		// Our own last write has not reached the informer yet.
		klog.FromContext(ctx).V(4).Info("Resource quota changed meanwhile, will retry", "key", key)
		queue.AddRateLimited(key)
		return true
	}
	if err != nil {
		utilruntime.HandleErrorWithContext(ctx, err, "Syncing resource quota failed, will retry", "key", key)
		queue.AddRateLimited(key)
		return true
	}
	queue.Forget(key)
	return true
}

// syncKey recomputes the quota namespace/name, if it still exists.
func (c *controller) syncKey(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return err
	}
	q, err := c.lister.ResourceQuotas(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	return c.syncQuota(ctx, q)
}

// syncQuota sets status.hard to spec.hard and status.used to the usage of
// every hard resource an evaluator counts, and writes the status when it
// changed. Usage that could not be counted keeps its last value; usage of
// resources no longer hard is dropped.
func (c *controller) syncQuota(ctx context.Context, q *corev1.ResourceQuota) error {
	dirty := !apiequality.Semantic.DeepEqual(q.Spec.Hard, q.Status.Hard) || q.Status.Hard == nil || q.Status.Used == nil

	used := quota.Add(corev1.ResourceList{}, q.Status.Used)
	hard := quota.Add(corev1.ResourceList{}, q.Spec.Hard)
	var errs []error
	newUsage, err := quota.CalculateUsage(q.Namespace, q.Spec.Scopes, hard, c.registry, q.Spec.ScopeSelector)
	if err != nil {
		// Write what could be counted; retry the rest.
		errs = append(errs, err)
	}
	for name, value := range newUsage {
		used[name] = value
	}
	used = quota.Mask(used, quota.ResourceNames(hard))

	dirty = dirty || !quota.Equals(used, q.Status.Used)
	if dirty {
		updated := q.DeepCopy()
		updated.Status = corev1.ResourceQuotaStatus{Hard: hard, Used: used}
		if _, err := c.quotas.ResourceQuotas(q.Namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{}); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) == 1 {
		// Kept bare, so that callers can tell a conflict.
		return errs[0]
	}
	return utilerrors.NewAggregate(errs)
}

// replenish queues the quotas of namespace that count resource gr, after
// an object of it came or went there.
func (c *controller) replenish(ctx context.Context, gr schema.GroupResource, namespace string) {
	e := c.registry.Get(gr)
	if e == nil {
		return
	}
	quotas, err := c.lister.ResourceQuotas(namespace).List(labels.Everything())
	if err != nil {
		utilruntime.HandleErrorWithContext(ctx, err, "Listing resource quotas", "namespace", namespace)
		return
	}
	logger := klog.FromContext(ctx)
	for _, q := range quotas {
		names := append(quota.ResourceNames(q.Spec.Hard), quota.ResourceNames(q.Status.Hard)...)
		if len(e.MatchingResources(names)) > 0 {
			c.enqueue(logger, q)
		}
	}
}
