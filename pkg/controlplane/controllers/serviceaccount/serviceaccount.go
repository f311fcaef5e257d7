// Package serviceaccount is the controller that gives every active
// namespace a ServiceAccount named "default", creating it with the
// namespace and again whenever it is deleted.
package serviceaccount

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/gcp-project/gcp/pkg/controlplane/auth/rbac/bootstrappolicy"
	"github.com/gcp-project/gcp/pkg/controlplane/controllers"
)

// DefaultName is the name of the ServiceAccount ensured in every namespace.
const DefaultName = "default"

// workers is how many namespaces are synced at once.
const workers = 2

// Name is the controller's name for --controllers, kube-controller-manager's.
const Name = "serviceaccount-controller"

// ServiceAccount is the ServiceAccount in kube-system the service account
// controller runs as, kube-controller-manager's name for it; Rules are its
// permissions.
const ServiceAccount = "service-account-controller"

// Rules are what ServiceAccount may do: ClusterRole
// system:controller:<ServiceAccount>.
func Rules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		bootstrappolicy.NewRule("create").Groups("").Resources("serviceaccounts").Rule(),
		bootstrappolicy.EventsRule(),
	}
}

// Descriptor describes the controller for the controller manager.
func Descriptor() controllers.Descriptor {
	return controllers.Descriptor{
		Name:           Name,
		ServiceAccount: ServiceAccount,
		Rules:          Rules(),
		Aliases:        []string{"serviceaccount"},
		New: func(_ context.Context, c controllers.Context) (controllers.Controller, error) {
			client, err := c.ClientBuilder.Client(ServiceAccount)
			if err != nil {
				return nil, fmt.Errorf("client for %s: %w", ServiceAccount, err)
			}
			core := c.InformerFactory.Core().V1()
			return New(core.Namespaces(), core.ServiceAccounts(), client)
		},
	}
}

// Controller ensures ServiceAccount "default" in every active namespace.
type Controller struct {
	client   kubernetes.Interface
	nsLister corelisters.NamespaceLister
	saLister corelisters.ServiceAccountLister
	queue    *controllers.NamespaceQueue
}

// New registers the controller's handlers on the informers; it does not
// start them.
func New(namespaces coreinformers.NamespaceInformer, serviceAccounts coreinformers.ServiceAccountInformer, client kubernetes.Interface) (*Controller, error) {
	queue, err := controllers.NewNamespaceQueue("serviceaccount", namespaces.Informer())
	if err != nil {
		return nil, err
	}
	err = queue.Watch(serviceAccounts.Informer(), "serviceaccount", cache.ResourceEventHandlerFuncs{
		DeleteFunc: controllers.QueueNamespaceOf[*corev1.ServiceAccount](queue, DefaultName, "serviceaccount controller"),
	})
	if err != nil {
		return nil, err
	}
	c := &Controller{
		client:   client,
		nsLister: namespaces.Lister(),
		saLister: serviceAccounts.Lister(),
		queue:    queue,
	}
	return c, nil
}

// Name implements controllers.Controller.
func (c *Controller) Name() string { return Name }

// Run works until ctx is done.
func (c *Controller) Run(ctx context.Context) {
	c.queue.Run(ctx, c.Name(), workers, c.sync)
}

// sync creates the default ServiceAccount in namespace name if it is
// active and the account is missing.
func (c *Controller) sync(ctx context.Context, name string) error {
	if active, err := controllers.NamespaceActive(c.nsLister, name); !active || err != nil {
		return err
	}
	_, err := c.saLister.ServiceAccounts(name).Get(DefaultName)
	if err == nil || !apierrors.IsNotFound(err) {
		return err
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: DefaultName, Namespace: name}}
	_, err = c.client.CoreV1().ServiceAccounts(name).Create(ctx, sa, metav1.CreateOptions{})
	switch {
	case err == nil:
		klog.FromContext(ctx).V(2).Info("Created the default service account", "namespace", name)
		return nil
	case apierrors.IsAlreadyExists(err),
		// The namespace began terminating after the cache saw it.
		apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
		return nil
	default:
		return err
	}
}
