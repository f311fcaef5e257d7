package leasecandidate

import (
	"context"

	coordinationv1beta1 "k8s.io/api/coordination/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/storage/names"

	"github.com/gcp-project/gcp/pkg/controlplane/registry/table"
	"github.com/gcp-project/gcp/pkg/controlplane/registry/typed"
)

// NewStore returns the storage of coordination.k8s.io/v1beta1
// leasecandidates. As upstream, PUT may create a candidate, and a
// candidate has no status.
func NewStore(typer runtime.ObjectTyper, optsGetter generic.RESTOptionsGetter) (*genericregistry.Store, error) {
	return typed.Resource[*coordinationv1beta1.LeaseCandidate, *coordinationv1beta1.LeaseCandidateList]{
		GroupResource: coordinationv1beta1.Resource("leasecandidates"),
		Singular:      "leasecandidate",
		New:           func() *coordinationv1beta1.LeaseCandidate { return &coordinationv1beta1.LeaseCandidate{} },
		NewList:       func() *coordinationv1beta1.LeaseCandidateList { return &coordinationv1beta1.LeaseCandidateList{} },
		Strategy: &typed.Strategy[*coordinationv1beta1.LeaseCandidate]{
			ObjectTyper:    typer,
			NameGenerator:  names.SimpleNameGenerator,
			Namespaced:     true,
			CreateOnUpdate: true,
			ValidateCreate: func(_ context.Context, c *coordinationv1beta1.LeaseCandidate) field.ErrorList {
				return Validate(c)
			},
			ValidateUpdateFn: func(_ context.Context, c, old *coordinationv1beta1.LeaseCandidate) field.ErrorList {
				return ValidateUpdate(c, old)
			},
		},
		Table: TableConvertor(),
		Fields: func(c *coordinationv1beta1.LeaseCandidate) fields.Set {
			set := typed.ObjectMetaFieldsSet(&c.ObjectMeta, true)
			set["spec.leaseName"] = c.Spec.LeaseName
			return set
		},
	}.NewStore(optsGetter)
}

// TableConvertor prints NAME LEASENAME BINARYVERSION EMULATIONVERSION AGE,
// as kubectl shows lease candidates.
func TableConvertor() table.Convertor {
	return table.New([]metav1.TableColumnDefinition{
		table.NameColumn(),
		{Name: "LeaseName", Type: "string", Description: coordinationv1beta1.LeaseCandidateSpec{}.SwaggerDoc()["leaseName"]},
		{Name: "BinaryVersion", Type: "string", Description: coordinationv1beta1.LeaseCandidateSpec{}.SwaggerDoc()["binaryVersion"]},
		{Name: "EmulationVersion", Type: "string", Description: coordinationv1beta1.LeaseCandidateSpec{}.SwaggerDoc()["emulationVersion"]},
		table.AgeColumn(),
	}, func(obj runtime.Object) ([]interface{}, error) {
		c := obj.(*coordinationv1beta1.LeaseCandidate)
		return []interface{}{c.Name, c.Spec.LeaseName, c.Spec.BinaryVersion, c.Spec.EmulationVersion, table.Age(c.CreationTimestamp)}, nil
	})
}
