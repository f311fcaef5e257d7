// Package mutatingadmissionpolicy serves admissionregistration.k8s.io/v1
// mutatingadmissionpolicies, whose CEL expressions (match conditions,
// variables, apply configurations and JSON patches) must compile.
package mutatingadmissionpolicy

import (
	"context"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/storage/names"

	"github.com/gcp-project/gcp/pkg/controlplane/registry/admissionregistration/paramauthz"
	"github.com/gcp-project/gcp/pkg/controlplane/registry/admissionregistration/validation"
	"github.com/gcp-project/gcp/pkg/controlplane/registry/table"
	"github.com/gcp-project/gcp/pkg/controlplane/registry/typed"
)

// Strategy is the strategy of mutatingadmissionpolicies: generation 1 on
// create, bumped when the spec changes; a well-formed policy with a
// paramKind is authorized like a validating admission policy.
func Strategy(typer runtime.ObjectTyper, authz paramauthz.Checker) *typed.Strategy[*admissionregistrationv1.MutatingAdmissionPolicy] {
	return &typed.Strategy[*admissionregistrationv1.MutatingAdmissionPolicy]{
		Spec:          func(p *admissionregistrationv1.MutatingAdmissionPolicy) any { return p.Spec },
		ObjectTyper:   typer,
		NameGenerator: names.SimpleNameGenerator,
		ValidateCreate: func(ctx context.Context, p *admissionregistrationv1.MutatingAdmissionPolicy) field.ErrorList {
			errs := validation.ValidateMutatingAdmissionPolicy(p)
			errs = append(errs, validation.ValidateStaticSuffix(p.Name, field.NewPath("metadata", "name"))...)
			if len(errs) == 0 {
				errs = authz.PolicyWrite(ctx, p.Spec.ParamKind, nil)
			}
			return errs
		},
		ValidateUpdateFn: func(ctx context.Context, p, old *admissionregistrationv1.MutatingAdmissionPolicy) field.ErrorList {
			errs := validation.ValidateMutatingAdmissionPolicyUpdate(p, old)
			if len(errs) == 0 {
				errs = authz.PolicyWrite(ctx, p.Spec.ParamKind, old.Spec.ParamKind)
			}
			return errs
		},
		WarnUpdate: func(_ context.Context, p, _ *admissionregistrationv1.MutatingAdmissionPolicy) []string {
			return validation.WarningsForStaticSuffix(p.Name)
		},
	}
}

// NewStore returns the storage of mutatingadmissionpolicies.
func NewStore(typer runtime.ObjectTyper, optsGetter generic.RESTOptionsGetter, authz paramauthz.Checker) (*genericregistry.Store, error) {
	return typed.Resource[*admissionregistrationv1.MutatingAdmissionPolicy, *admissionregistrationv1.MutatingAdmissionPolicyList]{
		GroupResource: admissionregistrationv1.Resource("mutatingadmissionpolicies"),
		Singular:      "mutatingadmissionpolicy",
		New: func() *admissionregistrationv1.MutatingAdmissionPolicy {
			return &admissionregistrationv1.MutatingAdmissionPolicy{}
		},
		NewList: func() *admissionregistrationv1.MutatingAdmissionPolicyList {
			return &admissionregistrationv1.MutatingAdmissionPolicyList{}
		},
		Strategy: Strategy(typer, authz),
		Table:    TableConvertor(),
	}.NewStore(optsGetter)
}

// TableConvertor prints NAME MUTATIONS PARAMKIND AGE.
func TableConvertor() table.Convertor {
	return table.New([]metav1.TableColumnDefinition{
		table.NameColumn(),
		{Name: "Mutations", Type: "integer", Description: "Mutation indicates the number of mutations rules defined in this configuration"},
		{Name: "ParamKind", Type: "string", Description: "ParamKind specifies the kind of resources used to parameterize this policy"},
		table.AgeColumn(),
	}, func(obj runtime.Object) ([]interface{}, error) {
		p := obj.(*admissionregistrationv1.MutatingAdmissionPolicy)
		paramKind := "<unset>"
		if k := p.Spec.ParamKind; k != nil {
			paramKind = k.APIVersion + "/" + k.Kind
		}
		return []interface{}{p.Name, int64(len(p.Spec.Mutations)), paramKind, table.Age(p.CreationTimestamp)}, nil
	})
}
