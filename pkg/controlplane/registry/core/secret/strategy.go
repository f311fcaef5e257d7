package secret

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/storage/names"

	"github.com/gcp-project/gcp/pkg/controlplane/registry/typed"
)

// FieldLabels returns the field selector labels secrets support, as upstream.
func FieldLabels() map[string]string {
	return typed.Identity("metadata.name", "metadata.namespace", "type")
}

// NewStore returns the storage of core/v1 secrets.
func NewStore(typer runtime.ObjectTyper, optsGetter generic.RESTOptionsGetter) (*genericregistry.Store, error) {
	return typed.Resource[*corev1.Secret, *corev1.SecretList]{
		GroupResource: corev1.Resource("secrets"),
		Singular:      "secret",
		New:           func() *corev1.Secret { return &corev1.Secret{} },
		NewList:       func() *corev1.SecretList { return &corev1.SecretList{} },
		Strategy: &typed.Strategy[*corev1.Secret]{
			ObjectTyper:         typer,
			NameGenerator:       names.SimpleNameGenerator,
			Namespaced:          true,
			UnconditionalUpdate: true,
			PrepareCreate:       func(_ context.Context, s *corev1.Secret) { mergeStringData(s) },
			PrepareUpdateFn:     func(_ context.Context, s, _ *corev1.Secret) { mergeStringData(s) },
			ValidateCreate: func(_ context.Context, s *corev1.Secret) field.ErrorList {
				return Validate(s)
			},
			ValidateUpdateFn: func(_ context.Context, s, old *corev1.Secret) field.ErrorList {
				return ValidateUpdate(s, old)
			},
		},
		Table: TableConvertor(),
		Fields: func(s *corev1.Secret) fields.Set {
			set := typed.ObjectMetaFieldsSet(s, true)
			set["type"] = string(s.Type)
			return set
		},
	}.NewStore(optsGetter)
}

// mergeStringData moves stringData into data, as upstream's conversion to
// the internal version does: stringData is write-only and never stored.
func mergeStringData(s *corev1.Secret) {
	if len(s.StringData) == 0 {
		s.StringData = nil
		return
	}
	if s.Data == nil {
		s.Data = make(map[string][]byte, len(s.StringData))
	}
	for k, v := range s.StringData {
		s.Data[k] = []byte(v)
	}
	s.StringData = nil
}
