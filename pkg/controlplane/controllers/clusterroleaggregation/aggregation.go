// Package clusterroleaggregation is the controller that fills the rules of
// every ClusterRole with an aggregationRule with the rules of the
// ClusterRoles its selectors match, and keeps them so as ClusterRoles
// come, change and go.
package clusterroleaggregation

import (
	"context"
	"fmt"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"
	rbacinformers "k8s.io/client-go/informers/rbac/v1"
	rbacclient "k8s.io/client-go/kubernetes/typed/rbac/v1"
	rbaclisters "k8s.io/client-go/listers/rbac/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/gcp-project/gcp/pkg/controlplane/auth/rbac/bootstrappolicy"
	"github.com/gcp-project/gcp/pkg/controlplane/controllers"
)

// FieldManager is the server-side apply field manager that owns the rules
// of aggregated ClusterRoles (Kubernetes' own).
const FieldManager = "clusterrole-aggregation-controller"

// workers is how many aggregated ClusterRoles are synced at once.
const workers = 5

// Name is the controller's name for --controllers, kube-controller-manager's.
const Name = "clusterrole-aggregation-controller"

// ServiceAccount is the ServiceAccount in kube-system the ClusterRole
// aggregation controller runs as, kube-controller-manager's name for it;
// Rules are its permissions.
const ServiceAccount = "clusterrole-aggregation-controller"

// Rules are what ServiceAccount may do: ClusterRole
// system:controller:<ServiceAccount>.
func Rules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		// Must mutate clusterroles in any way to keep aggregated ones whole.
		bootstrappolicy.NewRule("escalate", "get", "list", "watch", "update", "patch").Groups(rbacv1.GroupName).Resources("clusterroles").Rule(),
	}
}

// Descriptor describes the controller for the controller manager.
func Descriptor() controllers.Descriptor {
	return controllers.Descriptor{
		Name:           Name,
		ServiceAccount: ServiceAccount,
		Rules:          Rules(),
		Requires:       []schema.GroupVersionResource{rbacv1.SchemeGroupVersion.WithResource("clusterroles")},
		Aliases:        []string{"clusterrole-aggregation"},
		New: func(_ context.Context, c controllers.Context) (controllers.Controller, error) {
			client, err := c.ClientBuilder.Client(ServiceAccount)
			if err != nil {
				return nil, fmt.Errorf("client for %s: %w", ServiceAccount, err)
			}
			return New(c.InformerFactory.Rbac().V1().ClusterRoles(), client.RbacV1())
		},
	}
}

// Controller aggregates ClusterRoles.
type Controller struct {
	client rbacclient.ClusterRolesGetter
	lister rbaclisters.ClusterRoleLister
	synced cache.DoneChecker
	queue  workqueue.TypedRateLimitingInterface[string]
}

// New registers the controller's handlers on the informer; it does not
// start it.
func New(clusterRoles rbacinformers.ClusterRoleInformer, client rbacclient.ClusterRolesGetter) (*Controller, error) {
	c := &Controller{
		client: client,
		lister: clusterRoles.Lister(),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "ClusterRoleAggregator"},
		),
	}
	// Which aggregated roles a change concerns depends on the labels before
	// and after it and on selectors that may change too; ClusterRoles are
	// few, so any change requeues every aggregated role, and each sync is
	// a read of the cache unless the rules differ.
	reg, err := clusterRoles.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { c.enqueueAggregated() },
		UpdateFunc: func(any, any) { c.enqueueAggregated() },
		DeleteFunc: func(any) { c.enqueueAggregated() },
	})
	if err != nil {
		return nil, fmt.Errorf("clusterrole informer: %w", err)
	}
	c.synced = reg.HasSyncedChecker()
	return c, nil
}

// Name implements controllers.Controller.
func (c *Controller) Name() string { return Name }

// Run works until ctx is done.
func (c *Controller) Run(ctx context.Context) {
	controllers.Workers[string]{Name: c.Name(), Queue: c.queue, Count: workers, Synced: []cache.DoneChecker{c.synced}, Sync: c.sync}.Run(ctx)
}

func (c *Controller) enqueueAggregated() {
	roles, err := c.lister.List(labels.Everything())
	if err != nil {
		utilruntime.HandleError(fmt.Errorf("listing ClusterRoles: %w", err))
		return
	}
	for _, r := range roles {
		if r.AggregationRule != nil {
			c.queue.Add(r.Name)
		}
	}
}

// sync applies the aggregated rules to ClusterRole name if they differ
// from its rules.
func (c *Controller) sync(ctx context.Context, name string) error {
	role, err := c.lister.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if role.AggregationRule == nil {
		return nil
	}
	rules, err := AggregatedRules(role, c.lister.List)
	if err != nil {
		return err
	}
	if equality.Semantic.DeepEqual(rules, role.Rules) {
		return nil
	}
	// Server-side apply, forced, of the rules alone, as Kubernetes does:
	// no conflict with a writer of other fields, no resourceVersion race.
	apply := rbacv1ac.ClusterRole(name)
	for _, r := range rules {
		apply.WithRules(rbacv1ac.PolicyRule().
			WithVerbs(r.Verbs...).
			WithAPIGroups(r.APIGroups...).
			WithResources(r.Resources...).
			WithResourceNames(r.ResourceNames...).
			WithNonResourceURLs(r.NonResourceURLs...))
	}
	if _, err := c.client.ClusterRoles().Apply(ctx, apply, metav1.ApplyOptions{FieldManager: FieldManager, Force: true}); err != nil {
		return err
	}
	klog.FromContext(ctx).V(2).Info("Aggregated ClusterRole", "clusterRole", name, "rules", len(rules))
	return nil
}

// AggregatedRules returns the rules role aggregates: for each of its
// selectors in order, the rules of the other ClusterRoles list returns for
// it, taken in order of name, each rule once (the first time it appears).
// It returns an empty, non-nil slice when nothing matches.
func AggregatedRules(role *rbacv1.ClusterRole, list func(labels.Selector) ([]*rbacv1.ClusterRole, error)) ([]rbacv1.PolicyRule, error) {
	rules := []rbacv1.PolicyRule{}
	if role.AggregationRule == nil {
		return rules, nil
	}
	for i := range role.AggregationRule.ClusterRoleSelectors {
		selector, err := metav1.LabelSelectorAsSelector(&role.AggregationRule.ClusterRoleSelectors[i])
		if err != nil {
			return nil, fmt.Errorf("ClusterRole %s, selector %d: %w", role.Name, i, err)
		}
		matched, err := list(selector)
		if err != nil {
			return nil, err
		}
		matched = slices.Clone(matched)
		slices.SortFunc(matched, func(a, b *rbacv1.ClusterRole) int { return strings.Compare(a.Name, b.Name) })
		for _, m := range matched {
			if m.Name == role.Name {
				continue
			}
			for _, r := range m.Rules {
				if !slices.ContainsFunc(rules, func(have rbacv1.PolicyRule) bool { return equality.Semantic.DeepEqual(have, r) }) {
					rules = append(rules, r)
				}
			}
		}
	}
	return rules, nil
}
