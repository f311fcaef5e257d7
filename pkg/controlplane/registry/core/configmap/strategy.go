package configmap

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"

	"github.com/gcp-project/gcp/pkg/controlplane/registry/typed"
)

// NewStore returns the storage of core/v1 configmaps.
func NewStore(typer runtime.ObjectTyper, optsGetter generic.RESTOptionsGetter) (*genericregistry.Store, error) {
	strategy := typed.NewStrategy(typer, typed.NamespaceScoped, Validate, ValidateUpdate)
	strategy.UnconditionalUpdate = true
	return typed.NewResource[corev1.ConfigMap, corev1.ConfigMapList](
		corev1.Resource("configmaps"), "configmap", strategy, TableConvertor()).NewStore(optsGetter)
}
