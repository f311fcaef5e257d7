// Package admissionregistration serves admissionregistration.k8s.io/v1:
// validating and mutating webhook configurations, validating admission
// policies (with status) and mutating admission policies, and their
// bindings, all cluster-scoped and in upstream's "api-extensions" category.
package admissionregistration

import (
	"context"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"

	"github.com/gcp-project/gcp/pkg/controlplane/registry"
	"github.com/gcp-project/gcp/pkg/controlplane/registry/admissionregistration/defaults"
	"github.com/gcp-project/gcp/pkg/controlplane/registry/admissionregistration/mutatingadmissionpolicy"
	"github.com/gcp-project/gcp/pkg/controlplane/registry/admissionregistration/paramauthz"
	"github.com/gcp-project/gcp/pkg/controlplane/registry/admissionregistration/policybinding"
	"github.com/gcp-project/gcp/pkg/controlplane/registry/admissionregistration/validatingadmissionpolicy"
	"github.com/gcp-project/gcp/pkg/controlplane/registry/admissionregistration/webhookconfiguration"
	"github.com/gcp-project/gcp/pkg/controlplane/registry/typed"
)

// APIGroup is the admissionregistration.k8s.io group.
type APIGroup struct{}

var _ registry.APIGroup = APIGroup{}

// GroupName returns admissionregistration.k8s.io.
func (APIGroup) GroupName() string { return admissionregistrationv1.GroupName }

// DiscoveryPriorities implements registry.DiscoveryPrioritizer with
// kube-apiserver's priorities for the group.
func (APIGroup) DiscoveryPriorities() map[string]registry.DiscoveryPriority {
	return map[string]registry.DiscoveryPriority{
		"v1": {Group: 16700, Version: 15},
	}
}

// InstallScheme registers the v1 types and their defaults.
func (APIGroup) InstallScheme(scheme *runtime.Scheme) error {
	typed.AddVersionedAsInternal(scheme, admissionregistrationv1.SchemeGroupVersion,
		&admissionregistrationv1.ValidatingWebhookConfiguration{}, &admissionregistrationv1.ValidatingWebhookConfigurationList{},
		&admissionregistrationv1.MutatingWebhookConfiguration{}, &admissionregistrationv1.MutatingWebhookConfigurationList{},
		&admissionregistrationv1.ValidatingAdmissionPolicy{}, &admissionregistrationv1.ValidatingAdmissionPolicyList{},
		&admissionregistrationv1.ValidatingAdmissionPolicyBinding{}, &admissionregistrationv1.ValidatingAdmissionPolicyBindingList{},
		&admissionregistrationv1.MutatingAdmissionPolicy{}, &admissionregistrationv1.MutatingAdmissionPolicyList{},
		&admissionregistrationv1.MutatingAdmissionPolicyBinding{}, &admissionregistrationv1.MutatingAdmissionPolicyBindingList{},
	)
	defaults.Register(scheme)
	return nil
}

// NewRESTStorage builds the storage of the v1 resources.
func (APIGroup) NewRESTStorage(opts registry.StorageOptions) (genericapiserver.APIGroupInfo, bool, error) {
	info := opts.NewAPIGroupInfo(admissionregistrationv1.GroupName)
	authz := paramauthz.Checker{Authorizer: opts.Auth.Authorizer, Resolver: paramauthz.SchemeResolver{Scheme: opts.Scheme, Mapper: opts.RESTMapper}}

	vwc, err := webhookconfiguration.NewValidatingStore(opts.Scheme, opts.RESTOptionsGetter)
	if err != nil {
		return info, false, err
	}
	mwc, err := webhookconfiguration.NewMutatingStore(opts.Scheme, opts.RESTOptionsGetter)
	if err != nil {
		return info, false, err
	}
	vap, err := validatingadmissionpolicy.NewStorage(opts.Scheme, opts.RESTOptionsGetter, authz)
	if err != nil {
		return info, false, err
	}
	vapb, err := policybinding.NewValidatingStore(opts.Scheme, opts.RESTOptionsGetter, authz, paramKindOf(vap.Policy, func(obj runtime.Object) *admissionregistrationv1.ParamKind {
		return obj.(*admissionregistrationv1.ValidatingAdmissionPolicy).Spec.ParamKind
	}))
	if err != nil {
		return info, false, err
	}
	mapol, err := mutatingadmissionpolicy.NewStore(opts.Scheme, opts.RESTOptionsGetter, authz)
	if err != nil {
		return info, false, err
	}
	mapb, err := policybinding.NewMutatingStore(opts.Scheme, opts.RESTOptionsGetter, authz, paramKindOf(mapol, func(obj runtime.Object) *admissionregistrationv1.ParamKind {
		return obj.(*admissionregistrationv1.MutatingAdmissionPolicy).Spec.ParamKind
	}))
	if err != nil {
		return info, false, err
	}
	storage := map[string]rest.Storage{
		"validatingwebhookconfigurations":    categorized{vwc},
		"mutatingwebhookconfigurations":      categorized{mwc},
		"validatingadmissionpolicies":        categorized{vap.Policy},
		"validatingadmissionpolicies/status": vap.Status,
		"validatingadmissionpolicybindings":  categorized{vapb},
		"mutatingadmissionpolicies":          categorized{mapol},
		"mutatingadmissionpolicybindings":    categorized{mapb},
	}
	return info, opts.Enabled(&info, admissionregistrationv1.SchemeGroupVersion, storage), nil
}

// categorized puts a store in upstream's "api-extensions" category
// (`kubectl get api-extensions`).
type categorized struct {
	*genericregistry.Store
}

var _ rest.CategoriesProvider = categorized{}

// Categories returns "api-extensions".
func (categorized) Categories() []string { return []string{"api-extensions"} }

// paramKindOf reads a policy from store and returns its paramKind, for
// the authorization of a binding's paramRef.
func paramKindOf(store *genericregistry.Store, paramKind func(runtime.Object) *admissionregistrationv1.ParamKind) paramauthz.PolicyParamKind {
	return func(ctx context.Context, name string) (*admissionregistrationv1.ParamKind, error) {
		obj, err := store.Get(ctx, name, &metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		return paramKind(obj), nil
	}
}
