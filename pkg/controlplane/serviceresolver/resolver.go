// Package serviceresolver resolves the service references of APIServices,
// admission webhooks and CRD conversion webhooks in a control plane that
// has no Services. An operator maps references to addresses in ConfigMap
// kube-system/service-addresses, one key per reference:
//
//	<name>.<namespace>.<port>: <host>:<port>
//
// for example `api.wardle.8443: 127.0.0.1:9443`. The ConfigMap is read
// through an informer, so a change applies to the next call without a
// restart, and writing it takes the RBAC rights to kube-system's
// configmaps (cluster admins). A reference without a key resolves by DNS as
// <name>.<namespace>.svc:<port>, which works where a cluster DNS answers
// (gcp running in a Kubernetes cluster). Either way the TLS server name
// stays <name>.<namespace>.svc, as kube-apiserver sends it, so serving
// certificates made for kube-apiserver work unchanged.
package serviceresolver

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

// Namespace and ConfigMapName name the ConfigMap of service addresses.
const (
	Namespace     = metav1.NamespaceSystem
	ConfigMapName = "service-addresses"
)

// dnsTimeout bounds the DNS lookup of an unmapped reference.
const dnsTimeout = 2 * time.Second

// Resolver maps service references to https URLs; it implements the
// ServiceResolver interfaces of k8s.io/apiserver's webhooks,
// apiextensions-apiserver and kube-aggregator.
type Resolver struct {
	factory informers.SharedInformerFactory
	lister  corelisters.ConfigMapNamespaceLister
	synced  cache.DoneChecker
	// lookupHost resolves a name by DNS (net.DefaultResolver.LookupHost).
	lookupHost func(ctx context.Context, host string) ([]string, error)
}

// New returns a resolver reading ConfigMap kube-system/service-addresses
// with client; Start begins watching it. With a nil client (a control
// plane without the core group) it resolves by DNS only.
func New(client kubernetes.Interface) *Resolver {
	if client == nil {
		return &Resolver{lookupHost: net.DefaultResolver.LookupHost}
	}
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0,
		informers.WithNamespace(Namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", ConfigMapName).String()
		}))
	cms := factory.Core().V1().ConfigMaps()
	return &Resolver{
		factory:    factory,
		lister:     cms.Lister().ConfigMaps(Namespace),
		synced:     cms.Informer().HasSyncedChecker(),
		lookupHost: net.DefaultResolver.LookupHost,
	}
}

// Start watches the ConfigMap until ctx is done and waits until the first
// list is in (or ctx is done).
func (r *Resolver) Start(ctx context.Context) {
	if r.factory == nil {
		return
	}
	r.factory.Start(ctx.Done())
	cache.WaitFor(ctx, "", r.synced)
}

// Key is the ConfigMap key of a service reference.
func Key(namespace, name string, port int32) string {
	return name + "." + namespace + "." + strconv.Itoa(int(port))
}

// ResolveEndpoint returns the URL a reference is reached at: the address
// the ConfigMap maps it to, or <name>.<namespace>.svc:<port> when that
// name resolves by DNS. It fails, saying what to do, for a reference that
// neither maps nor resolves, and for a mapped address that is not
// host:port.
func (r *Resolver) ResolveEndpoint(namespace, name string, port int32) (*url.URL, error) {
	if namespace == "" || name == "" {
		return nil, fmt.Errorf("service reference needs a namespace and a name")
	}
	key := Key(namespace, name, port)
	var cm *corev1.ConfigMap
	if r.lister != nil {
		var err error
		if cm, err = r.lister.Get(ConfigMapName); err != nil && !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("service %s/%s: reading ConfigMap %s/%s: %w", namespace, name, Namespace, ConfigMapName, err)
		}
	}
	if address, ok := mapped(cm, key); ok {
		host, p, err := net.SplitHostPort(address)
		if err != nil || host == "" {
			return nil, fmt.Errorf("service %s/%s port %d: ConfigMap %s/%s key %s is %q, want host:port", namespace, name, port, Namespace, ConfigMapName, key, address)
		}
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return nil, fmt.Errorf("service %s/%s port %d: ConfigMap %s/%s key %s is %q: %q is not a port", namespace, name, port, Namespace, ConfigMapName, key, address, p)
		}
		return &url.URL{Scheme: "https", Host: net.JoinHostPort(host, p)}, nil
	}
	host := name + "." + namespace + ".svc"
	ctx, cancel := context.WithTimeout(context.Background(), dnsTimeout)
	defer cancel()
	if _, err := r.lookupHost(ctx, host); err != nil {
		return nil, fmt.Errorf("service %s/%s port %d has no address: add key %s (value host:port) to ConfigMap %s/%s, or serve %s by DNS (%v)",
			namespace, name, port, key, Namespace, ConfigMapName, host, err)
	}
	return &url.URL{Scheme: "https", Host: net.JoinHostPort(host, strconv.Itoa(int(port)))}, nil
}

// HasService reports whether a service is known at all: the ConfigMap
// maps one of its ports, or its name resolves by DNS. kube-aggregator's
// availability check reports an unknown service as ServiceNotFound.
func (r *Resolver) HasService(namespace, name string) bool {
	if r.lister != nil {
		if cm, err := r.lister.Get(ConfigMapName); err == nil {
			prefix := name + "." + namespace + "."
			for key := range cm.Data {
				if strings.HasPrefix(key, prefix) {
					return true
				}
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), dnsTimeout)
	defer cancel()
	_, err := r.lookupHost(ctx, name+"."+namespace+".svc")
	return err == nil
}

func mapped(cm *corev1.ConfigMap, key string) (string, bool) {
	if cm == nil {
		return "", false
	}
	v, ok := cm.Data[key]
	return v, ok
}
