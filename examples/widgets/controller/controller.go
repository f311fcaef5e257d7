// Package controller is the widget controller: it reports in each Widget's
// status that it has seen the Widget's current spec (status.observedGeneration,
// phase Ready and a Ready condition), writing through widgets/status with a
// dynamic client under its own service account.
package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/gcp-project/gcp/pkg/controlplane/controllers"

	v1 "example.dev/widgets/apis/widgets/v1"
)

// Name is the controller's name for --controllers.
const Name = "widget-controller"

// ServiceAccount is the ServiceAccount (in kube-system) the controller runs
// as; Rules are its permissions.
const ServiceAccount = "widget-controller"

// ReasonReconciled is the reason of the Ready condition and of the event
// the controller records when it has seen a new generation.
const ReasonReconciled = "Reconciled"

// workers is how many widgets are synced at once.
const workers = 2

// widgets is the resource the controller watches and updates.
var widgets = v1.SchemeGroupVersion.WithResource("widgets")

// Descriptor describes the controller for the controller manager.
func Descriptor() controllers.Descriptor {
	return controllers.Descriptor{
		Name:           Name,
		ServiceAccount: ServiceAccount,
		Rules:          Rules(),
		// Not started when --runtime-config turns the group off.
		Requires: []schema.GroupVersionResource{widgets},
		New: func(_ context.Context, c controllers.Context) (controllers.Controller, error) {
			config, err := c.ClientBuilder.Config(ServiceAccount)
			if err != nil {
				return nil, fmt.Errorf("client config for %s: %w", ServiceAccount, err)
			}
			client, err := dynamic.NewForConfig(config)
			if err != nil {
				return nil, fmt.Errorf("dynamic client for %s: %w", ServiceAccount, err)
			}
			kube, err := kubernetes.NewForConfig(config)
			if err != nil {
				return nil, fmt.Errorf("client for %s: %w", ServiceAccount, err)
			}
			broadcaster := events.NewBroadcaster(&events.EventSinkImpl{Interface: kube.EventsV1()})
			ctrl, err := New(c.DynamicInformerFactory.ForResource(widgets), client.Resource(widgets), broadcaster.NewRecorder(scheme(), Name))
			if err != nil {
				return nil, err
			}
			ctrl.broadcaster = broadcaster
			return ctrl, nil
		},
	}
}

// scheme knows the Widget kind, for the references of events.
func scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	s.AddKnownTypes(v1.SchemeGroupVersion, &v1.Widget{}, &v1.WidgetList{})
	return s
}

// Controller writes the status of Widgets whose generation it has not seen.
type Controller struct {
	client   dynamic.NamespaceableResourceInterface
	lister   cache.GenericLister
	synced   []cache.DoneChecker
	queue    workqueue.TypedRateLimitingInterface[string]
	recorder events.EventRecorder
	// broadcaster, if set, sends the recorder's events to the API server
	// while Run runs.
	broadcaster events.EventBroadcaster
}

// New registers the controller's handlers on the widgets informer; it does
// not start it. client writes widgets/status; recorder records an event
// for each generation reconciled.
func New(informer informers.GenericInformer, client dynamic.NamespaceableResourceInterface, recorder events.EventRecorder) (*Controller, error) {
	c := &Controller{
		client:   client,
		lister:   informer.Lister(),
		recorder: recorder,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "widget"},
		),
	}
	reg, err := informer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueue,
		UpdateFunc: func(_, obj any) { c.enqueue(obj) },
	})
	if err != nil {
		return nil, fmt.Errorf("widget informer: %w", err)
	}
	c.synced = []cache.DoneChecker{reg.HasSyncedChecker()}
	return c, nil
}

// enqueue adds a widget's namespace/name key to the queue.
func (c *Controller) enqueue(obj any) {
	key, err := cache.MetaNamespaceKeyFunc(obj)
	if err != nil {
		utilruntime.HandleError(fmt.Errorf("%s: cannot queue %T: %w", Name, obj, err))
		return
	}
	c.queue.Add(key)
}

// Name implements controllers.Controller.
func (c *Controller) Name() string { return Name }

// Run works until ctx is done.
func (c *Controller) Run(ctx context.Context) {
	if c.broadcaster != nil {
		c.broadcaster.StartRecordingToSink(ctx.Done())
		defer c.broadcaster.Shutdown()
	}
	controllers.Workers[string]{Name: c.Name(), Queue: c.queue, Count: workers, Synced: c.synced, Sync: c.sync}.Run(ctx)
}

// sync writes the status of widget key (namespace/name) if its generation
// is new to the status.
func (c *Controller) sync(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return err
	}
	obj, err := c.lister.ByNamespace(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return fmt.Errorf("widget %s: unexpected object %T", key, obj)
	}
	var w v1.Widget
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.UnstructuredContent(), &w); err != nil {
		return fmt.Errorf("widget %s: %w", key, err)
	}
	if !Reconcile(&w) {
		return nil
	}
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&w)
	if err != nil {
		return fmt.Errorf("widget %s: %w", key, err)
	}
	_, err = c.client.Namespace(namespace).UpdateStatus(ctx, &unstructured.Unstructured{Object: content}, metav1.UpdateOptions{FieldManager: Name})
	switch {
	case err == nil:
		klog.FromContext(ctx).V(2).Info("Reconciled widget", "widget", klog.KRef(namespace, name), "generation", w.Generation)
		c.recorder.Eventf(&w, nil, corev1.EventTypeNormal, ReasonReconciled, "Reconcile", "Observed generation %d", w.Generation)
		return nil
	case apierrors.IsNotFound(err), apierrors.IsConflict(err):
		// Deleted or changed since the cache saw it: the informer brings
		// the change and queues the widget again.
		return nil
	default:
		return err
	}
}

// Reconcile sets w's status for its current generation: observedGeneration,
// phase Ready and condition Ready True. It reports whether the status
// changed, false when the generation was already observed.
func Reconcile(w *v1.Widget) bool {
	if w.Status.ObservedGeneration == w.Generation {
		return false
	}
	w.SetGroupVersionKind(v1.SchemeGroupVersion.WithKind("Widget"))
	w.Status.ObservedGeneration = w.Generation
	w.Status.Phase = v1.PhaseReady
	meta.SetStatusCondition(&w.Status.Conditions, metav1.Condition{
		Type:               v1.ConditionReady,
		Status:             metav1.ConditionTrue,
		Reason:             ReasonReconciled,
		Message:            fmt.Sprintf("The widget controller has seen generation %d.", w.Generation),
		ObservedGeneration: w.Generation,
	})
	return true
}
