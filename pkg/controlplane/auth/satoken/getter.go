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

// NewGetter reads service accounts from the informer cache and, for one the
// cache does not have (not yet synced, or just created), from the server.
// Secrets, needed only for the rare secret-bound token, are always read
// from the server, so the process does not cache every secret in memory.
func NewGetter(informers coreinformers.Interface, client kubernetes.Interface) Getter {
	return cachedGetter{sas: informers.ServiceAccounts().Lister(), client: client}
}

type cachedGetter struct {
	sas    corelisters.ServiceAccountLister
	client kubernetes.Interface
}

func (g cachedGetter) GetServiceAccount(ctx context.Context, namespace, name string) (*corev1.ServiceAccount, error) {
	sa, err := g.sas.ServiceAccounts(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return g.client.CoreV1().ServiceAccounts(namespace).Get(ctx, name, metav1.GetOptions{})
	}
	return sa, err
}

func (g cachedGetter) GetSecret(ctx context.Context, namespace, name string) (*corev1.Secret, error) {
	return g.client.CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
}
