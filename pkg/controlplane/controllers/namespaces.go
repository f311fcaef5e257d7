package controllers

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// NamespaceActive reports whether namespace name exists in lister and is
// Active, neither gone nor Terminating: controllers that put objects into
// every namespace skip the others.
func NamespaceActive(lister corelisters.NamespaceLister, name string) (bool, error) {
	ns, err := lister.Get(name)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return ns.Status.Phase == corev1.NamespaceActive, nil
}

// NamespaceQueue is the work queue of a controller that keeps an object in
// every active namespace (the root CA publisher's ConfigMap, the service
// account controller's ServiceAccount): its keys are namespace names,
// queued when a namespace is added, and updated while active (resyncs
// land there too, which heals anything missed); Watch queues more.
type NamespaceQueue struct {
	workqueue.TypedRateLimitingInterface[string]
	synced []cache.DoneChecker
}

// NewNamespaceQueue returns the queue named name (its metrics' name), fed
// by namespaces, an informer of *corev1.Namespace.
func NewNamespaceQueue(name string, namespaces cache.SharedIndexInformer) (*NamespaceQueue, error) {
	q := &NamespaceQueue{TypedRateLimitingInterface: workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: name},
	)}
	err := q.Watch(namespaces, "namespace", cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if ns, ok := obj.(*corev1.Namespace); ok {
				q.Add(ns.Name)
			}
		},
		UpdateFunc: func(_, obj any) {
			if ns, ok := obj.(*corev1.Namespace); ok && ns.Status.Phase == corev1.NamespaceActive {
				q.Add(ns.Name)
			}
		},
	})
	if err != nil {
		return nil, err
	}
	return q, nil
}

// Watch registers handler on informer (of resource, for the error) and
// has Run wait for it to see the informer's first listing.
func (q *NamespaceQueue) Watch(informer cache.SharedIndexInformer, resource string, handler cache.ResourceEventHandler) error {
	reg, err := informer.AddEventHandler(handler)
	if err != nil {
		return fmt.Errorf("%s informer: %w", resource, err)
	}
	q.synced = append(q.synced, reg.HasSyncedChecker())
	return nil
}

// QueueNamespaceOf returns an event handler function that queues the
// namespace of an object of type T named name, or of its tombstone;
// another object is reported as unexpected by controller.
func QueueNamespaceOf[T metav1.Object](q *NamespaceQueue, name, controller string) func(obj any) {
	return func(obj any) {
		if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = tomb.Obj
		}
		o, ok := obj.(T)
		if !ok {
			utilruntime.HandleError(fmt.Errorf("%s: unexpected object %T", controller, obj))
			return
		}
		if o.GetName() == name {
			q.Add(o.GetNamespace())
		}
	}
}

// Run has count workers sync the queued namespaces, once the watched
// informers have listed, until ctx is done (see Workers); name names the
// controller in logs.
func (q *NamespaceQueue) Run(ctx context.Context, name string, count int, sync func(ctx context.Context, namespace string) error) {
	Workers[string]{Name: name, Queue: q, Count: count, Synced: q.synced, Sync: sync}.Run(ctx)
}
