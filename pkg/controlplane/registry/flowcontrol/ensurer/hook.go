package ensurer

import (
	"context"
	"fmt"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// HookName is upstream's name of the post-start hook that maintains the
// bootstrap configuration; /readyz waits for its first successful pass.
const HookName = "priority-and-fairness-config-producer"

const (
	// DefaultInterval is how often the configuration is re-ensured after
	// start, as upstream: a deleted or edited mandatory object comes back
	// within a minute.
	DefaultInterval = time.Minute
	// startTimeout bounds the first pass: the hook fails the start if the
	// API does not accept the configuration by then, as upstream.
	startTimeout = 5 * time.Minute
	// retryInterval is the pause between first-pass attempts.
	retryInterval = time.Second
)

// Hook maintains the bootstrap configuration through the loopback client,
// re-ensuring it every DefaultInterval.
func Hook(hookCtx genericapiserver.PostStartHookContext) error {
	return NewHook(DefaultInterval)(hookCtx)
}

// NewHook returns the post-start hook with its periodic re-ensure every
// interval (tests use a short one). The hook returns once a first pass has
// succeeded, retrying every second for up to five minutes, and then keeps
// the configuration in the background until the server stops.
func NewHook(interval time.Duration) genericapiserver.PostStartHookFunc {
	return func(hookCtx genericapiserver.PostStartHookContext) error {
		client, err := kubernetes.NewForConfig(hookCtx.LoopbackClientConfig)
		if err != nil {
			return fmt.Errorf("failed to initialize clientset for APF - %w", err)
		}
		// --runtime-config=flowcontrol.apiserver.k8s.io/v1=false turns
		// the API off; there is then nothing to maintain.
		if _, err := client.Discovery().ServerResourcesForGroupVersion(flowcontrolv1.SchemeGroupVersion.String()); apierrors.IsNotFound(err) {
			klog.InfoS("Not maintaining the APF bootstrap configuration: the API is not served", "groupVersion", flowcontrolv1.SchemeGroupVersion)
			return nil
		}
		return run(hookCtx, client, interval, startTimeout)
	}
}

// run waits for its caches, makes a first successful pass within timeout,
// then re-ensures every interval in the background until ctx ends.
func run(ctx context.Context, client kubernetes.Interface, interval, timeout time.Duration) error {
	factory := informers.NewSharedInformerFactory(client, 0)
	fsInformer := factory.Flowcontrol().V1().FlowSchemas()
	plInformer := factory.Flowcontrol().V1().PriorityLevelConfigurations()
	synced := []cache.DoneChecker{fsInformer.Informer().HasSyncedChecker(), plInformer.Informer().HasSyncedChecker()}
	informersCtx, stopInformers := context.WithCancel(ctx)
	stop := func() {
		stopInformers()
		factory.Shutdown()
	}
	factory.Start(informersCtx.Done())

	ensure := func(ctx context.Context) error {
		return Ensure(ctx, client.FlowcontrolV1(), fsInformer.Lister(), plInformer.Lister())
	}
	startCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if !cache.WaitFor(startCtx, "", synced...) {
		stop()
		return fmt.Errorf("APF bootstrap ensurer timed out waiting for cache sync")
	}
	var lastErr error
	err := wait.PollUntilContextCancel(startCtx, retryInterval, true, func(ctx context.Context) (bool, error) {
		if err := ensure(ctx); err != nil {
			lastErr = err
			klog.ErrorS(err, "APF bootstrap ensurer ran into error, will retry later")
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		stop()
		if lastErr != nil {
			err = lastErr
		}
		return fmt.Errorf("unable to initialize APF bootstrap configuration: %w", err)
	}

	go func() {
		defer stop()
		wait.UntilWithContext(ctx, func(ctx context.Context) {
			if err := ensure(ctx); err != nil && ctx.Err() == nil {
				klog.ErrorS(err, "APF bootstrap ensurer ran into error, will retry later")
			}
		}, interval)
		klog.V(2).InfoS("APF bootstrap ensurer is exiting")
	}()
	return nil
}
