package satoken

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
)

// NewGetter reads from the informer caches and, for an object the cache
// does not have (not yet synced, or just created), from the server.
func NewGetter(informers coreinformers.Interface, client kubernetes.Interface) Getter {
	return cachedGetter{sas: informers.ServiceAccounts().Lister(), secrets: informers.Secrets().Lister(), client: client}
}

type cachedGetter struct {
	sas     corelisters.ServiceAccountLister
	secrets corelisters.SecretLister
	client  kubernetes.Interface
}

func (g cachedGetter) GetServiceAccount(ctx context.Context, namespace, name string) (*corev1.ServiceAccount, error) {
	sa, err := g.sas.ServiceAccounts(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return g.client.CoreV1().ServiceAccounts(namespace).Get(ctx, name, metav1.GetOptions{})
	}
	return sa, err
}

func (g cachedGetter) GetSecret(ctx context.Context, namespace, name string) (*corev1.Secret, error) {
	s, err := g.secrets.Secrets(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return g.client.CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
	}
	return s, err
}
