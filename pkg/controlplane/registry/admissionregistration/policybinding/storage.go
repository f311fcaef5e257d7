// Package policybinding serves admissionregistration.k8s.io/v1
// validatingadmissionpolicybindings and mutatingadmissionpolicybindings.
// A binding may name a policy that does not exist (it then does nothing),
// as upstream; one with a paramRef is authorized: its writer must be able
// to read the parameters it names.
package policybinding

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

// ValidatingStrategy is the strategy of validatingadmissionpolicybindings:
// generation 1 on create, bumped when the spec changes. policyParamKind
// reads the bound policy's paramKind for the authorization of paramRefs.
func ValidatingStrategy(typer runtime.ObjectTyper, authz paramauthz.Checker, policyParamKind paramauthz.PolicyParamKind) *typed.Strategy[*admissionregistrationv1.ValidatingAdmissionPolicyBinding] {
	return &typed.Strategy[*admissionregistrationv1.ValidatingAdmissionPolicyBinding]{
		Spec:          func(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) any { return b.Spec },
		ObjectTyper:   typer,
		NameGenerator: names.SimpleNameGenerator,
		ValidateCreate: func(ctx context.Context, b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) field.ErrorList {
			errs := validation.ValidateValidatingAdmissionPolicyBinding(b)
			errs = append(errs, validation.ValidateStaticSuffix(b.Name, field.NewPath("metadata", "name"))...)
			if len(errs) == 0 {
				errs = authz.BindingWrite(ctx, b.Spec.PolicyName, b.Spec.ParamRef, "", nil, policyParamKind)
			}
			return errs
		},
		ValidateUpdateFn: func(ctx context.Context, b, old *admissionregistrationv1.ValidatingAdmissionPolicyBinding) field.ErrorList {
			errs := validation.ValidateValidatingAdmissionPolicyBinding(b)
			if len(errs) == 0 {
				errs = authz.BindingWrite(ctx, b.Spec.PolicyName, b.Spec.ParamRef, old.Spec.PolicyName, old.Spec.ParamRef, policyParamKind)
			}
			return errs
		},
		WarnUpdate: func(_ context.Context, b, _ *admissionregistrationv1.ValidatingAdmissionPolicyBinding) []string {
			return validation.WarningsForStaticSuffix(b.Name)
		},
	}
}

// MutatingStrategy is ValidatingStrategy for mutatingadmissionpolicybindings.
func MutatingStrategy(typer runtime.ObjectTyper, authz paramauthz.Checker, policyParamKind paramauthz.PolicyParamKind) *typed.Strategy[*admissionregistrationv1.MutatingAdmissionPolicyBinding] {
	return &typed.Strategy[*admissionregistrationv1.MutatingAdmissionPolicyBinding]{
		Spec:          func(b *admissionregistrationv1.MutatingAdmissionPolicyBinding) any { return b.Spec },
		ObjectTyper:   typer,
		NameGenerator: names.SimpleNameGenerator,
		ValidateCreate: func(ctx context.Context, b *admissionregistrationv1.MutatingAdmissionPolicyBinding) field.ErrorList {
			errs := validation.ValidateMutatingAdmissionPolicyBinding(b)
			errs = append(errs, validation.ValidateStaticSuffix(b.Name, field.NewPath("metadata", "name"))...)
			if len(errs) == 0 {
				errs = authz.BindingWrite(ctx, b.Spec.PolicyName, b.Spec.ParamRef, "", nil, policyParamKind)
			}
			return errs
		},
		ValidateUpdateFn: func(ctx context.Context, b, old *admissionregistrationv1.MutatingAdmissionPolicyBinding) field.ErrorList {
			errs := validation.ValidateMutatingAdmissionPolicyBinding(b)
			if len(errs) == 0 {
				errs = authz.BindingWrite(ctx, b.Spec.PolicyName, b.Spec.ParamRef, old.Spec.PolicyName, old.Spec.ParamRef, policyParamKind)
			}
			return errs
		},
		WarnUpdate: func(_ context.Context, b, _ *admissionregistrationv1.MutatingAdmissionPolicyBinding) []string {
			return validation.WarningsForStaticSuffix(b.Name)
		},
	}
}

// NewValidatingStore returns the storage of validatingadmissionpolicybindings.
func NewValidatingStore(typer runtime.ObjectTyper, optsGetter generic.RESTOptionsGetter, authz paramauthz.Checker, policyParamKind paramauthz.PolicyParamKind) (*genericregistry.Store, error) {
	return typed.Resource[*admissionregistrationv1.ValidatingAdmissionPolicyBinding, *admissionregistrationv1.ValidatingAdmissionPolicyBindingList]{
		GroupResource: admissionregistrationv1.Resource("validatingadmissionpolicybindings"),
		Singular:      "validatingadmissionpolicybinding",
		New: func() *admissionregistrationv1.ValidatingAdmissionPolicyBinding {
			return &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
		},
		NewList: func() *admissionregistrationv1.ValidatingAdmissionPolicyBindingList {
			return &admissionregistrationv1.ValidatingAdmissionPolicyBindingList{}
		},
		Strategy: ValidatingStrategy(typer, authz, policyParamKind),
		Table: tableConvertor(func(obj runtime.Object) (metav1.ObjectMeta, string, *admissionregistrationv1.ParamRef) {
			b := obj.(*admissionregistrationv1.ValidatingAdmissionPolicyBinding)
			return b.ObjectMeta, b.Spec.PolicyName, b.Spec.ParamRef
		}),
	}.NewStore(optsGetter)
}

// NewMutatingStore returns the storage of mutatingadmissionpolicybindings.
func NewMutatingStore(typer runtime.ObjectTyper, optsGetter generic.RESTOptionsGetter, authz paramauthz.Checker, policyParamKind paramauthz.PolicyParamKind) (*genericregistry.Store, error) {
	return typed.Resource[*admissionregistrationv1.MutatingAdmissionPolicyBinding, *admissionregistrationv1.MutatingAdmissionPolicyBindingList]{
		GroupResource: admissionregistrationv1.Resource("mutatingadmissionpolicybindings"),
		Singular:      "mutatingadmissionpolicybinding",
		New: func() *admissionregistrationv1.MutatingAdmissionPolicyBinding {
			return &admissionregistrationv1.MutatingAdmissionPolicyBinding{}
		},
		NewList: func() *admissionregistrationv1.MutatingAdmissionPolicyBindingList {
			return &admissionregistrationv1.MutatingAdmissionPolicyBindingList{}
		},
		Strategy: MutatingStrategy(typer, authz, policyParamKind),
		Table: tableConvertor(func(obj runtime.Object) (metav1.ObjectMeta, string, *admissionregistrationv1.ParamRef) {
			b := obj.(*admissionregistrationv1.MutatingAdmissionPolicyBinding)
			return b.ObjectMeta, b.Spec.PolicyName, b.Spec.ParamRef
		}),
	}.NewStore(optsGetter)
}

// tableConvertor prints NAME POLICYNAME PARAMREF AGE.
func tableConvertor(of func(runtime.Object) (metav1.ObjectMeta, string, *admissionregistrationv1.ParamRef)) table.Convertor {
	return table.New([]metav1.TableColumnDefinition{
		table.NameColumn(),
		{Name: "PolicyName", Type: "string", Description: "PolicyName indicates the policy definition which the policy binding binded to"},
		{Name: "ParamRef", Type: "string", Description: "ParamRef indicates the param resource which sets the configuration param"},
		table.AgeColumn(),
	}, func(obj runtime.Object) ([]interface{}, error) {
		meta, policy, ref := of(obj)
		return []interface{}{meta.Name, policy, ParamRefCell(ref), table.Age(meta.CreationTimestamp)}, nil
	})
}

// ParamRefCell prints a binding's paramRef as kubectl does:
// "<namespace>/<name>", "*/<name>" without a namespace, the selector, or
// "<unset>".
func ParamRefCell(ref *admissionregistrationv1.ParamRef) string {
	switch {
	case ref == nil:
		return "<unset>"
	case ref.Name != "" && ref.Namespace != "":
		return ref.Namespace + "/" + ref.Name
	case ref.Name != "":
		return "*/" + ref.Name
	case ref.Selector != nil:
		return ref.Selector.String()
	}
	return "<unset>"
}
