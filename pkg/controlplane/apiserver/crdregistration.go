package apiserver

import (
	"sync"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	crdinformers "k8s.io/apiextensions-apiserver/pkg/client/informers/externalversions/apiextensions/v1"
	crdlisters "k8s.io/apiextensions-apiserver/pkg/client/listers/apiextensions/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/kube-aggregator/pkg/controllers/autoregister"
)

// crdGroupPriority is what upstream gives CRD groups: after every built-in.
var crdGroupPriority = apiServicePriority{1000, 100}

// crdRegistrationController keeps one local APIService for each group/version
// that some CRD serves, so the aggregator routes and lists custom resources.
// Every CRD change recomputes the whole set from the informer cache: it is
// small, and a full recompute cannot drift.
type crdRegistrationController struct {
	lister   crdlisters.CustomResourceDefinitionLister
	synced   cache.DoneChecker
	register autoregister.AutoAPIServiceRegistration
	changed  chan struct{}

	mu         sync.Mutex
	registered sets.Set[schema.GroupVersion]
}

func newCRDRegistrationController(crds crdinformers.CustomResourceDefinitionInformer, register autoregister.AutoAPIServiceRegistration) *crdRegistrationController {
	c := &crdRegistrationController{
		lister:     crds.Lister(),
		synced:     crds.Informer().HasSyncedChecker(),
		register:   register,
		changed:    make(chan struct{}, 1),
		registered: sets.New[schema.GroupVersion](),
	}
	signal := func(interface{}) {
		select {
		case c.changed <- struct{}{}:
		default:
		}
	}
	_, _ = crds.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: signal,
		UpdateFunc: func(old, obj interface{}) {
			// Served versions are spec, and a spec change is a new
			// generation; the controllers' status writes (several per
			// new CRD) change nothing here.
			o, ok1 := old.(*apiextensionsv1.CustomResourceDefinition)
			n, ok2 := obj.(*apiextensionsv1.CustomResourceDefinition)
			if ok1 && ok2 && o.Generation == n.Generation {
				return
			}
			signal(obj)
		},
		DeleteFunc: signal,
	})
	return c
}

// Run reconciles on every CRD change until stop is closed.
func (c *crdRegistrationController) Run(stop <-chan struct{}) {
	if !cache.WaitFor(wait.ContextForChannel(stop), "", c.synced) {
		return
	}
	c.sync()
	for {
		select {
		case <-stop:
			return
		case <-c.changed:
			c.sync()
		}
	}
}

func (c *crdRegistrationController) sync() {
	crds, err := c.lister.List(labels.Everything())
	if err != nil {
		klog.ErrorS(err, "Listing CRDs for APIService registration")
		return
	}
	want := sets.New[schema.GroupVersion]()
	for _, crd := range crds {
		for _, v := range crd.Spec.Versions {
			if v.Served {
				want.Insert(schema.GroupVersion{Group: crd.Spec.Group, Version: v.Name})
			}
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for gv := range want.Difference(c.registered) {
		c.register.AddAPIServiceToSync(localAPIService(gv, crdGroupPriority))
	}
	for gv := range c.registered.Difference(want) {
		c.register.RemoveAPIServiceToSync(gv.Version + "." + gv.Group)
	}
	c.registered = want
}
