// Package garbagecollector is gcp's garbage collector: it deletes objects
// whose owners (metadata.ownerReferences) are gone, and carries out the
// foreground and orphan deletion of owners, for every resource that
// discovery lists (custom resources included, followed as definitions
// come and go). It behaves like kube-controller-manager's.
//
// Monitors (handlers on an informer per resource, shared with the quota
// controller through controllers.ResourceInformers) feed a graph builder,
// a single goroutine that keeps the dependency graph (objects by uid,
// their owners and dependents) and queues nodes in attemptToDelete and
// attemptToOrphan; workers take them from there and act with live reads
// and conditional writes, so that a stale graph never deletes a live
// object.
package garbagecollector

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"golang.org/x/time/rate"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/gcp-project/gcp/pkg/controlplane/auth/rbac/bootstrappolicy"
	"github.com/gcp-project/gcp/pkg/controlplane/controllers"
)

const (
	// defaultWorkers is how many workers take nodes from each queue, as
	// kube-controller-manager's --concurrent-gc-syncs.
	defaultWorkers = 20
	// defaultDiscoveryPeriod is how often discovery is read again to
	// follow resources that come and go.
	defaultDiscoveryPeriod = 30 * time.Second
	// absentOwnersSize bounds the cache of owners known to be gone.
	absentOwnersSize = 5000
	// orphanedOwnersSize bounds the memory of owners orphaned.
	orphanedOwnersSize = 5000
)

// Options adjust the garbage collector; zero fields take the defaults.
type Options struct {
	// Workers is how many workers take nodes from each of the two
	// queues (attemptToDelete and attemptToOrphan). Default 20.
	Workers int
	// DiscoveryPeriod is how often discovery is read again to watch new
	// resources and stop watching removed ones; it also bounds the wait
	// for the first listing before work starts. Default 30s.
	DiscoveryPeriod time.Duration
}

// Name is the controller's name for --controllers, kube-controller-manager's.
const Name = "garbage-collector-controller"

// ServiceAccount is the ServiceAccount in kube-system the garbage collector
// runs as, kube-controller-manager's name for it; Rules are its permissions.
const ServiceAccount = "generic-garbage-collector"

// Rules are what ServiceAccount may do: ClusterRole
// system:controller:<ServiceAccount>.
func Rules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		// Lists, watches, and updates or deletes dependents of any kind.
		bootstrappolicy.NewRule("get", "list", "watch", "patch", "update", "delete").Groups("*").Resources("*").Rule(),
		bootstrappolicy.EventsRule(),
	}
}

// Descriptor returns the garbage collector's descriptor, named Name with
// alias "garbagecollector", on by default.
func Descriptor() controllers.Descriptor { return DescriptorWithOptions(Options{}) }

// DescriptorWithOptions is Descriptor with adjusted options; tests use it
// to follow new resources faster.
func DescriptorWithOptions(o Options) controllers.Descriptor {
	return controllers.Descriptor{
		Name:           Name,
		ServiceAccount: ServiceAccount,
		Rules:          Rules(),
		Aliases:        []string{"garbagecollector"},
		New: func(_ context.Context, c controllers.Context) (controllers.Controller, error) {
			return newFromContext(c, o)
		},
	}
}

func newFromContext(c controllers.Context, o Options) (controllers.Controller, error) {
	cfg, err := c.ClientBuilder.Config(ServiceAccount)
	if err != nil {
		return nil, fmt.Errorf("client config for %s: %w", ServiceAccount, err)
	}
	cfg = rest.CopyConfig(cfg)
	// Collecting one object takes two requests (a live read, then the
	// delete or patch), so the collector gets twice the manager's rate,
	// as kube-controller-manager's does.
	cfg.QPS *= 2
	metadataClient, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	discoveryClient, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	if c.RESTMapper == nil {
		return nil, errors.New("the controller context has no REST mapper")
	}
	if c.ResourceInformers == nil {
		return nil, errors.New("the controller context has no resource informers")
	}
	if o.Workers <= 0 {
		o.Workers = defaultWorkers
	}
	if o.DiscoveryPeriod <= 0 {
		o.DiscoveryPeriod = defaultDiscoveryPeriod
	}
	return newController(config{
		metadata:  metadataClient,
		informers: c.ResourceInformers,
		// The manager's shared mapper (cached; reset here when the
		// resources change); monitors read discovery fresh.
		mapper:          c.RESTMapper,
		discover:        discoveryClient.ServerPreferredResources,
		workers:         o.Workers,
		discoveryPeriod: o.DiscoveryPeriod,
	}), nil
}

// config is what newController needs; unit tests fill it with fakes.
type config struct {
	metadata        metadata.Interface
	informers       *controllers.ResourceInformers
	mapper          meta.ResettableRESTMapper
	discover        func() ([]*metav1.APIResourceList, error)
	workers         int
	discoveryPeriod time.Duration
}

// controller wires monitors, graph builder and workers together.
type controller struct {
	builder         *graphBuilder
	collector       *collector
	monitors        *monitors
	mapper          meta.ResettableRESTMapper
	workers         int
	discoveryPeriod time.Duration
	// resyncMu makes resyncs (periodic, and refreshes') one at a time.
	resyncMu sync.Mutex
}

var _ controllers.Controller = &controller{}

func newController(c config) *controller {
	registerControllerMetrics()
	g := newGraph()
	absent := newAbsentOwners(absentOwnersSize)
	b := &graphBuilder{
		graph:           g,
		events:          workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[*event]{Name: "garbage_collector_graph_changes"}),
		attemptToDelete: newQueue("garbage_collector_attempt_to_delete"),
		attemptToOrphan: newQueue("garbage_collector_attempt_to_orphan"),
		absent:          absent,
	}
	ctrl := &controller{
		builder: b,
		collector: &collector{
			graph: g, builder: b, objects: &objects{client: c.metadata, mapper: c.mapper},
			absent: absent, orphaned: newOrphanedOwners(orphanedOwnersSize),
		},
		monitors:        newMonitors(c.informers, c.discover, b.add),
		mapper:          c.mapper,
		workers:         c.workers,
		discoveryPeriod: c.discoveryPeriod,
	}
	ctrl.collector.refresher = &refresher{refresh: ctrl.refresh}
	return ctrl
}

// newQueue is a work queue that retries a node quickly at first, backing
// off to every 5 minutes (a virtual owner that exists but is never
// observed, in a resource nobody can watch, is looked at that often), and
// bounds all retries to 10 per second, bursts of 100.
func newQueue(name string) workqueue.TypedRateLimitingInterface[*node] {
	limiter := workqueue.NewTypedMaxOfRateLimiter(
		workqueue.NewTypedItemExponentialFailureRateLimiter[*node](5*time.Millisecond, 5*time.Minute),
		&workqueue.TypedBucketRateLimiter[*node]{Limiter: rate.NewLimiter(rate.Limit(10), 100)},
	)
	return workqueue.NewTypedRateLimitingQueueWithConfig(limiter, workqueue.TypedRateLimitingQueueConfig[*node]{Name: name})
}

// Name implements controller.Interface.
func (c *controller) Name() string { return Name }

// Run starts the monitors, the graph builder and the workers, and runs
// them until ctx is done; it stops everything before returning. Workers
// wait while monitors list their resources (see resync), so none acts
// before the graph holds what the first listing shows.
func (c *controller) Run(ctx context.Context) {
	defer utilruntime.HandleCrashWithContext(ctx)
	logger := klog.FromContext(ctx)
	logger.Info("Starting garbage collector")

	var wg sync.WaitGroup
	defer func() {
		logger.Info("Shutting down garbage collector")
		c.builder.events.ShutDown()
		c.builder.attemptToDelete.ShutDown()
		c.builder.attemptToOrphan.ShutDown()
		wg.Wait()
		c.collector.refresher.wg.Wait()
		c.monitors.StopAll()
	}()
	wg.Go(c.builder.run)
	wg.Go(func() { wait.UntilWithContext(ctx, func(ctx context.Context) { _ = c.resync(ctx) }, c.discoveryPeriod) })
	for range c.workers {
		wg.Go(func() { wait.UntilWithContext(ctx, c.collector.runDeleteWorker, time.Second) })
		wg.Go(func() { wait.UntilWithContext(ctx, c.collector.runOrphanWorker, time.Second) })
	}
	<-ctx.Done()
}

// resync makes the monitors follow discovery and, when the set of
// resources changed, resets the REST mapper so that it knows new kinds.
// It runs every discovery period, and in each refresh (see fresh.go);
// one at a time. It returns what leaves a served resource unwatched (see
// controllers.Monitors.Sync); a partial discovery failure is only logged.
//
// When it starts monitors (at start, and for each new custom resource
// definition), it pauses the workers until the new monitors have shown
// their first listing and the graph builder has applied it, or one
// discovery period has passed, as upstream's collector does. Otherwise a
// worker could act on a listing half applied: a blocking dependent listed
// after its owner, whose foreground deletion would be finished without
// waiting for it, or the owner of an orphan deletion whose dependents
// further down the listing are not in the graph yet (the orphaner is kept
// from that by its own refresh too).
func (c *controller) resync(ctx context.Context) error {
	c.resyncMu.Lock()
	defer c.resyncMu.Unlock()
	paused := false
	added, removed, partial, err := c.monitors.Sync(ctx, func() {
		c.collector.paused.Lock()
		paused = true
	})
	if added || removed {
		c.mapper.Reset()
	}
	if partial != nil {
		klog.FromContext(ctx).Info("Garbage collector discovery failed for some groups, keeping their resources", "err", partial)
	}
	if err != nil {
		klog.FromContext(ctx).Info("Garbage collector does not watch every resource", "err", err)
	}
	if partial != nil || err != nil {
		resourcesSyncErrors.Inc()
	}
	if paused {
		c.catchUp(ctx)
		c.collector.paused.Unlock()
	}
	return err
}

// catchUp waits, at most one discovery period, for every monitor to show
// its first listing and for the graph builder to apply it.
func (c *controller) catchUp(ctx context.Context) {
	syncCtx, cancel := context.WithTimeout(ctx, c.discoveryPeriod)
	defer cancel()
	if !cache.WaitFor(syncCtx, "", c.monitors.SyncedCheckers()...) {
		if ctx.Err() == nil {
			klog.FromContext(ctx).Info("Not all resources could be listed yet, collecting garbage anyway")
		}
		return
	}
	_ = c.builder.caughtUp(syncCtx)
}
