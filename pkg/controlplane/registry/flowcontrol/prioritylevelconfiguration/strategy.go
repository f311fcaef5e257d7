// Package prioritylevelconfiguration serves flowcontrol.apiserver.k8s.io/v1
// prioritylevelconfigurations and their status subresource.
package prioritylevelconfiguration

import (
	"context"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"

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
	strategy := typed.NewStrategy(typer, typed.ClusterScoped,
		validation.ValidatePriorityLevelConfiguration, validation.ValidatePriorityLevelConfigurationUpdate)
	strategy.UnconditionalUpdate = true
	strategy.Spec = func(pl *flowcontrolv1.PriorityLevelConfiguration) any { return pl.Spec }
	strategy.PrepareCreate = func(_ context.Context, pl *flowcontrolv1.PriorityLevelConfiguration) {
		pl.Status = flowcontrolv1.PriorityLevelConfigurationStatus{}
	}
	strategy.PrepareUpdateFn = func(_ context.Context, pl, old *flowcontrolv1.PriorityLevelConfiguration) { pl.Status = old.Status }
	strategy.ResetFields = typed.StatusResetFields("flowcontrol.apiserver.k8s.io/v1")
	store, err := typed.NewResource[flowcontrolv1.PriorityLevelConfiguration, flowcontrolv1.PriorityLevelConfigurationList](
		flowcontrolv1.Resource("prioritylevelconfigurations"), "prioritylevelconfiguration", strategy, TableConvertor()).NewStore(optsGetter)
	if err != nil {
		return nil, err
	}

	status := typed.StatusStrategy(strategy, "flowcontrol.apiserver.k8s.io/v1", typed.StatusKeepsMetadata,
		func(pl, old *flowcontrolv1.PriorityLevelConfiguration) { pl.Spec = old.Spec },
		validation.ValidatePriorityLevelConfigurationStatusUpdate)
	return &Storage{PriorityLevelConfiguration: store, Status: typed.NewSubresource(store, status)}, nil
}
