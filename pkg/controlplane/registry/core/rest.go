// Package core serves the legacy core API group ("" v1) of a generic control
// plane: namespaces, configmaps, secrets, serviceaccounts, events and
// resourcequotas.
package core

import (
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"

	"github.com/gcp-project/gcp/pkg/controlplane/registry"
	"github.com/gcp-project/gcp/pkg/controlplane/registry/core/configmap"
	"github.com/gcp-project/gcp/pkg/controlplane/registry/core/event"
	"github.com/gcp-project/gcp/pkg/controlplane/registry/core/namespace"
	"github.com/gcp-project/gcp/pkg/controlplane/registry/core/resourcequota"
	"github.com/gcp-project/gcp/pkg/controlplane/registry/core/secret"
	"github.com/gcp-project/gcp/pkg/controlplane/registry/core/serviceaccount"
	"github.com/gcp-project/gcp/pkg/controlplane/registry/typed"
)

// APIGroup is the core group. Events live as long as
// StorageOptions.EventTTL (--event-ttl) says.
type APIGroup struct{}

var _ registry.APIGroup = APIGroup{}

// GroupName returns "", the legacy core group.
func (APIGroup) GroupName() string { return corev1.GroupName }

// DiscoveryPriorities implements registry.DiscoveryPrioritizer with
// kube-apiserver's priorities for the group.
func (APIGroup) DiscoveryPriorities() map[string]registry.DiscoveryPriority {
	return map[string]registry.DiscoveryPriority{
		"v1": {Group: 18000, Version: 1},
	}
}

// InstallScheme registers the served core/v1 types, their defaults and
// field selector labels.
func (APIGroup) InstallScheme(scheme *runtime.Scheme) error {
	typed.AddVersionedAsInternal(scheme, corev1.SchemeGroupVersion,
		&corev1.Namespace{}, &corev1.NamespaceList{},
		&corev1.ConfigMap{}, &corev1.ConfigMapList{},
		&corev1.Secret{}, &corev1.SecretList{},
		&corev1.ServiceAccount{}, &corev1.ServiceAccountList{},
		&corev1.Event{}, &corev1.EventList{},
		&corev1.ResourceQuota{}, &corev1.ResourceQuotaList{},
	)
	// serviceaccounts/token takes and returns an authentication.k8s.io/v1
	// TokenRequest.
	typed.AddVersionedAsInternal(scheme, authenticationv1.SchemeGroupVersion, &authenticationv1.TokenRequest{})
	scheme.AddTypeDefaultingFunc(&corev1.Namespace{}, func(obj interface{}) { namespace.SetDefaults(obj.(*corev1.Namespace)) })
	scheme.AddTypeDefaultingFunc(&corev1.Secret{}, func(obj interface{}) { secret.SetDefaults(obj.(*corev1.Secret)) })
	scheme.AddTypeDefaultingFunc(&corev1.ResourceQuota{}, func(obj interface{}) { resourcequota.SetDefaults(obj.(*corev1.ResourceQuota)) })
	for kind, labels := range map[string]map[string]string{
		"Namespace": namespace.FieldLabels(),
		"Secret":    secret.FieldLabels(),
		"Event":     event.CoreFieldLabels(),
	} {
		if err := typed.AddFieldLabels(scheme, corev1.SchemeGroupVersion.WithKind(kind), labels); err != nil {
			return err
		}
	}
	return nil
}

// NewRESTStorage builds the storage of every served core/v1 resource.
func (g APIGroup) NewRESTStorage(opts registry.StorageOptions) (genericapiserver.APIGroupInfo, bool, error) {
	info := opts.NewAPIGroupInfo(corev1.GroupName)
	ns, err := namespace.NewStorage(opts.Scheme, opts.RESTOptionsGetter)
	if err != nil {
		return info, false, err
	}
	cm, err := configmap.NewStore(opts.Scheme, opts.RESTOptionsGetter)
	if err != nil {
		return info, false, err
	}
	sec, err := secret.NewStore(opts.Scheme, opts.RESTOptionsGetter)
	if err != nil {
		return info, false, err
	}
	sa, err := serviceaccount.NewStore(opts.Scheme, opts.RESTOptionsGetter)
	if err != nil {
		return info, false, err
	}
	ev, err := event.NewStore(corev1.GroupName, opts.Scheme, opts.RESTOptionsGetter, event.TTL(opts.EventTTL).OrDefault())
	if err != nil {
		return info, false, err
	}
	quota, err := resourcequota.NewStorage(opts.Scheme, opts.RESTOptionsGetter)
	if err != nil {
		return info, false, err
	}
	storage := map[string]rest.Storage{
		"namespaces":            ns.Namespace,
		"namespaces/status":     ns.Status,
		"namespaces/finalize":   ns.Finalize,
		"configmaps":            typed.WithShortNames(cm, "cm"),
		"secrets":               sec,
		"serviceaccounts":       typed.WithShortNames(sa, "sa"),
		"events":                typed.WithShortNames(ev, "ev"),
		"resourcequotas":        quota.ResourceQuota,
		"resourcequotas/status": quota.Status,
	}
	if issuer := opts.Auth.ServiceAccountTokens; issuer != nil {
		storage["serviceaccounts/token"] = serviceaccount.NewTokenRequestREST(sa, sec, issuer, opts.Auth.APIAudiences, opts.Auth.MaxTokenExpiration)
	}
	return info, opts.Enabled(&info, corev1.SchemeGroupVersion, storage), nil
}
