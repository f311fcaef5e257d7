// Package controllers holds the example's controller-runtime reconcilers,
// and their tests against gcp's test server (pkg/testserver).
package controllers

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	greetingsv1 "example.dev/reconciler/api/v1"
)

// MessageKey is the key of the greeting in the data of a Greeting's
// ConfigMap.
const MessageKey = "message"

// ConfigMapName is the name of the ConfigMap that the reconciler creates
// for the Greeting named greeting, in the Greeting's namespace.
func ConfigMapName(greeting string) string { return greeting + "-greeting" }

// Message is the greeting for spec.name name.
func Message(name string) string { return fmt.Sprintf("Hello, %s!", name) }

// GreetingReconciler answers each Greeting: it writes the greeting into
// status.message and into the data of a ConfigMap that the Greeting
// controls (so that the garbage collector deletes the ConfigMap with the
// Greeting).
type GreetingReconciler struct {
	// Client reads and writes Greetings and ConfigMaps.
	client.Client
	// Scheme knows the Greeting types, for owner references.
	Scheme *runtime.Scheme
}

// Reconcile brings the ConfigMap and status of one Greeting up to date.
func (r *GreetingReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	logger := log.FromContext(ctx)

	var greeting greetingsv1.Greeting
	if err := r.Get(ctx, req.NamespacedName, &greeting); err != nil {
		// Gone: its ConfigMap is the garbage collector's to delete.
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !greeting.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	message := Message(greeting.Spec.Name)

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Namespace: greeting.Namespace,
		Name:      ConfigMapName(greeting.Name),
	}}
	op, err := controllerutil.CreateOrUpdate(ctx, r.Client, cm, func() error {
		cm.Data = map[string]string{MessageKey: message}
		return controllerutil.SetControllerReference(&greeting, cm, r.Scheme)
	})
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("configmap %s: %w", cm.Name, err)
	}
	if op != controllerutil.OperationResultNone {
		logger.Info("ConfigMap written", "configmap", cm.Name, "operation", op)
	}

	if greeting.Status.Message != message {
		patch := client.MergeFrom(greeting.DeepCopy())
		greeting.Status.Message = message
		if err := r.Status().Patch(ctx, &greeting, patch); err != nil {
			return ctrl.Result{}, fmt.Errorf("status: %w", err)
		}
	}
	return ctrl.Result{}, nil
}

// SetupWithManager registers the reconciler with mgr: it runs for every
// Greeting, and again when a ConfigMap that a Greeting controls changes.
func (r *GreetingReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&greetingsv1.Greeting{}).
		Owns(&corev1.ConfigMap{}).
		Named("greeting").
		Complete(r)
}
