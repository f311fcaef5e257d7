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

	"github.com/gcp-project/gcp/pkg/controlplane/registry"
)

// apiServicePriority orders groups in discovery, as upstream's
// DefaultGenericAPIServicePriorities does for the groups gcp serves.
type apiServicePriority struct{ group, version int32 }

// apiExtensionsPriority is kube-apiserver's priority for
// apiextensions.k8s.io/v1, which the CRD server serves and no APIGroup
// stands for.
var apiExtensionsPriority = apiServicePriority{16700, 15}

// priorities returns the discovery priority of every group version the
// native groups give one (registry.DiscoveryPrioritizer) and of the CRD
// API; the others get registry.DefaultDiscoveryPriority.
func priorities(groups []registry.APIGroup) map[schema.GroupVersion]apiServicePriority {
	out := map[schema.GroupVersion]apiServicePriority{
		{Group: "apiextensions.k8s.io", Version: "v1"}: apiExtensionsPriority,
	}
	for gv, p := range registry.DiscoveryPriorities(groups) {
		out[gv] = apiServicePriority{p.Group, p.Version}
	}
	return out
}

// defaultPriority is used for a native group that gives none: after the
// built-in groups, before CRD groups (1000).
var defaultPriority = apiServicePriority{registry.DefaultDiscoveryPriority.Group, registry.DefaultDiscoveryPriority.Version}

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
	known := priorities(c.Config.Composition.APIGroups)
	var local []string
	for _, path := range native.ListedPaths() {
		gv, ok := groupVersionOfPath(path)
		if !ok {
			continue
		}
		p, ok := known[gv]
		if !ok {
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
				if !cache.WaitFor(ctx, "", crdRegistration.synced) {
					return
				}
				crdRegistration.sync()
			}
			// The controller looks whether its informer has synced
			// every 100 ms (controllers.WaitForCacheSync); started once
			// it has, its first look finds it so and it registers at
			// once, 0-100 ms sooner (autoregister-completion is one of
			// the last readiness checks of a start).
			if !cache.WaitFor(ctx, "", apiServices.Informer().HasSyncedChecker()) {
				return
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
