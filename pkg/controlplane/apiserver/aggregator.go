package apiserver

import (
	"fmt"
	"net/http"
	"strings"
	"sync"

	apiextensionsapiserver "k8s.io/apiextensions-apiserver/pkg/apiserver"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/healthz"
	"k8s.io/client-go/tools/cache"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	apiregistrationv1helper "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1/helper"
	aggregatorapiserver "k8s.io/kube-aggregator/pkg/apiserver"
	apiregistrationclient "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset/typed/apiregistration/v1"
	"k8s.io/kube-aggregator/pkg/controllers/autoregister"
)

// apiServicePriority orders groups in discovery, as upstream's
// DefaultGenericAPIServicePriorities does for the groups gcp serves.
type apiServicePriority struct{ group, version int32 }

// knownPriorities are upstream's priorities for the built-in groups.
func knownPriorities() map[schema.GroupVersion]apiServicePriority {
	return map[schema.GroupVersion]apiServicePriority{
		{Group: "", Version: "v1"}:                             {18000, 1},
		{Group: "events.k8s.io", Version: "v1"}:                {17750, 15},
		{Group: "authentication.k8s.io", Version: "v1"}:        {17700, 15},
		{Group: "authorization.k8s.io", Version: "v1"}:         {17600, 15},
		{Group: "certificates.k8s.io", Version: "v1"}:          {17300, 15},
		{Group: "rbac.authorization.k8s.io", Version: "v1"}:    {17000, 15},
		{Group: "apiextensions.k8s.io", Version: "v1"}:         {16700, 15},
		{Group: "admissionregistration.k8s.io", Version: "v1"}: {16700, 15},
		{Group: "coordination.k8s.io", Version: "v1"}:          {16500, 15},
		{Group: "flowcontrol.apiserver.k8s.io", Version: "v1"}: {16100, 21},
		// Off unless --runtime-config turns them on.
		{Group: "coordination.k8s.io", Version: "v1beta1"}:        {16500, 13},
		{Group: "internal.apiserver.k8s.io", Version: "v1alpha1"}: {16000, 9},
	}
}

// defaultPriority is used for a native group a consumer adds: after the
// built-in groups, before CRD groups (1000).
var defaultPriority = apiServicePriority{15000, 15}

func (c CompletedConfig) newAggregator(native *genericapiserver.GenericAPIServer, crds *apiextensionsapiserver.CustomResourceDefinitions) (*aggregatorapiserver.APIAggregator, error) {
	agg, err := c.Aggregator.NewWithDelegate(native)
	if err != nil {
		return nil, err
	}
	client, err := apiregistrationclient.NewForConfig(c.Aggregator.GenericConfig.LoopbackClientConfig)
	if err != nil {
		return nil, err
	}
	apiServices := agg.APIRegistrationInformers.Apiregistration().V1().APIServices()
	autoRegistration := autoregister.NewAutoRegisterController(apiServices, client)

	// Every group/version the delegates serve gets a local APIService, so
	// the aggregator routes and lists it.
	priorities := knownPriorities()
	var local []string
	for _, path := range native.ListedPaths() {
		gv, ok := groupVersionOfPath(path)
		if !ok {
			continue
		}
		p, known := priorities[gv]
		if !known {
			p = defaultPriority
		}
		svc := localAPIService(gv, p)
		autoRegistration.AddAPIServiceToSyncOnStart(svc)
		local = append(local, svc.Name)
	}

	var crdRegistration *crdRegistrationController
	if crds != nil {
		crdRegistration = newCRDRegistrationController(crds.Informers.Apiextensions().V1().CustomResourceDefinitions(), autoRegistration)
	}
	if err := agg.GenericAPIServer.AddPostStartHook("gcp-apiservice-autoregistration", func(ctx genericapiserver.PostStartHookContext) error {
		go func() {
			if crdRegistration != nil {
				go crdRegistration.Run(ctx.Done())
				// Register CRD groups before the first APIService sync, so
				// the autoregistration does not delete them as unknown.
				if !cache.WaitForCacheSync(ctx.Done(), crdRegistration.synced) {
					return
				}
				crdRegistration.sync()
			}
			autoRegistration.Run(5, ctx.Done())
		}()
		return nil
	}); err != nil {
		return nil, err
	}
	if err := agg.GenericAPIServer.AddBootSequenceHealthChecks(apiServicesAvailable("autoregister-completion", local, apiServices.Informer())); err != nil {
		return nil, err
	}
	return agg, nil
}

// groupVersionOfPath maps "/api/v1" and "/apis/<group>/<version>" to a group version.
func groupVersionOfPath(path string) (schema.GroupVersion, bool) {
	if path == "/api/v1" {
		return schema.GroupVersion{Version: "v1"}, true
	}
	parts := strings.Split(path, "/")
	if len(parts) != 4 || parts[1] != "apis" {
		return schema.GroupVersion{}, false
	}
	return schema.GroupVersion{Group: parts[2], Version: parts[3]}, true
}

func localAPIService(gv schema.GroupVersion, p apiServicePriority) *apiregistrationv1.APIService {
	return &apiregistrationv1.APIService{
		ObjectMeta: metav1.ObjectMeta{Name: gv.Version + "." + gv.Group},
		Spec: apiregistrationv1.APIServiceSpec{
			Group:                gv.Group,
			Version:              gv.Version,
			GroupPriorityMinimum: p.group,
			VersionPriority:      p.version,
		},
	}
}

// apiServicesAvailable is ready once every named APIService has been
// observed Available: before that, discovery would miss groups.
func apiServicesAvailable(name string, apiServices []string, informer cache.SharedIndexInformer) healthz.HealthChecker {
	var mu sync.Mutex
	pending := sets.New(apiServices...)
	observe := func(obj interface{}) {
		svc, ok := obj.(*apiregistrationv1.APIService)
		if !ok || !apiregistrationv1helper.IsAPIServiceConditionTrue(svc, apiregistrationv1.Available) {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		pending.Delete(svc.Name)
	}
	_, _ = informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    observe,
		UpdateFunc: func(_, obj interface{}) { observe(obj) },
	})
	return healthz.NamedCheck(name, func(*http.Request) error {
		mu.Lock()
		defer mu.Unlock()
		if pending.Len() > 0 {
			return fmt.Errorf("missing APIService: %v", sets.List(pending))
		}
		return nil
	})
}
