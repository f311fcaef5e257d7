package validation

import (
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating/patch"
)

var supportedPatchTypes = sets.New(
	string(admissionregistrationv1.PatchTypeApplyConfiguration),
	string(admissionregistrationv1.PatchTypeJSONPatch),
)

// ValidateMutatingAdmissionPolicy validates a new mutating admission policy.
func ValidateMutatingAdmissionPolicy(p *admissionregistrationv1.MutatingAdmissionPolicy) field.ErrorList {
	return validateMutatingAdmissionPolicy(p, policyOptions{preexisting: newPreexisting()})
}

// ValidateMutatingAdmissionPolicyUpdate validates an update of a mutating
// admission policy; expressions the old policy had compile in the stored
// environment.
func ValidateMutatingAdmissionPolicyUpdate(p, old *admissionregistrationv1.MutatingAdmissionPolicy) field.ErrorList {
	pre := newPreexisting()
	for _, mc := range old.Spec.MatchConditions {
		pre.matchConditions.Insert(mc.Expression)
	}
	for _, m := range old.Spec.Mutations {
		if m.ApplyConfiguration != nil {
			pre.applyConfigurations.Insert(m.ApplyConfiguration.Expression)
		}
		if m.JSONPatch != nil {
			pre.jsonPatches.Insert(m.JSONPatch.Expression)
		}
	}
	return validateMutatingAdmissionPolicy(p, policyOptions{
		ignoreMatchConditions: apiequality.Semantic.DeepEqual(p.Spec.ParamKind, old.Spec.ParamKind) &&
			apiequality.Semantic.DeepEqual(p.Spec.MatchConditions, old.Spec.MatchConditions),
		preexisting: pre,
	})
}

func validateMutatingAdmissionPolicy(p *admissionregistrationv1.MutatingAdmissionPolicy, opts policyOptions) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMeta(&p.ObjectMeta, false, apimachineryvalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	spec := &p.Spec
	fldPath := field.NewPath("spec")
	compiler := newCompiler(true)
	errs = append(errs, validateFailurePolicy(spec.FailurePolicy, fldPath.Child("failurePolicy"))...)
	hasParams := spec.ParamKind != nil
	if hasParams {
		errs = append(errs, validateParamKind(*spec.ParamKind, fldPath.Child("paramKind"))...)
	}
	errs = append(errs, validateMatchConstraints(spec.MatchConstraints, fldPath.Child("matchConstraints"))...)
	errs = append(errs, validateMutatingOperations(spec.MatchConstraints, fldPath.Child("matchConstraints"))...)
	if !opts.ignoreMatchConditions {
		errs = append(errs, validateMatchConditions(spec.MatchConditions, matchConditionOptions{allowParams: hasParams, preexisting: opts.preexisting.matchConditions}, fldPath.Child("matchConditions"))...)
	}
	for i := range spec.Variables {
		errs = append(errs, validateVariable(compiler, &spec.Variables[i], hasParams, opts.preexisting.validations, fldPath.Child("variables").Index(i))...)
	}
	if len(spec.Mutations) == 0 {
		errs = append(errs, field.Required(fldPath.Child("mutations"), "mutations must contain at least one item"))
	}
	for i := range spec.Mutations {
		errs = append(errs, validateMutation(compiler, &spec.Mutations[i], hasParams, opts.preexisting, fldPath.Child("mutations").Index(i))...)
	}
	if spec.ReinvocationPolicy == "" {
		errs = append(errs, field.Required(fldPath.Child("reinvocationPolicy"), ""))
	} else if !supportedReinvocationPolicies.Has(string(spec.ReinvocationPolicy)) {
		errs = append(errs, field.NotSupported(fldPath.Child("reinvocationPolicy"), spec.ReinvocationPolicy, sets.List(supportedReinvocationPolicies)))
	}
	return errs
}

// validateMutation requires a patch type and exactly the matching one of
// applyConfiguration and jsonPatch, whose expression compiles.
func validateMutation(compiler plugincel.Compiler, m *admissionregistrationv1.Mutation, hasParams bool, pre preexisting, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	decls := plugincel.OptionalVariableDeclarations{HasParams: hasParams, HasAuthorizer: true, HasPatchTypes: true}
	switch m.PatchType {
	case "":
		errs = append(errs, field.Required(fldPath.Child("patchType"), ""))
	case admissionregistrationv1.PatchTypeJSONPatch:
		if m.JSONPatch == nil {
			errs = append(errs, field.Required(fldPath.Child("jsonPatch"), "must be specified when patchType is JSONPatch"))
		} else if expr := strings.TrimSpace(m.JSONPatch.Expression); expr == "" {
			errs = append(errs, field.Required(fldPath.Child("jsonPatch", "expression"), ""))
		} else {
			errs = append(errs, compile(compiler, &patch.JSONPatchCondition{Expression: expr}, decls,
				envType(pre.jsonPatches, m.JSONPatch.Expression), fldPath.Child("jsonPatch", "expression"))...)
		}
		if m.ApplyConfiguration != nil {
			errs = append(errs, field.Invalid(fldPath.Child("applyConfiguration"), "{applyConfiguration}", "must not be specified when patchType is JSONPatch"))
		}
	case admissionregistrationv1.PatchTypeApplyConfiguration:
		if m.ApplyConfiguration == nil {
			errs = append(errs, field.Required(fldPath.Child("applyConfiguration"), "must be specified when patchType is ApplyConfiguration"))
		} else if expr := strings.TrimSpace(m.ApplyConfiguration.Expression); expr == "" {
			errs = append(errs, field.Required(fldPath.Child("applyConfiguration", "expression"), ""))
		} else {
			errs = append(errs, compile(compiler, &patch.ApplyConfigurationCondition{Expression: expr}, decls,
				envType(pre.applyConfigurations, m.ApplyConfiguration.Expression), fldPath.Child("applyConfiguration", "expression"))...)
		}
		if m.JSONPatch != nil {
			errs = append(errs, field.Invalid(fldPath.Child("jsonPatch"), "{jsonPatch}", "must not be specified when patchType is ApplyConfiguration"))
		}
	default:
		errs = append(errs, field.NotSupported(fldPath.Child("patchType"), m.PatchType, sets.List(supportedPatchTypes)))
	}
	return errs
}
