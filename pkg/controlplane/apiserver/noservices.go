package apiserver

import (
	"context"
	"sync"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	clientgoinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/informers/core"
	corev1informers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/informers/discovery"
	discoveryv1informers "k8s.io/client-go/informers/discovery/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/tools/cache"
)

// noServicesInformers is the aggregator's informer factory in a control
// plane without Services and EndpointSlices. kube-aggregator's remote
// availability controller reads both: here every service reference is an
// ExternalName Service and there are no EndpointSlices, so the controller
// skips the endpoint checks that only a cluster network has and checks
// each remote APIService the way that matters, by calling its discovery
// endpoint through the service resolver (serviceresolver.Resolver), every
// 30 s and on change, with upstream's reasons and messages.
type noServicesInformers struct {
	clientgoinformers.SharedInformerFactory
	services       corev1informers.TypedServiceInformer
	endpointSlices discoveryv1informers.TypedEndpointSliceInformer

	mu      sync.Mutex
	started bool
}

// knownServices says whether a service reference leads anywhere.
type knownServices interface {
	HasService(namespace, name string) bool
}

func newNoServicesInformers(f clientgoinformers.SharedInformerFactory, known knownServices) *noServicesInformers {
	endpointSlices := emptyInformer(&discoveryv1.EndpointSlice{}, &discoveryv1.EndpointSliceList{})
	return &noServicesInformers{
		SharedInformerFactory: f,
		services:              externalNameServices{informer: emptyInformer(&corev1.Service{}, &corev1.ServiceList{}), known: known},
		endpointSlices:        emptyEndpointSlices{endpointSlices},
	}
}

// Core returns the factory's core group with Services replaced.
func (f *noServicesInformers) Core() core.Interface {
	return coreGroup{f.SharedInformerFactory.Core(), f.services}
}

// Discovery returns the factory's discovery group with EndpointSlices
// replaced.
func (f *noServicesInformers) Discovery() discovery.Interface {
	return discoveryGroup{f.SharedInformerFactory.Discovery(), f.endpointSlices}
}

// Start starts the factory's informers and the two empty ones.
func (f *noServicesInformers) Start(stopCh <-chan struct{}) {
	f.SharedInformerFactory.Start(stopCh)
	f.startEmpty(stopCh)
}

// StartWithContext is Start with a context.
func (f *noServicesInformers) StartWithContext(ctx context.Context) {
	f.SharedInformerFactory.StartWithContext(ctx)
	f.startEmpty(ctx.Done())
}

func (f *noServicesInformers) startEmpty(stopCh <-chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.started {
		return
	}
	f.started = true
	go f.services.Informer().Run(stopCh)
	go f.endpointSlices.Informer().Run(stopCh)
}

// emptyInformer is an informer of a kind the server does not serve: its
// list is empty and its watch never sends.
func emptyInformer(obj runtime.Object, list runtime.Object) cache.SharedIndexInformer {
	lw := emptyListWatch{&cache.ListWatch{
		ListFunc:  func(metav1.ListOptions) (runtime.Object, error) { return list.DeepCopyObject(), nil },
		WatchFunc: func(metav1.ListOptions) (watch.Interface, error) { return watch.NewFake(), nil },
	}}
	return cache.NewSharedIndexInformer(lw, obj, 0, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
}

// emptyListWatch lists and watches nothing; it tells the reflector to
// list, not to wait for a streamed initial list that never comes.
type emptyListWatch struct{ *cache.ListWatch }

// IsWatchListSemanticsUnSupported reports true: see emptyListWatch.
func (emptyListWatch) IsWatchListSemanticsUnSupported() bool { return true }

type coreGroup struct {
	core.Interface
	services corev1informers.TypedServiceInformer
}

func (g coreGroup) V1() corev1informers.Interface { return coreV1{g.Interface.V1(), g.services} }

type coreV1 struct {
	corev1informers.Interface
	services corev1informers.TypedServiceInformer
}

func (v coreV1) Services() corev1informers.TypedServiceInformer { return v.services }

type discoveryGroup struct {
	discovery.Interface
	endpointSlices discoveryv1informers.TypedEndpointSliceInformer
}

func (g discoveryGroup) V1() discoveryv1informers.Interface {
	return discoveryV1{g.Interface.V1(), g.endpointSlices}
}

type discoveryV1 struct {
	discoveryv1informers.Interface
	endpointSlices discoveryv1informers.TypedEndpointSliceInformer
}

func (v discoveryV1) EndpointSlices() discoveryv1informers.TypedEndpointSliceInformer {
	return v.endpointSlices
}

// externalNameServices answers a Service lookup with an ExternalName
// Service <name>.<namespace>.svc when the resolver knows the service (the
// ConfigMap maps it, or DNS resolves it), and NotFound otherwise, which
// kube-aggregator reports as ServiceNotFound.
type externalNameServices struct {
	informer cache.SharedIndexInformer
	known    knownServices
}

func (s externalNameServices) Informer() cache.SharedIndexInformer { return s.informer }
func (s externalNameServices) TypedInformer() corev1informers.ServiceIndexInformer {
	return cache.NewTypedSharedIndexInformer[*corev1.Service](s.informer)
}
func (s externalNameServices) Lister() corelisters.ServiceLister {
	return externalNameLister{known: s.known}
}

type externalNameLister struct {
	known     knownServices
	namespace string
}

func (externalNameLister) List(labels.Selector) ([]*corev1.Service, error) { return nil, nil }
func (l externalNameLister) Services(namespace string) corelisters.ServiceNamespaceLister {
	return externalNameLister{known: l.known, namespace: namespace}
}
func (l externalNameLister) Get(name string) (*corev1.Service, error) {
	if l.known != nil && !l.known.HasService(l.namespace, name) {
		return nil, apierrors.NewNotFound(corev1.Resource("services"), name)
	}
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: l.namespace},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: name + "." + l.namespace + ".svc"},
	}, nil
}

type emptyEndpointSlices struct{ informer cache.SharedIndexInformer }

func (s emptyEndpointSlices) Informer() cache.SharedIndexInformer { return s.informer }
func (s emptyEndpointSlices) TypedInformer() discoveryv1informers.EndpointSliceIndexInformer {
	return cache.NewTypedSharedIndexInformer[*discoveryv1.EndpointSlice](s.informer)
}
func (s emptyEndpointSlices) Lister() discoverylisters.EndpointSliceLister {
	return discoverylisters.NewEndpointSliceLister(s.informer.GetIndexer())
}
