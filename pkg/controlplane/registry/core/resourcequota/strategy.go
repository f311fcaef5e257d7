package resourcequota

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/storage/names"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/gcp-project/gcp/pkg/controlplane/registry/typed"
)

// Storage is the REST storage of resourcequotas and their status.
type Storage struct {
	ResourceQuota *typed.ShortNamed
	Status        *typed.Subresource
}

// NewStorage returns the storage of core/v1 resourcequotas (short name
// "quota") and resourcequotas/status. Clients write the spec; the status,
// which the resource quota controller computes, is written only through
// the status subresource, as upstream.
func NewStorage(typer runtime.ObjectTyper, optsGetter generic.RESTOptionsGetter) (*Storage, error) {
	strategy := &typed.Strategy[*corev1.ResourceQuota]{
		ObjectTyper:         typer,
		NameGenerator:       names.SimpleNameGenerator,
		Namespaced:          true,
		UnconditionalUpdate: true,
		PrepareCreate: func(_ context.Context, q *corev1.ResourceQuota) {
			q.Status = corev1.ResourceQuotaStatus{}
		},
		PrepareUpdateFn: func(_ context.Context, q, old *corev1.ResourceQuota) {
			q.Status = old.Status
		},
		ValidateCreate: func(_ context.Context, q *corev1.ResourceQuota) field.ErrorList {
			return Validate(q)
		},
		ValidateUpdateFn: func(_ context.Context, q, old *corev1.ResourceQuota) field.ErrorList {
			return ValidateUpdate(q, old)
		},
		WarnCreate: func(_ context.Context, q *corev1.ResourceQuota) []string {
			return Warnings(q)
		},
		ResetFields: map[fieldpath.APIVersion]*fieldpath.Set{
			"v1": fieldpath.NewSet(fieldpath.MakePathOrDie("status")),
		},
	}
	store, err := typed.Resource[*corev1.ResourceQuota, *corev1.ResourceQuotaList]{
		GroupResource: corev1.Resource("resourcequotas"),
		Singular:      "resourcequota",
		New:           func() *corev1.ResourceQuota { return &corev1.ResourceQuota{} },
		NewList:       func() *corev1.ResourceQuotaList { return &corev1.ResourceQuotaList{} },
		Strategy:      strategy,
		Table:         TableConvertor(),
	}.NewStore(optsGetter)
	if err != nil {
		return nil, err
	}
	store.ReturnDeletedObject = true

	status := typed.StatusStrategy(strategy, "v1", typed.StatusTakesMetadata,
		func(q, old *corev1.ResourceQuota) { q.Spec = old.Spec }, ValidateStatusUpdate)
	return &Storage{
		ResourceQuota: typed.WithShortNames(store, "quota"),
		Status:        typed.NewSubresource(store, status),
	}, nil
}
