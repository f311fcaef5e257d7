// Package validatingadmissionpolicy serves admissionregistration.k8s.io/v1
// validatingadmissionpolicies and their status subresource. Clients write
// the spec, whose CEL expressions must compile; the status (type-checking
// warnings, written by the validatingadmissionpolicy-status-controller) is
// written only through the status subresource.
package validatingadmissionpolicy

import (
	"context"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/storage/names"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/gcp-project/gcp/pkg/controlplane/registry/admissionregistration/paramauthz"
	"github.com/gcp-project/gcp/pkg/controlplane/registry/admissionregistration/validation"
	"github.com/gcp-project/gcp/pkg/controlplane/registry/table"
	"github.com/gcp-project/gcp/pkg/controlplane/registry/typed"
)

// Storage is the REST storage of validatingadmissionpolicies and their
// status.
type Storage struct {
	Policy *genericregistry.Store
	Status *typed.Subresource
}

// Strategy is the strategy of the main resource: status cleared on create
// and kept on update, generation 1 on create and bumped when the spec
// changes. A well-formed policy with a paramKind is also authorized: its
// writer must be able to get every object of that kind.
func Strategy(typer runtime.ObjectTyper, authz paramauthz.Checker) *typed.Strategy[*admissionregistrationv1.ValidatingAdmissionPolicy] {
	return &typed.Strategy[*admissionregistrationv1.ValidatingAdmissionPolicy]{
		Spec:          func(p *admissionregistrationv1.ValidatingAdmissionPolicy) any { return p.Spec },
		ObjectTyper:   typer,
		NameGenerator: names.SimpleNameGenerator,
		PrepareCreate: func(_ context.Context, p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Status = admissionregistrationv1.ValidatingAdmissionPolicyStatus{}
		},
		PrepareUpdateFn: func(_ context.Context, p, old *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Status = old.Status
		},
		ValidateCreate: func(ctx context.Context, p *admissionregistrationv1.ValidatingAdmissionPolicy) field.ErrorList {
			errs := validation.ValidateValidatingAdmissionPolicy(p)
			errs = append(errs, validation.ValidateStaticSuffix(p.Name, field.NewPath("metadata", "name"))...)
			if len(errs) == 0 {
				errs = authz.PolicyWrite(ctx, p.Spec.ParamKind, nil)
			}
			return errs
		},
		ValidateUpdateFn: func(ctx context.Context, p, old *admissionregistrationv1.ValidatingAdmissionPolicy) field.ErrorList {
			errs := validation.ValidateValidatingAdmissionPolicyUpdate(p, old)
			if len(errs) == 0 {
				errs = authz.PolicyWrite(ctx, p.Spec.ParamKind, old.Spec.ParamKind)
			}
			return errs
		},
		WarnUpdate: func(_ context.Context, p, _ *admissionregistrationv1.ValidatingAdmissionPolicy) []string {
			return validation.WarningsForStaticSuffix(p.Name)
		},
		ResetFields: map[fieldpath.APIVersion]*fieldpath.Set{
			"admissionregistration.k8s.io/v1": fieldpath.NewSet(fieldpath.MakePathOrDie("status")),
		},
	}
}

// StatusStrategy is the strategy of validatingadmissionpolicies/status:
// only the status changes, and it must be well-formed.
func StatusStrategy(main *typed.Strategy[*admissionregistrationv1.ValidatingAdmissionPolicy]) *typed.Strategy[*admissionregistrationv1.ValidatingAdmissionPolicy] {
	return typed.StatusStrategy(main, "admissionregistration.k8s.io/v1", typed.StatusResetsMetadata,
		func(p, old *admissionregistrationv1.ValidatingAdmissionPolicy) { p.Spec = old.Spec },
		validation.ValidateValidatingAdmissionPolicyStatusUpdate)
}

// NewStorage returns the storage of validatingadmissionpolicies and
// validatingadmissionpolicies/status.
func NewStorage(typer runtime.ObjectTyper, optsGetter generic.RESTOptionsGetter, authz paramauthz.Checker) (*Storage, error) {
	strategy := Strategy(typer, authz)
	store, err := typed.Resource[*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyList]{
		GroupResource: admissionregistrationv1.Resource("validatingadmissionpolicies"),
		Singular:      "validatingadmissionpolicy",
		New: func() *admissionregistrationv1.ValidatingAdmissionPolicy {
			return &admissionregistrationv1.ValidatingAdmissionPolicy{}
		},
		NewList: func() *admissionregistrationv1.ValidatingAdmissionPolicyList {
			return &admissionregistrationv1.ValidatingAdmissionPolicyList{}
		},
		Strategy: strategy,
		Table:    TableConvertor(),
	}.NewStore(optsGetter)
	if err != nil {
		return nil, err
	}
	return &Storage{Policy: store, Status: typed.NewSubresource(store, StatusStrategy(strategy))}, nil
}

// TableConvertor prints NAME VALIDATIONS PARAMKIND AGE, PARAMKIND being
// "<apiVersion>/<kind>" or "<unset>".
func TableConvertor() table.Convertor {
	return table.New([]metav1.TableColumnDefinition{
		table.NameColumn(),
		{Name: "Validations", Type: "integer", Description: "Validations indicates the number of validation rules defined in this configuration"},
		{Name: "ParamKind", Type: "string", Description: "ParamKind specifies the kind of resources used to parameterize this policy"},
		table.AgeColumn(),
	}, func(obj runtime.Object) ([]interface{}, error) {
		p := obj.(*admissionregistrationv1.ValidatingAdmissionPolicy)
		return []interface{}{p.Name, int64(len(p.Spec.Validations)), ParamKindCell(p.Spec.ParamKind), table.Age(p.CreationTimestamp)}, nil
	})
}

// ParamKindCell prints a policy's paramKind as kubectl does.
func ParamKindCell(k *admissionregistrationv1.ParamKind) string {
	if k == nil {
		return "<unset>"
	}
	return k.APIVersion + "/" + k.Kind
}
