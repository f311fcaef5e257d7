package configmap

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

// NewStore returns the storage of core/v1 configmaps.
func NewStore(typer runtime.ObjectTyper, optsGetter generic.RESTOptionsGetter) (*genericregistry.Store, error) {
	return typed.Resource[*corev1.ConfigMap, *corev1.ConfigMapList]{
		GroupResource: corev1.Resource("configmaps"),
		Singular:      "configmap",
		New:           func() *corev1.ConfigMap { return &corev1.ConfigMap{} },
		NewList:       func() *corev1.ConfigMapList { return &corev1.ConfigMapList{} },
		Strategy: &typed.Strategy[*corev1.ConfigMap]{
			ObjectTyper:         typer,
			NameGenerator:       names.SimpleNameGenerator,
			Namespaced:          true,
			UnconditionalUpdate: true,
			ValidateCreate: func(_ context.Context, cm *corev1.ConfigMap) field.ErrorList {
				return Validate(cm)
			},
			ValidateUpdateFn: func(_ context.Context, cm, old *corev1.ConfigMap) field.ErrorList {
				return ValidateUpdate(cm, old)
			},
		},
		Table: TableConvertor(),
	}.NewStore(optsGetter)
}
