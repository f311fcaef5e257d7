package serviceaccount

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/storage/names"

	"github.com/gcp-project/gcp/pkg/controlplane/registry/typed"
)

// NewStore returns the storage of core/v1 serviceaccounts.
func NewStore(typer runtime.ObjectTyper, optsGetter generic.RESTOptionsGetter) (*genericregistry.Store, error) {
	return typed.Resource[*corev1.ServiceAccount, *corev1.ServiceAccountList]{
		GroupResource: corev1.Resource("serviceaccounts"),
		Singular:      "serviceaccount",
		New:           func() *corev1.ServiceAccount { return &corev1.ServiceAccount{} },
		NewList:       func() *corev1.ServiceAccountList { return &corev1.ServiceAccountList{} },
		Strategy: &typed.Strategy[*corev1.ServiceAccount]{
			ObjectTyper:         typer,
			NameGenerator:       names.SimpleNameGenerator,
			Namespaced:          true,
			UnconditionalUpdate: true,
			ValidateCreate: func(_ context.Context, sa *corev1.ServiceAccount) field.ErrorList {
				return Validate(sa)
			},
			ValidateUpdateFn: func(_ context.Context, sa, old *corev1.ServiceAccount) field.ErrorList {
				return ValidateUpdate(sa, old)
			},
		},
		Table: TableConvertor(),
	}.NewStore(optsGetter)
}
