// Package prioritylevelconfiguration serves flowcontrol.apiserver.k8s.io/v1
// prioritylevelconfigurations and their status subresource.
package prioritylevelconfiguration

import (
	"context"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/storage/names"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/gcp-project/gcp/pkg/controlplane/registry/flowcontrol/validation"
	"github.com/gcp-project/gcp/pkg/controlplane/registry/typed"
)

// Storage is the REST storage of prioritylevelconfigurations and their
// status.
type Storage struct {
	PriorityLevelConfiguration *genericregistry.Store
	Status                     *typed.Subresource
}

// NewStorage returns the storage of prioritylevelconfigurations. As
// upstream: the status is cleared on create and kept on update of the main
// resource, a spec change bumps metadata.generation, and only /status
// writes the status.
func NewStorage(typer runtime.ObjectTyper, optsGetter generic.RESTOptionsGetter) (*Storage, error) {
	strategy := &typed.Strategy[*flowcontrolv1.PriorityLevelConfiguration]{
		Spec:                func(pl *flowcontrolv1.PriorityLevelConfiguration) any { return pl.Spec },
		ObjectTyper:         typer,
		NameGenerator:       names.SimpleNameGenerator,
		UnconditionalUpdate: true,
		PrepareCreate: func(_ context.Context, pl *flowcontrolv1.PriorityLevelConfiguration) {
			pl.Status = flowcontrolv1.PriorityLevelConfigurationStatus{}
		},
		PrepareUpdateFn: func(_ context.Context, pl, old *flowcontrolv1.PriorityLevelConfiguration) {
			pl.Status = old.Status
		},
		ValidateCreate: func(_ context.Context, pl *flowcontrolv1.PriorityLevelConfiguration) field.ErrorList {
			return validation.ValidatePriorityLevelConfiguration(pl)
		},
		ValidateUpdateFn: func(_ context.Context, pl, old *flowcontrolv1.PriorityLevelConfiguration) field.ErrorList {
			return validation.ValidatePriorityLevelConfigurationUpdate(pl, old)
		},
		ResetFields: map[fieldpath.APIVersion]*fieldpath.Set{
			"flowcontrol.apiserver.k8s.io/v1": fieldpath.NewSet(fieldpath.MakePathOrDie("status")),
		},
	}
	store, err := typed.Resource[*flowcontrolv1.PriorityLevelConfiguration, *flowcontrolv1.PriorityLevelConfigurationList]{
		GroupResource: flowcontrolv1.Resource("prioritylevelconfigurations"),
		Singular:      "prioritylevelconfiguration",
		New:           func() *flowcontrolv1.PriorityLevelConfiguration { return &flowcontrolv1.PriorityLevelConfiguration{} },
		NewList: func() *flowcontrolv1.PriorityLevelConfigurationList {
			return &flowcontrolv1.PriorityLevelConfigurationList{}
		},
		Strategy: strategy,
		Table:    TableConvertor(),
	}.NewStore(optsGetter)
	if err != nil {
		return nil, err
	}

	status := typed.StatusStrategy(strategy, "flowcontrol.apiserver.k8s.io/v1", typed.StatusKeepsMetadata,
		func(pl, old *flowcontrolv1.PriorityLevelConfiguration) { pl.Spec = old.Spec },
		validation.ValidatePriorityLevelConfigurationStatusUpdate)
	return &Storage{PriorityLevelConfiguration: store, Status: typed.NewSubresource(store, status)}, nil
}
