// Package flowschema serves flowcontrol.apiserver.k8s.io/v1 flowschemas and
// their status subresource, which the API Priority and Fairness
// configuration consumer writes.
package flowschema

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

// Storage is the REST storage of flowschemas and flowschemas/status.
type Storage struct {
	FlowSchema *genericregistry.Store
	Status     *typed.Subresource
}

// NewStorage returns the storage of flowschemas. As upstream: the status
// is cleared on create and kept on update of the main resource, a spec
// change bumps metadata.generation, and only /status writes the status.
func NewStorage(typer runtime.ObjectTyper, optsGetter generic.RESTOptionsGetter) (*Storage, error) {
	strategy := &typed.Strategy[*flowcontrolv1.FlowSchema]{
		Spec:                func(fs *flowcontrolv1.FlowSchema) any { return fs.Spec },
		ObjectTyper:         typer,
		NameGenerator:       names.SimpleNameGenerator,
		UnconditionalUpdate: true,
		PrepareCreate: func(_ context.Context, fs *flowcontrolv1.FlowSchema) {
			fs.Status = flowcontrolv1.FlowSchemaStatus{}
		},
		PrepareUpdateFn: func(_ context.Context, fs, old *flowcontrolv1.FlowSchema) {
			fs.Status = old.Status
		},
		ValidateCreate: func(_ context.Context, fs *flowcontrolv1.FlowSchema) field.ErrorList {
			return validation.ValidateFlowSchema(fs)
		},
		ValidateUpdateFn: func(_ context.Context, fs, old *flowcontrolv1.FlowSchema) field.ErrorList {
			return validation.ValidateFlowSchemaUpdate(fs, old)
		},
		ResetFields: map[fieldpath.APIVersion]*fieldpath.Set{
			"flowcontrol.apiserver.k8s.io/v1": fieldpath.NewSet(fieldpath.MakePathOrDie("status")),
		},
	}
	store, err := typed.Resource[*flowcontrolv1.FlowSchema, *flowcontrolv1.FlowSchemaList]{
		GroupResource: flowcontrolv1.Resource("flowschemas"),
		Singular:      "flowschema",
		New:           func() *flowcontrolv1.FlowSchema { return &flowcontrolv1.FlowSchema{} },
		NewList:       func() *flowcontrolv1.FlowSchemaList { return &flowcontrolv1.FlowSchemaList{} },
		Strategy:      strategy,
		Table:         TableConvertor(),
	}.NewStore(optsGetter)
	if err != nil {
		return nil, err
	}

	status := typed.StatusStrategy(strategy, "flowcontrol.apiserver.k8s.io/v1", typed.StatusKeepsMetadata,
		func(fs, old *flowcontrolv1.FlowSchema) { fs.Spec = old.Spec }, validation.ValidateFlowSchemaStatusUpdate)
	return &Storage{FlowSchema: store, Status: typed.NewSubresource(store, status)}, nil
}
