package controllers

import (
	// client-go's metrics (rest_client_*, workqueue_*, leader election,
	// informers' FIFOs) in the server's /metrics, as kube-apiserver and
	// kube-controller-manager serve them.
	"context"
	"errors"
	"fmt"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/server/healthz"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/controller-manager/app"
	"k8s.io/controller-manager/controller"
	"k8s.io/controller-manager/pkg/clientbuilder"
	controllerhealthz "k8s.io/controller-manager/pkg/healthz"
	"k8s.io/controller-manager/pkg/informerfactory"
	"k8s.io/klog/v2"

	"github.com/gcp-project/gcp/pkg/controlplane/version"
)

// Run serves health and metrics, waits for the API server, then (after
// winning leader election, when it is on) builds and runs the enabled
// controllers until ctx is done. It returns an error instead of exiting;
// losing the lease while ctx is live is the error "leader election lost",
// returned within seconds with the controllers and the serving stopped, so
// the process exits and its supervisor restarts it clean into the
// election instead of running controllers twice (kube-controller-manager
// exits the same way). Stopping (ctx done) at any point, even before the
// API server answered, is not an error.
func Run(ctx context.Context, c *Config) error {
	// kubernetes_build_info and kubernetes_feature_enabled, as
	// kube-controller-manager serves them.
	version.RegisterMetrics()
	utilfeature.DefaultMutableFeatureGate.AddMetrics()
	err := run(ctx, c)
	if err != nil && ctx.Err() != nil {
		klog.FromContext(ctx).V(2).Info("Stopped before the controllers were running", "reason", err)
		return nil
	}
	return err
}

func run(ctx context.Context, c *Config) error {
	ctx, cancel := context.WithCancel(ctx)
	var serving sync.WaitGroup
	// Serving stops when ctx does: cancel, then wait. Waiting first hung a
	// manager that returned with ctx live (the lease lost) for ever, still
	// answering /healthz ok.
	defer func() {
		cancel()
		serving.Wait()
	}()

	healthzHandler := controllerhealthz.NewMutableHealthzHandler(healthz.PingHealthz)
	// /readyz: the API server was reached and, once leading, the
	// controllers' informers have synced.
	var reached, synced atomic.Bool
	readyzChecks := []healthz.HealthChecker{healthz.PingHealthz,
		flagCheck("apiserver-reachable", &reached, "the API server has not answered yet"),
		flagCheck("informer-sync", &synced, "the controllers' informers have not synced")}
	if c.SecureServing != nil {
		mux := app.NewBaseHandler(&c.Generic.Debugging, healthzHandler)
		healthz.InstallReadyzHandler(mux, readyzChecks...)
		handler := app.BuildHandlerChain(mux, &c.Authorization, &c.Authentication)
		_, stopped, err := c.SecureServing.Serve(handler, 0, ctx.Done())
		if err != nil {
			return fmt.Errorf("serving: %w", err)
		}
		serving.Add(1)
		go func() { defer serving.Done(); <-stopped }()
	}

	root, err := kubernetes.NewForConfig(c.Kubeconfig)
	if err != nil {
		return err
	}
	if err := waitForAPIServer(ctx, root); err != nil {
		return err
	}
	reached.Store(true)
	if c.OnAPIServerReached != nil {
		c.OnAPIServerReached()
	}
	if c.Generic.LeaderElection.LeaderElect {
		// A standby has nothing to sync; it is ready to take over.
		synced.Store(true)
	}

	run := func(ctx context.Context) error { return runControllers(ctx, c, root, healthzHandler, &synced) }
	if !c.Generic.LeaderElection.LeaderElect {
		return run(ctx)
	}
	return runLeaderElected(ctx, c, root, run)
}

// waitForAPIServer polls /healthz until the API server answers ok, saying
// every few seconds that it waits and what the API server last answered.
func waitForAPIServer(ctx context.Context, client kubernetes.Interface) error {
	var last error
	var logged time.Time
	logger := klog.FromContext(ctx)
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, startupWait, true, func(ctx context.Context) (bool, error) {
		var status int
		attempt, cancel := context.WithTimeout(ctx, startupAttemptTimeout)
		defer cancel()
		last = client.Discovery().RESTClient().Get().AbsPath("/healthz").Do(attempt).StatusCode(&status).Error()
		if status == 200 {
			return true, nil
		}
		if ctx.Err() == nil && time.Since(logged) >= startupLogPeriod {
			logger.Info("Waiting for the API server to be healthy", "status", status, "err", last)
			logged = time.Now()
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the API server: %w (last: %v)", err, last)
	}
	return nil
}

// runLeaderElected runs run while holding the lease and returns once run
// has stopped. Cancelling ctx releases the lease at once. Losing the lease
// stops run and returns "leader election lost"; run returning by itself
// (a controller failed to build) releases the lease and returns its error.
// Either way the manager never stays in the election with nothing running.
func runLeaderElected(ctx context.Context, c *Config, client kubernetes.Interface, run func(context.Context) error) error {
	if err := checkLeaseAPI(client); err != nil {
		return err
	}
	host, _ := os.Hostname()
	id := host + "_" + string(uuid.NewUUID())
	le := c.Generic.LeaderElection
	lock, err := resourcelock.New(le.ResourceLock, le.ResourceNamespace, le.ResourceName,
		client.CoreV1(), client.CoordinationV1(), resourcelock.ResourceLockConfig{Identity: id})
	if err != nil {
		return fmt.Errorf("leader election lock: %w", err)
	}
	electing, stopElecting := context.WithCancel(ctx)
	defer stopElecting()
	// The elector starts OnStartedLeading in a goroutine of its own that
	// may not have begun when its Run returns; over, under mu, tells a
	// late one to do nothing, so running counts every run that started.
	var (
		mu       sync.Mutex
		over     bool
		running  sync.WaitGroup
		runErr   error
		returned bool // run returned while still leading
	)
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   le.LeaseDuration.Duration,
		RenewDeadline:   le.RenewDeadline.Duration,
		RetryPeriod:     le.RetryPeriod.Duration,
		ReleaseOnCancel: true,
		Name:            le.ResourceName,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(leading context.Context) {
				mu.Lock()
				if over {
					mu.Unlock()
					return
				}
				running.Add(1)
				mu.Unlock()
				defer running.Done()
				klog.InfoS("Leading, starting controllers", "identity", id)
				err := run(leading)
				mu.Lock()
				runErr, returned = err, leading.Err() == nil
				mu.Unlock()
				// Nothing left to lead for: release the lease and leave
				// the election.
				stopElecting()
			},
			OnStoppedLeading: func() {
				if ctx.Err() == nil {
					klog.InfoS("Stopped leading", "identity", id)
				}
			},
		},
	})
	if err != nil {
		return fmt.Errorf("leader election: %w", err)
	}
	elector.Run(electing)

	mu.Lock()
	over = true
	mu.Unlock()
	// The controllers' context ended with the election; wait for them,
	// but not for ever: past the lease duration another manager may lead,
	// and the process must exit (and be restarted) rather than hang.
	stopped := make(chan struct{})
	go func() { running.Wait(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(le.LeaseDuration.Duration):
		klog.InfoS("Controllers did not stop within the lease duration; returning without waiting for them", "leaseDuration", le.LeaseDuration.Duration)
	}
	mu.Lock()
	defer mu.Unlock()
	switch {
	case returned:
		return runErr
	case ctx.Err() != nil:
		return nil
	default:
		return errors.New("leader election lost")
	}
}

// checkLeaseAPI fails at once when the API server does not serve the
// Leases leader election needs (a stack without the coordination layer),
// instead of retrying the lock for ever.
func checkLeaseAPI(client kubernetes.Interface) error {
	resources, err := client.Discovery().ServerResourcesForGroupVersion(coordinationv1.SchemeGroupVersion.String())
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("leader election: discovering %s: %w", coordinationv1.SchemeGroupVersion, err)
	}
	if err == nil && slices.ContainsFunc(resources.APIResources, func(r metav1.APIResource) bool { return r.Name == "leases" }) {
		return nil
	}
	return fmt.Errorf("leader election needs %s leases, which the API server does not serve: run with --leader-elect=false, or serve the coordination layer",
		coordinationv1.SchemeGroupVersion)
}

// runControllers builds the enabled controllers, starts the informers
// they registered, runs the controllers and waits for them to stop.
func runControllers(ctx context.Context, c *Config, root kubernetes.Interface, healthzHandler *controllerhealthz.MutableHealthzHandler, synced *atomic.Bool) error {
	var builder clientbuilder.ControllerClientBuilder = clientbuilder.SimpleControllerClientBuilder{ClientConfig: c.Kubeconfig}
	if c.UseServiceAccountCredentials {
		// Without the manager's own client certificate: the API server
		// would authenticate that before the service account token.
		builder = clientbuilder.NewDynamicClientBuilder(rest.AnonymousClientConfig(c.Kubeconfig), root.CoreV1(), "kube-system")
	}
	builder = patientBuilder{ControllerClientBuilder: builder, ctx: ctx}
	resync := func() time.Duration {
		min := c.Generic.MinResyncPeriod.Duration
		return min + time.Duration(rand.Float64()*float64(min))
	}
	sharedClient, err := kubernetes.NewForConfig(c.Kubeconfig)
	if err != nil {
		return fmt.Errorf("informers' client: %w", err)
	}
	metadataClient, err := metadata.NewForConfig(c.Kubeconfig)
	if err != nil {
		return fmt.Errorf("metadata informers' client: %w", err)
	}
	dynamicClient, err := dynamic.NewForConfig(c.Kubeconfig)
	if err != nil {
		return fmt.Errorf("dynamic informers' client: %w", err)
	}
	informerName := namedInformers(ctx, InformerName)
	defer informerName.Release()
	shared := informers.NewSharedInformerFactoryWithOptions(sharedClient, resync(), informers.WithTransform(TrimManagedFields),
		informers.WithInformerName(informerName))
	meta := metadatainformer.NewSharedInformerFactoryWithOptions(metadataClient, resync(), metadatainformer.WithTransform(TrimManagedFields))
	dyn := dynamicinformer.NewDynamicSharedInformerFactory(dynamicClient, resync())
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(root.Discovery()))
	go wait.Until(mapper.Reset, 30*time.Second, ctx.Done())

	started := make(chan struct{})
	resourceInformers := NewResourceInformers(ctx, shared, metadataClient, resync(), started)
	cc := Context{
		ControllerContext: app.ControllerContext{
			ClientBuilder:                   builder,
			InformerFactory:                 shared,
			ObjectOrMetadataInformerFactory: informerfactory.NewInformerFactory(shared, meta),
			RESTMapper:                      mapper,
			Stop:                            ctx.Done(),
			InformersStarted:                started,
			ResyncPeriod:                    resync,
		},
		DynamicInformerFactory: dyn,
		ResourceInformers:      resourceInformers,
	}

	var running []Controller
	for _, d := range served(klog.FromContext(ctx), root.Discovery(), c.enabled()) {
		own := cc
		own.Options = c.ControllerOptions[d.Name]
		ctrl, err := d.New(ctx, own)
		if err != nil {
			return fmt.Errorf("controller %s: %w", d.Name, err)
		}
		check := controllerhealthz.NamedPingChecker(d.Name)
		if hc, ok := ctrl.(controller.HealthCheckable); ok && hc.HealthChecker() != nil {
			check = controllerhealthz.NamedHealthChecker(d.Name, hc.HealthChecker())
		}
		healthzHandler.AddHealthChecker(check)
		running = append(running, ctrl)
	}

	shared.Start(ctx.Done())
	meta.Start(ctx.Done())
	dyn.Start(ctx.Done())
	close(started)
	synced.Store(false)
	go func() {
		shared.WaitForCacheSync(ctx.Done())
		meta.WaitForCacheSync(ctx.Done())
		dyn.WaitForCacheSync(ctx.Done())
		synced.Store(ctx.Err() == nil)
		if ctx.Err() == nil && c.OnInformersSynced != nil {
			c.OnInformersSynced()
		}
	}()
	defer shared.Shutdown()
	defer meta.Shutdown()
	defer dyn.Shutdown()
	defer resourceInformers.Wait()

	var wg sync.WaitGroup
	for _, ctrl := range running {
		wg.Add(1)
		go func() {
			defer wg.Done()
			klog.InfoS("Starting controller", "controller", ctrl.Name())
			ctrl.Run(ctx)
		}()
		if d := c.Generic.ControllerStartInterval.Duration; d > 0 {
			time.Sleep(d)
		}
	}
	<-ctx.Done()
	wg.Wait()
	return nil
}

// flagCheck is a health check named name that passes once flag is set.
func flagCheck(name string, flag *atomic.Bool, failure string) healthz.HealthChecker {
	return healthz.NamedCheck(name, func(*http.Request) error {
		if !flag.Load() {
			return errors.New(failure)
		}
		return nil
	})
}

// enabled returns the descriptors --controllers turns on, in order.
func (c *Config) enabled() []Descriptor {
	disabledByDefault := sets.NewString()
	for _, d := range c.Descriptors {
		if d.DisabledByDefault {
			disabledByDefault.Insert(d.Name)
		}
	}
	var out []Descriptor
	for _, d := range c.Descriptors {
		if !app.IsControllerEnabled(d.Name, disabledByDefault, c.Generic.Controllers) {
			klog.InfoS("Controller is disabled", "controller", d.Name)
			continue
		}
		out = append(out, d)
	}
	return out
}
