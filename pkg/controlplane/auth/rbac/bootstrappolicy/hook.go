package bootstrappolicy

import (
	"context"
	"fmt"
	"time"

	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/kubernetes"
	"k8s.io/component-helpers/auth/rbac/reconciliation"
	"k8s.io/klog/v2"
)

// HookName is the post-start hook that reconciles the policy; /readyz is
// not ready until it has succeeded.
const HookName = "rbac/bootstrap-roles"

// Hook reconciles the bootstrap policy through the loopback client,
// retrying every second for up to 30 seconds (the server may still be
// settling, kube-system may not exist yet).
func Hook(hookCtx genericapiserver.PostStartHookContext) error {
	client, err := kubernetes.NewForConfig(hookCtx.LoopbackClientConfig)
	if err != nil {
		return err
	}
	var lastErr error
	err = wait.PollUntilContextTimeout(hookCtx, time.Second, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		lastErr = Reconcile(ctx, client)
		if lastErr != nil {
			klog.V(2).InfoS("Reconciling the bootstrap RBAC policy, will retry", "err", lastErr)
		}
		return lastErr == nil, nil
	})
	if err != nil && lastErr != nil {
		return fmt.Errorf("reconciling the bootstrap RBAC policy: %w", lastErr)
	}
	return err
}

// Reconcile makes one pass over the policy: missing objects are created,
// missing rules and subjects added; what users added stays, and objects
// annotated rbac.authorization.kubernetes.io/autoupdate=false are left
// alone.
func Reconcile(ctx context.Context, client kubernetes.Interface) error {
	var errs []error
	report := func(kind, name string, op reconciliation.ReconcileOperation, protected bool, err error) {
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("%s %s: %w", kind, name, err))
		case protected && op != reconciliation.ReconcileNone:
			klog.InfoS("Bootstrap RBAC object is protected from updates (autoupdate=false)", "kind", kind, "name", name)
		case op != reconciliation.ReconcileNone:
			klog.V(2).InfoS("Reconciled bootstrap RBAC object", "kind", kind, "name", name, "operation", op)
		}
	}
	rbac := client.RbacV1()
	for _, role := range ClusterRoles() {
		r, err := (&reconciliation.ReconcileRoleOptions{
			Role:    reconciliation.ClusterRoleRuleOwner{ClusterRole: &role},
			Client:  reconciliation.ClusterRoleModifier{Client: rbac.ClusterRoles()},
			Confirm: true,
		}).Run()
		report("ClusterRole", role.Name, op(r), r != nil && r.Protected, err)
	}
	for _, b := range ClusterRoleBindings() {
		r, err := (&reconciliation.ReconcileRoleBindingOptions{
			RoleBinding: reconciliation.ClusterRoleBindingAdapter{ClusterRoleBinding: &b},
			Client:      reconciliation.ClusterRoleBindingClientAdapter{Client: rbac.ClusterRoleBindings()},
			Confirm:     true,
		}).Run()
		report("ClusterRoleBinding", b.Name, bindingOp(r), r != nil && r.Protected, err)
	}
	for _, roles := range NamespaceRoles() {
		for _, role := range roles {
			r, err := (&reconciliation.ReconcileRoleOptions{
				Role:    reconciliation.RoleRuleOwner{Role: &role},
				Client:  reconciliation.RoleModifier{Client: rbac, NamespaceClient: client.CoreV1().Namespaces()},
				Confirm: true,
			}).Run()
			report("Role", role.Namespace+"/"+role.Name, op(r), r != nil && r.Protected, err)
		}
	}
	for _, bindings := range NamespaceRoleBindings() {
		for _, b := range bindings {
			r, err := (&reconciliation.ReconcileRoleBindingOptions{
				RoleBinding: reconciliation.RoleBindingAdapter{RoleBinding: &b},
				Client:      reconciliation.RoleBindingClientAdapter{Client: rbac, NamespaceClient: client.CoreV1().Namespaces()},
				Confirm:     true,
			}).Run()
			report("RoleBinding", b.Namespace+"/"+b.Name, bindingOp(r), r != nil && r.Protected, err)
		}
	}
	return utilerrors.NewAggregate(errs)
}

func op(r *reconciliation.ReconcileClusterRoleResult) reconciliation.ReconcileOperation {
	if r == nil {
		return reconciliation.ReconcileNone
	}
	return r.Operation
}

func bindingOp(r *reconciliation.ReconcileClusterRoleBindingResult) reconciliation.ReconcileOperation {
	if r == nil {
		return reconciliation.ReconcileNone
	}
	return r.Operation
}
