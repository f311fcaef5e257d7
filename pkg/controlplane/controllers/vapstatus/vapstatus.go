// Package vapstatus is the validatingadmissionpolicy-status-controller:
// it type-checks each ValidatingAdmissionPolicy's expressions against the
// schemas of the kinds the policy matches (and of its paramKind) and
// writes the warnings to status.typeChecking, with the generation it
// checked as status.observedGeneration, through the status subresource.
// Type checking only informs: a policy with warnings is still enforced.
package vapstatus

import (
	"context"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	validatingpolicy "k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/cel/openapi/resolver"
	admissionregistrationv1apply "k8s.io/client-go/applyconfigurations/admissionregistration/v1"
	admissionregistrationinformers "k8s.io/client-go/informers/admissionregistration/v1"
	admissionregistrationclient "k8s.io/client-go/kubernetes/typed/admissionregistration/v1"
	admissionregistrationlisters "k8s.io/client-go/listers/admissionregistration/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/gcp-project/gcp/pkg/controlplane/auth/rbac/bootstrappolicy"
	"github.com/gcp-project/gcp/pkg/controlplane/controllers"
)

// FieldManager owns the status fields the controller applies.
const FieldManager = "validatingadmissionpolicy-status"

// workers is how many policies are checked at once (upstream's default
// --concurrent-validating-admission-policy-status-syncs).
const workers = 5

// Name is the controller's name for --controllers, kube-controller-manager's.
const Name = "validatingadmissionpolicy-status-controller"

// ServiceAccount is the ServiceAccount in kube-system the
// ValidatingAdmissionPolicy status controller runs as, kube-controller-
// manager's name for it; Rules are its permissions.
const ServiceAccount = "validatingadmissionpolicy-status-controller"

// Rules are what ServiceAccount may do: ClusterRole
// system:controller:<ServiceAccount>.
func Rules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		bootstrappolicy.NewRule("get", "list", "watch").Groups("admissionregistration.k8s.io").Resources("validatingadmissionpolicies").Rule(),
		bootstrappolicy.NewRule("get", "patch", "update").Groups("admissionregistration.k8s.io").Resources("validatingadmissionpolicies/status").Rule(),
		bootstrappolicy.EventsRule(),
	}
}

// Descriptor describes the controller for the controller manager.
func Descriptor() controllers.Descriptor {
	return controllers.Descriptor{
		Name:           Name,
		ServiceAccount: ServiceAccount,
		Rules:          Rules(),
		Requires:       []schema.GroupVersionResource{admissionregistrationv1.SchemeGroupVersion.WithResource("validatingadmissionpolicies")},
		New: func(_ context.Context, c controllers.Context) (controllers.Controller, error) {
			name := ServiceAccount
			client, err := c.ClientBuilder.Client(name)
			if err != nil {
				return nil, fmt.Errorf("client for %s: %w", name, err)
			}
			discovery, err := c.ClientBuilder.DiscoveryClient(name)
			if err != nil {
				return nil, fmt.Errorf("discovery client for %s: %w", name, err)
			}
			if c.RESTMapper == nil {
				return nil, fmt.Errorf("%s needs a REST mapper", name)
			}
			checker := &validatingpolicy.TypeChecker{
				// The served OpenAPI v3 documents hold the schemas of native
				// and custom resources alike.
				SchemaResolver: &resolver.ClientDiscoveryResolver{Discovery: discovery},
				RestMapper:     c.RESTMapper,
			}
			return New(c.InformerFactory.Admissionregistration().V1().ValidatingAdmissionPolicies(),
				client.AdmissionregistrationV1().ValidatingAdmissionPolicies(), checker)
		},
	}
}

// Checker type-checks a policy; *validatingpolicy.TypeChecker is one.
type Checker interface {
	Check(policy *admissionregistrationv1.ValidatingAdmissionPolicy) []admissionregistrationv1.ExpressionWarning
}

var _ Checker = (*validatingpolicy.TypeChecker)(nil)

// Controller keeps the type-checking status of every policy current.
type Controller struct {
	lister  admissionregistrationlisters.ValidatingAdmissionPolicyLister
	client  admissionregistrationclient.ValidatingAdmissionPolicyInterface
	checker Checker
	synced  []cache.DoneChecker
	queue   workqueue.TypedRateLimitingInterface[string]
}

// New registers the controller's handlers on the informer; it does not
// start it.
func New(policies admissionregistrationinformers.ValidatingAdmissionPolicyInformer, client admissionregistrationclient.ValidatingAdmissionPolicyInterface, checker Checker) (*Controller, error) {
	c := &Controller{
		lister:  policies.Lister(),
		client:  client,
		checker: checker,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: Name},
		),
	}
	enqueue := func(obj any) {
		if p, ok := obj.(*admissionregistrationv1.ValidatingAdmissionPolicy); ok && p.Name != "" {
			c.queue.Add(p.Name)
		}
	}
	reg, err := policies.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
	})
	if err != nil {
		return nil, fmt.Errorf("validatingadmissionpolicy informer: %w", err)
	}
	c.synced = []cache.DoneChecker{reg.HasSyncedChecker()}
	return c, nil
}

// Name implements controllers.Controller.
func (c *Controller) Name() string { return Name }

// Run works until ctx is done.
func (c *Controller) Run(ctx context.Context) {
	controllers.Workers[string]{Name: c.Name(), Queue: c.queue, Count: workers, Synced: c.synced, Sync: c.sync}.Run(ctx)
}

// sync type-checks policy name if its status does not yet describe its
// current generation, and applies the result to its status.
func (c *Controller) sync(ctx context.Context, name string) error {
	policy, err := c.lister.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if policy.Generation <= policy.Status.ObservedGeneration {
		return nil
	}
	warnings := c.checker.Check(policy)
	applied := make([]*admissionregistrationv1apply.ExpressionWarningApplyConfiguration, 0, len(warnings))
	for _, w := range warnings {
		applied = append(applied, admissionregistrationv1apply.ExpressionWarning().WithFieldRef(w.FieldRef).WithWarning(w.Warning))
	}
	status := admissionregistrationv1apply.ValidatingAdmissionPolicy(policy.Name).
		WithStatus(admissionregistrationv1apply.ValidatingAdmissionPolicyStatus().
			WithObservedGeneration(policy.Generation).
			WithTypeChecking(admissionregistrationv1apply.TypeChecking().WithExpressionWarnings(applied...)))
	_, err = c.client.ApplyStatus(ctx, status, metav1.ApplyOptions{FieldManager: FieldManager, Force: true})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
