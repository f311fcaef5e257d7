package apiserver

import (
	"fmt"
	"slices"
	"strings"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsapiserver "k8s.io/apiextensions-apiserver/pkg/apiserver"
	"k8s.io/apimachinery/pkg/runtime"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apiserver/pkg/server/resourceconfig"
	serverstorage "k8s.io/apiserver/pkg/server/storage"
	aggregatorscheme "k8s.io/kube-aggregator/pkg/apiserver/scheme"
	"k8s.io/kube-openapi/pkg/common"

	"github.com/gcp-project/gcp/pkg/controlplane/apiserver/options"
	"github.com/gcp-project/gcp/pkg/controlplane/auth/authz"
	"github.com/gcp-project/gcp/pkg/controlplane/composition"
	"github.com/gcp-project/gcp/pkg/controlplane/registry"
)

// defaultResourceConfig enables the stable versions the scheme knows for
// groups and lists their alpha and beta versions as disabled, as upstream's
// DefaultGenericAPIResourceConfigSource does: those are served only when
// --runtime-config turns them on.
func defaultResourceConfig(scheme *runtime.Scheme, groups []registry.APIGroup) *serverstorage.ResourceConfig {
	rc := serverstorage.NewResourceConfig()
	for _, g := range groups {
		for _, gv := range scheme.PrioritizedVersionsForGroup(g.GroupName()) {
			if strings.Contains(gv.Version, "alpha") || strings.Contains(gv.Version, "beta") {
				rc.DisableVersions(gv)
				continue
			}
			rc.EnableVersions(gv)
		}
	}
	return rc
}

// validateFor checks what options.Validate cannot, not knowing the
// composition, and what k8s.io/apiserver would report only while
// installing the APIs: --runtime-config names only groups of the native,
// CRD and APIService servers; --enable-admission-plugins only plugins the
// composition supports; API Priority and Fairness has its API; every
// served kind has an OpenAPI definition and can be stored in its group's
// storage media type. It returns the merged OpenAPI
// definitions. NewConfig calls it first, before touching storage, so a
// caller that builds the configuration before starting etcd (allinone,
// unless its data dir is Ephemeral) fails with nothing started.
func validateFor(o options.CompletedOptions, comp composition.Composition, scheme *runtime.Scheme) (common.GetOpenAPIDefinitions, error) {
	definitions := comp.GetOpenAPIDefinitions()
	if err := checkDefinitions(scheme, comp.APIGroups, definitions); err != nil {
		return nil, err
	}
	if err := checkStorageMediaTypes(scheme, comp.APIGroups, o.Etcd.DefaultStorageMediaType); err != nil {
		return nil, err
	}
	if errs := o.APIEnablement.Validate(scheme, apiextensionsapiserver.Scheme, aggregatorscheme.Scheme); len(errs) > 0 {
		return nil, fmt.Errorf("--runtime-config: %w", utilerrors.NewAggregate(errs))
	}
	if _, err := admissionFor(o.Admission, comp.AdmissionPlugins); err != nil {
		return nil, err
	}
	if err := checkAuthorization(o.Authorization, comp); err != nil {
		return nil, err
	}
	resources, err := resourceconfig.MergeAPIResourceConfigs(defaultResourceConfig(scheme, comp.APIGroups), o.APIEnablement.RuntimeConfig, scheme)
	if err != nil {
		return nil, fmt.Errorf("--runtime-config: %w", err)
	}
	if err := checkReadByServer(comp.APIGroups, defaultResourceConfig(scheme, comp.APIGroups), resources); err != nil {
		return nil, err
	}
	if o.Features.EnablePriorityAndFairness && servesGroup(comp.APIGroups, flowcontrolv1.GroupName) && !servesAll(resources, priorityAndFairnessResources) {
		return nil, fmt.Errorf("API Priority and Fairness needs --runtime-config=%s=true, or --enable-priority-and-fairness=false", flowcontrolv1.SchemeGroupVersion)
	}
	return definitions, nil
}

// checkReadByServer refuses a --runtime-config that turns off a version or
// resource of a group the server reads (registry.ReadByServer): enabled
// by default, off in resources.
func checkReadByServer(groups []registry.APIGroup, defaults, resources *serverstorage.ResourceConfig) error {
	for _, g := range groups {
		r, ok := g.(registry.ReadByServer)
		if !ok {
			continue
		}
		var off []string
		for gv, enabled := range defaults.GroupVersionConfigs {
			if gv.Group == g.GroupName() && enabled && !resources.GroupVersionConfigs[gv] {
				off = append(off, gv.String())
			}
		}
		for gvr, enabled := range resources.ResourceConfigs {
			if gvr.Group == g.GroupName() && !enabled && defaults.GroupVersionConfigs[gvr.GroupVersion()] {
				off = append(off, gvr.GroupVersion().String()+"/"+gvr.Resource)
			}
		}
		if len(off) > 0 {
			slices.Sort(off)
			return fmt.Errorf("--runtime-config turns off %s, which %s reads: the server cannot run without it (compose the stack without its layer instead)",
				strings.Join(off, ", "), r.ReadBy())
		}
	}
	return nil
}

// checkAuthorization refuses an authorization configuration that names
// RBAC on a control plane without the RBAC layer (which serves the RBAC
// API its authorizer reads).
func checkAuthorization(o *options.AuthorizationOptions, comp composition.Composition) error {
	cfg, _, err := o.Configuration()
	if err != nil {
		return err
	}
	if authz.HasType(cfg, authz.TypeRBAC) && !servesGroup(comp.APIGroups, rbacv1.GroupName) {
		return fmt.Errorf("%s: authorizer type RBAC: this control plane has no RBAC (its stack has no rbac layer)", o.Source())
	}
	return nil
}
