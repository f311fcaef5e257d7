// Package rootcacertpublisher is the controller that publishes the API
// server's CA bundle in every active namespace as ConfigMap
// kube-root-ca.crt, key ca.crt, and puts it back when it is edited or
// deleted.
package rootcacertpublisher

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/gcp-project/gcp/pkg/controlplane/auth/rbac/bootstrappolicy"
	"github.com/gcp-project/gcp/pkg/controlplane/controllers"
)

const (
	// ConfigMapName is the ConfigMap published in every namespace.
	ConfigMapName = "kube-root-ca.crt"
	// DataKey is its key holding the CA bundle.
	DataKey = "ca.crt"
	// DescriptionAnnotation describes what the ConfigMap is for.
	DescriptionAnnotation = "kubernetes.io/description"
	// Description is the value of DescriptionAnnotation, Kubernetes' own.
	Description = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. " +
		"No other usage is guaranteed across distributions of Kubernetes clusters."
)

// workers is how many namespaces are synced at once.
const workers = 2

// Name is the controller's name for --controllers, kube-controller-manager's.
const Name = "root-ca-certificate-publisher-controller"

// ServiceAccount is the ServiceAccount in kube-system the root CA publisher
// runs as, kube-controller-manager's name for it; Rules are its permissions.
const ServiceAccount = "root-ca-cert-publisher"

// Rules are what ServiceAccount may do: ClusterRole
// system:controller:<ServiceAccount>.
func Rules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		bootstrappolicy.NewRule("create", "update").Groups("").Resources("configmaps").Rule(),
		bootstrappolicy.EventsRule(),
	}
}

// Descriptor describes the controller for the controller manager.
func Descriptor() controllers.Descriptor {
	return controllers.Descriptor{
		Name:           Name,
		ServiceAccount: ServiceAccount,
		Rules:          Rules(),
		Aliases:        []string{"root-ca-cert-publisher"},
		NewOptions:     func() controllers.ControllerOptions { return &Options{} },
		New: func(_ context.Context, c controllers.Context) (controllers.Controller, error) {
			o, _ := c.Options.(*Options)
			if o == nil {
				o = &Options{}
			}
			config, err := c.ClientBuilder.Config(ServiceAccount)
			if err != nil {
				return nil, fmt.Errorf("client config for %s: %w", ServiceAccount, err)
			}
			// As kube-controller-manager: --root-ca-file, else the CA the
			// controller trusts the API server with.
			rootCA, err := o.bundle(config)
			if err != nil {
				return nil, err
			}
			if len(rootCA) == 0 {
				return nil, errors.New("no root CA bundle to publish (set --root-ca-file, or disable the controller)")
			}
			client, err := kubernetes.NewForConfig(config)
			if err != nil {
				return nil, fmt.Errorf("client for %s: %w", ServiceAccount, err)
			}
			return New(c.InformerFactory, client, rootCA)
		},
	}
}

// Publisher keeps ConfigMap kube-root-ca.crt in every active namespace.
type Publisher struct {
	client   kubernetes.Interface
	data     map[string]string
	nsLister corelisters.NamespaceLister
	cmLister corelisters.ConfigMapLister
	queue    *controllers.NamespaceQueue
}

// publishedConfigMaps keys, in a shared informer factory (which keeps one
// informer per Go type), an informer of only the ConfigMaps named
// kube-root-ca.crt, so that the publisher does not cache every ConfigMap
// of the cluster, nor take the place of the factory's ordinary
// *corev1.ConfigMap informer.
type publishedConfigMaps struct{ corev1.ConfigMap }

// ConfigMapInformer returns factory's informer of the ConfigMaps named
// kube-root-ca.crt in all namespaces, registering it on first use. It
// lists and watches with the factory's client.
func ConfigMapInformer(factory informers.SharedInformerFactory) cache.SharedIndexInformer {
	return factory.InformerFor(&publishedConfigMaps{}, func(client kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
		return coreinformers.NewFilteredConfigMapInformer(client, metav1.NamespaceAll, resync,
			cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc},
			func(o *metav1.ListOptions) {
				o.FieldSelector = fields.OneTermEqualSelector("metadata.name", ConfigMapName).String()
			})
	})
}

// New registers the publisher's informers (namespaces, and the
// kube-root-ca.crt ConfigMaps) in factory and its handlers on them; it
// does not start them.
func New(factory informers.SharedInformerFactory, client kubernetes.Interface, rootCA []byte) (*Publisher, error) {
	namespaces := factory.Core().V1().Namespaces()
	configMaps := ConfigMapInformer(factory)
	queue, err := controllers.NewNamespaceQueue("root_ca_cert_publisher", namespaces.Informer())
	if err != nil {
		return nil, err
	}
	onConfigMap := controllers.QueueNamespaceOf[*corev1.ConfigMap](queue, ConfigMapName, "root CA cert publisher")
	err = queue.Watch(configMaps, "configmap", cache.ResourceEventHandlerFuncs{
		AddFunc:    onConfigMap,
		UpdateFunc: func(_, obj any) { onConfigMap(obj) },
		DeleteFunc: onConfigMap,
	})
	if err != nil {
		return nil, err
	}
	p := &Publisher{
		client:   client,
		data:     map[string]string{DataKey: string(rootCA)},
		nsLister: namespaces.Lister(),
		cmLister: corelisters.NewConfigMapLister(configMaps.GetIndexer()),
		queue:    queue,
	}
	return p, nil
}

// Name implements controllers.Controller.
func (p *Publisher) Name() string { return Name }

// Run works until ctx is done.
func (p *Publisher) Run(ctx context.Context) {
	p.queue.Run(ctx, p.Name(), workers, recorded(p.sync))
}

// sync creates or repairs kube-root-ca.crt in namespace name if it is
// active.
func (p *Publisher) sync(ctx context.Context, name string) error {
	if active, err := controllers.NamespaceActive(p.nsLister, name); !active || err != nil {
		return err
	}

	cm, err := p.cmLister.ConfigMaps(name).Get(ConfigMapName)
	if apierrors.IsNotFound(err) {
		_, err = p.client.CoreV1().ConfigMaps(name).Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{
				Name:        ConfigMapName,
				Namespace:   name,
				Annotations: map[string]string{DescriptionAnnotation: Description},
			},
			Data: maps.Clone(p.data),
		}, metav1.CreateOptions{})
		// A namespace deleted or terminating since the cache saw it needs
		// nothing. AlreadyExists is retried: the cache then holds the
		// ConfigMap and its content is checked.
		if apierrors.IsNotFound(err) || apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			return nil
		}
		return err
	}
	if err != nil {
		return err
	}

	// As Kubernetes: the data must be exactly ours, and a description be
	// there (a different one is left alone).
	if maps.Equal(cm.Data, p.data) && cm.Annotations[DescriptionAnnotation] != "" {
		return nil
	}
	cm = cm.DeepCopy()
	cm.Data = maps.Clone(p.data)
	if cm.Annotations == nil {
		cm.Annotations = map[string]string{}
	}
	cm.Annotations[DescriptionAnnotation] = Description
	_, err = p.client.CoreV1().ConfigMaps(name).Update(ctx, cm, metav1.UpdateOptions{})
	if err == nil {
		klog.FromContext(ctx).V(2).Info("Restored the root CA bundle", "namespace", name)
	}
	return err
}
