package apiserver

import (
	"fmt"
	"slices"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsapiserver "k8s.io/apiextensions-apiserver/pkg/apiserver"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/filters"
	serverstorage "k8s.io/apiserver/pkg/server/storage"
	"k8s.io/client-go/kubernetes"
	aggregatorscheme "k8s.io/kube-aggregator/pkg/apiserver/scheme"
	"k8s.io/kube-openapi/pkg/common"

	"github.com/gcp-project/gcp/pkg/controlplane/openapi"
	"github.com/gcp-project/gcp/pkg/controlplane/registry"
	"github.com/gcp-project/gcp/pkg/controlplane/serviceresolver"
)

// applyAPIs is NewConfig's stage of what the native server serves:
// --runtime-config over the composition's defaults, the server features
// (API Priority and Fairness only with its API), the OpenAPI
// configuration from definitions (documents built when first asked for,
// by lazyopenapi), and which requests are long-running.
func (c *Config) applyAPIs(definitions common.GetOpenAPIDefinitions) error {
	gc := c.Generic
	if err := c.Options.APIEnablement.ApplyTo(gc, gc.MergedResourceConfig, c.Scheme); err != nil {
		return fmt.Errorf("--runtime-config: %w", err)
	}
	features := *c.Options.Features
	if !c.serves(priorityAndFairnessResources...) {
		// API Priority and Fairness reads its configuration from the
		// flowcontrol API; without the layer the max-in-flight limits apply.
		features.EnablePriorityAndFairness = false
	}
	if err := features.ApplyTo(gc, c.Client, c.Informers); err != nil {
		return fmt.Errorf("features: %w", err)
	}

	namer := openapi.NewDefinitionNamer(c.Scheme, apiextensionsapiserver.Scheme, aggregatorscheme.Scheme)
	gc.OpenAPIConfig = genericapiserver.DefaultOpenAPIConfig(definitions, namer)
	gc.OpenAPIConfig.Info.Title = "gcp"
	gc.OpenAPIV3Config = genericapiserver.DefaultOpenAPIV3Config(definitions, namer)
	gc.OpenAPIV3Config.Info.Title = "gcp"
	// The native server's documents are built when first asked for
	// (lazyopenapi, installed by New), not by PrepareRun.
	gc.SkipOpenAPIInstallation = true
	gc.LongRunningFunc = filters.BasicLongRunningRequestCheck(sets.NewString("watch", "proxy"), sets.NewString("attach", "exec", "proxy", "log", "portforward"))
	return nil
}

// newServiceResolver resolves service references (APIServices, webhooks,
// CRD conversion) through ConfigMap kube-system/service-addresses, or by
// DNS as <service>.<namespace>.svc: gcp has no Service API
// (docs/aggregation.md). Without ConfigMaps served, DNS alone.
func (c *Config) newServiceResolver() *serviceresolver.Resolver {
	var resolverClient kubernetes.Interface
	if c.serves(configMaps) {
		resolverClient = c.Client
	}
	return serviceresolver.New(resolverClient)
}

// servesGroup reports whether groups include group.
func servesGroup(groups []registry.APIGroup, group string) bool {
	return slices.ContainsFunc(groups, func(g registry.APIGroup) bool { return g.GroupName() == group })
}

// The resources the server's own features read or write: each feature
// runs only while the native server serves all of them (Config.serves),
// so a composition without a group, or a --runtime-config that turns it
// off, turns the feature off instead of leaving it failing for ever.
var (
	// configMaps: the service resolver's addresses and the published
	// authentication info (extension-apiserver-authentication).
	configMaps = corev1.SchemeGroupVersion.WithResource("configmaps")
	// identityLeaseResources: each server's identity Lease in kube-system.
	identityLeaseResources = []schema.GroupVersionResource{
		coordinationv1.SchemeGroupVersion.WithResource("leases"),
		corev1.SchemeGroupVersion.WithResource("namespaces"),
	}
	// rbacPolicyResources: the bootstrap policy reconciled at every start.
	rbacPolicyResources = []schema.GroupVersionResource{
		rbacv1.SchemeGroupVersion.WithResource("clusterroles"),
		rbacv1.SchemeGroupVersion.WithResource("clusterrolebindings"),
		rbacv1.SchemeGroupVersion.WithResource("roles"),
		rbacv1.SchemeGroupVersion.WithResource("rolebindings"),
	}
	// priorityAndFairnessResources: API Priority and Fairness's
	// configuration.
	priorityAndFairnessResources = []schema.GroupVersionResource{
		flowcontrolv1.SchemeGroupVersion.WithResource("flowschemas"),
		flowcontrolv1.SchemeGroupVersion.WithResource("prioritylevelconfigurations"),
	}
)

// servesAll reports whether resources enable every one of gvrs.
func servesAll(resources serverstorage.APIResourceConfigSource, gvrs []schema.GroupVersionResource) bool {
	for _, gvr := range gvrs {
		if !resources.ResourceEnabled(gvr) {
			return false
		}
	}
	return true
}

// serves reports whether the native server serves every one of gvrs: its
// composition's groups, as --runtime-config leaves them.
func (c *Config) serves(gvrs ...schema.GroupVersionResource) bool {
	return servesAll(c.Generic.MergedResourceConfig, gvrs)
}
