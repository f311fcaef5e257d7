package bootstrappolicy

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/component-helpers/auth/rbac/reconciliation"
	"k8s.io/klog/v2"
)

// HookName is the post-start hook that reconciles the policy; /readyz is
// not ready until it has succeeded.
const HookName = "rbac/bootstrap-roles"

const (
	hookInterval = time.Second
	hookTimeout  = 30 * time.Second
)

// NewHook returns the post-start hook that reconciles policy through the
// loopback client, retrying the whole pass every second for up to 30
// seconds (storage may still be settling, kube-system may not exist yet).
// It fails the start if the policy could not be reconciled by then.
func NewHook(policy Policy) genericapiserver.PostStartHookFunc {
	return func(hookCtx genericapiserver.PostStartHookContext) error {
		client, err := kubernetes.NewForConfig(hookCtx.LoopbackClientConfig)
		if err != nil {
			return fmt.Errorf("bootstrap RBAC policy: %w", err)
		}
		return reconcileUntil(hookCtx, client, policy, hookInterval, hookTimeout)
	}
}

// reconcileUntil runs Reconcile every interval until a pass succeeds,
// ctx ends or timeout passes.
func reconcileUntil(ctx context.Context, client kubernetes.Interface, policy Policy, interval, timeout time.Duration) error {
	var lastErr error
	err := wait.PollUntilContextTimeout(ctx, interval, timeout, true, func(ctx context.Context) (bool, error) {
		err := Reconcile(ctx, client, policy)
		if err == nil {
			return true, nil
		}
		// A pass cut short by the deadline says less than the one before.
		if ctx.Err() == nil || lastErr == nil {
			lastErr = err
		}
		klog.V(2).InfoS("Reconciling the bootstrap RBAC policy failed, will retry", "err", err)
		return false, nil
	})
	if err != nil && lastErr != nil {
		return fmt.Errorf("unable to reconcile the bootstrap RBAC policy: %w", lastErr)
	}
	if err != nil {
		return fmt.Errorf("unable to reconcile the bootstrap RBAC policy: %w", err)
	}
	return nil
}

// Reconcile makes one pass over policy: missing objects are created,
// missing rules, aggregation selectors and subjects added. Nothing users
// added is removed, no object is deleted, and objects annotated
// rbac.authorization.kubernetes.io/autoupdate=false are left alone. It
// goes on past failures and returns them all.
//
// It lists the policy's objects first (listed) and reconciles up to
// passWorkers objects at once: each object is independent of the others,
// and a start waits for the pass (/readyz), which one request after
// another, two per object, made the last thing a start waited for.
//
// The aggregating roles (admin, edit, view) are written with the rules of
// the roles they aggregate (Policy.Aggregated), so a policy composed of
// several layers' UserRoles grants them complete.
func Reconcile(ctx context.Context, client kubernetes.Interface, policy Policy) error {
	policy, err := policy.Aggregated()
	if err != nil {
		return err
	}
	p := &pass{ctx: ctx}
	rbac := client.RbacV1()
	namespaces := client.CoreV1().Namespaces()
	l := listPolicy(ctx, client, policy)

	var objects []func()
	for _, role := range policy.ClusterRoles {
		objects = append(objects, func() {
			p.role("clusterrole", "", role.Name, &reconciliation.ReconcileRoleOptions{
				Role:   reconciliation.ClusterRoleRuleOwner{ClusterRole: &role},
				Client: listedClusterRoles{reconciliation.ClusterRoleModifier{Client: rbac.ClusterRoles()}, l},
			})
		})
	}
	for _, binding := range policy.ClusterRoleBindings {
		objects = append(objects, func() {
			p.binding("clusterrolebinding", "", binding.Name, &reconciliation.ReconcileRoleBindingOptions{
				RoleBinding: reconciliation.ClusterRoleBindingAdapter{ClusterRoleBinding: &binding},
				Client:      listedClusterRoleBindings{reconciliation.ClusterRoleBindingClientAdapter{Client: rbac.ClusterRoleBindings()}, l},
			})
		})
	}
	// The namespaced objects go to kube-system, which the modifiers create
	// when it is missing (a create that loses a race to another is fine);
	// if that fails the next pass retries.
	roles := policy.Roles
	for _, ns := range sortedKeys(roles) {
		for _, role := range roles[ns] {
			objects = append(objects, func() {
				p.role("role", ns, role.Name, &reconciliation.ReconcileRoleOptions{
					Role:   reconciliation.RoleRuleOwner{Role: &role},
					Client: listedRoles{reconciliation.RoleModifier{Client: rbac, NamespaceClient: namespaces}, l},
				})
			})
		}
	}
	bindings := policy.RoleBindings
	for _, ns := range sortedKeys(bindings) {
		for _, binding := range bindings[ns] {
			objects = append(objects, func() {
				p.binding("rolebinding", ns, binding.Name, &reconciliation.ReconcileRoleBindingOptions{
					RoleBinding: reconciliation.RoleBindingAdapter{RoleBinding: &binding},
					Client:      listedRoleBindings{reconciliation.RoleBindingClientAdapter{Client: rbac, NamespaceClient: namespaces}, l},
				})
			})
		}
	}
	runLimited(passWorkers, objects)

	if p.interrupted {
		p.errs = append(p.errs, fmt.Errorf("reconciling interrupted: %w", ctx.Err()))
	}
	if len(p.created)+len(p.updated) > 0 {
		sort.Strings(p.created)
		sort.Strings(p.updated)
		klog.InfoS("Reconciled the bootstrap RBAC policy", "created", p.created, "updated", p.updated)
	}
	return utilerrors.NewAggregate(p.errs)
}

// passWorkers is how many objects a pass reconciles at once.
const passWorkers = 8

// runLimited runs fs, at most n at once, and returns when all are done.
func runLimited(n int, fs []func()) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, n)
	for _, f := range fs {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			f()
		})
	}
	wg.Wait()
}

// pass accumulates the outcome of one Reconcile, from several goroutines.
type pass struct {
	ctx context.Context

	mu               sync.Mutex
	interrupted      bool
	created, updated []string
	errs             []error
}

func (p *pass) role(kind, namespace, name string, opts *reconciliation.ReconcileRoleOptions) {
	opts.Confirm = true
	opts.RemoveExtraPermissions = false
	p.run(kind, namespace, name, func() (reconciliation.ReconcileOperation, bool, any, error) {
		r, err := opts.Run()
		if err != nil {
			return "", false, nil, err
		}
		return r.Operation, r.Protected, r.MissingRules, nil
	})
}

func (p *pass) binding(kind, namespace, name string, opts *reconciliation.ReconcileRoleBindingOptions) {
	opts.Confirm = true
	opts.RemoveExtraSubjects = false
	p.run(kind, namespace, name, func() (reconciliation.ReconcileOperation, bool, any, error) {
		r, err := opts.Run()
		if err != nil {
			return "", false, nil, err
		}
		return r.Operation, r.Protected, r.MissingSubjects, nil
	})
}

// run reconciles one object, retrying conflicts (another server or the
// aggregation controller updating it) and unavailability, and records the
// outcome.
func (p *pass) run(kind, namespace, name string, once func() (reconciliation.ReconcileOperation, bool, any, error)) {
	ref := kind + ".rbac.authorization.k8s.io/" + name
	if namespace != "" {
		ref = kind + ".rbac.authorization.k8s.io/" + namespace + "/" + name
	}
	if p.ctx.Err() != nil {
		p.mu.Lock()
		p.interrupted = true
		p.mu.Unlock()
		return
	}
	// AlreadyExists: created since the pass listed it (or it lacks the
	// bootstrapping label), which the retry's Get finds.
	err := retry.OnError(retry.DefaultBackoff, func(err error) bool {
		return apierrors.IsConflict(err) || apierrors.IsServiceUnavailable(err) || apierrors.IsAlreadyExists(err)
	}, func() error {
		op, protected, missing, err := once()
		if err != nil {
			return err
		}
		switch {
		case protected && op != reconciliation.ReconcileNone:
			klog.InfoS("Skipped a bootstrap RBAC object protected by autoupdate=false", "object", ref, "missing", missing)
		case op == reconciliation.ReconcileCreate:
			klog.V(2).InfoS("Created a bootstrap RBAC object", "object", ref)
			p.record(&p.created, ref)
		case op == reconciliation.ReconcileRecreate:
			klog.V(2).InfoS("Recreated a bootstrap RBAC object with a new roleRef", "object", ref)
			p.record(&p.updated, ref)
		case op == reconciliation.ReconcileUpdate:
			klog.V(2).InfoS("Updated a bootstrap RBAC object", "object", ref, "added", missing)
			p.record(&p.updated, ref)
		}
		return nil
	})
	if err != nil {
		p.mu.Lock()
		p.errs = append(p.errs, fmt.Errorf("%s: %w", ref, err))
		p.mu.Unlock()
	}
}

// record appends ref to refs, one of p's lists.
func (p *pass) record(refs *[]string, ref string) {
	p.mu.Lock()
	*refs = append(*refs, ref)
	p.mu.Unlock()
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
