// Package flowschema serves flowcontrol.apiserver.k8s.io/v1 flowschemas and
// their status subresource, which the API Priority and Fairness
// configuration consumer writes.
package flowschema

import (
	"context"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"

	"github.com/gcp-project/gcp/pkg/controlplane/registry/flowcontrol/validation"
	"github.com/gcp-project/gcp/pkg/controlplane/registry/typed"
)

// Storage is the REST storage of flowschemas and flowschemas/status.
type Storage struct {
	FlowSchema *genericregistry.Store
	Status     *typed.Subresource
}

// NewStorage returns the storage of flowschemas. As upstream: the status
// is cleared on create and kept on update of the main resource, a spec
// change bumps metadata.generation, and only /status writes the status.
func NewStorage(typer runtime.ObjectTyper, optsGetter generic.RESTOptionsGetter) (*Storage, error) {
	strategy := typed.NewStrategy(typer, typed.ClusterScoped, validation.ValidateFlowSchema, validation.ValidateFlowSchemaUpdate)
	strategy.UnconditionalUpdate = true
	strategy.Spec = func(fs *flowcontrolv1.FlowSchema) any { return fs.Spec }
	strategy.PrepareCreate = func(_ context.Context, fs *flowcontrolv1.FlowSchema) { fs.Status = flowcontrolv1.FlowSchemaStatus{} }
	strategy.PrepareUpdateFn = func(_ context.Context, fs, old *flowcontrolv1.FlowSchema) { fs.Status = old.Status }
	strategy.ResetFields = typed.StatusResetFields("flowcontrol.apiserver.k8s.io/v1")
	store, err := typed.NewResource[flowcontrolv1.FlowSchema, flowcontrolv1.FlowSchemaList](
		flowcontrolv1.Resource("flowschemas"), "flowschema", strategy, TableConvertor()).NewStore(optsGetter)
	if err != nil {
		return nil, err
	}

	status := typed.StatusStrategy(strategy, "flowcontrol.apiserver.k8s.io/v1", typed.StatusKeepsMetadata,
		func(fs, old *flowcontrolv1.FlowSchema) { fs.Spec = old.Spec }, validation.ValidateFlowSchemaStatusUpdate)
	return &Storage{FlowSchema: store, Status: typed.NewSubresource(store, status)}, nil
}
