package core

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/kubernetes"
)

// SystemNamespaces are created at start and cannot be deleted (the
// NamespaceLifecycle admission plugin keeps them), as upstream.
func SystemNamespaces() []string {
	return []string{metav1.NamespaceDefault, metav1.NamespaceSystem, metav1.NamespacePublic}
}

// SystemNamespacesHookName is the post-start hook that creates them;
// /readyz is not ready until it has.
const SystemNamespacesHookName = "bootstrap-system-namespaces"

// SystemNamespacesHook creates the system namespaces that do not exist yet,
// retrying until it succeeds or the server stops.
func SystemNamespacesHook(ctx genericapiserver.PostStartHookContext) error {
	client, err := kubernetes.NewForConfig(ctx.LoopbackClientConfig)
	if err != nil {
		return fmt.Errorf("%s: %w", SystemNamespacesHookName, err)
	}
	return wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		for _, name := range SystemNamespaces() {
			_, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
			if err != nil && !apierrors.IsAlreadyExists(err) {
				return false, nil
			}
		}
		return true, nil
	})
}
