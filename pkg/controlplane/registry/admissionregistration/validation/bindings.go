package validation

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/validate/content"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var validValidationActions = sets.New(
	string(admissionregistrationv1.Deny),
	string(admissionregistrationv1.Warn),
	string(admissionregistrationv1.Audit),
)

// ValidateValidatingAdmissionPolicyBinding validates a binding, new or
// updated. The policy it names need not exist: such a binding does nothing.
func ValidateValidatingAdmissionPolicyBinding(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMeta(&b.ObjectMeta, false, apimachineryvalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	fldPath := field.NewPath("spec")
	errs = append(errs, validatePolicyName(b.Spec.PolicyName, fldPath.Child("policyName"))...)
	errs = append(errs, validateParamRef(b.Spec.ParamRef, fldPath.Child("paramRef"))...)
	errs = append(errs, validateMatchResources(b.Spec.MatchResources, fldPath.Child("matchResources"))...)
	return append(errs, validateValidationActions(b.Spec.ValidationActions, fldPath.Child("validationActions"))...)
}

// ValidateMutatingAdmissionPolicyBinding validates a mutating policy
// binding, new or updated; it may not match DELETE.
func ValidateMutatingAdmissionPolicyBinding(b *admissionregistrationv1.MutatingAdmissionPolicyBinding) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMeta(&b.ObjectMeta, false, apimachineryvalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	fldPath := field.NewPath("spec")
	errs = append(errs, validatePolicyName(b.Spec.PolicyName, fldPath.Child("policyName"))...)
	errs = append(errs, validateParamRef(b.Spec.ParamRef, fldPath.Child("paramRef"))...)
	errs = append(errs, validateMatchResources(b.Spec.MatchResources, fldPath.Child("matchResources"))...)
	return append(errs, validateMutatingOperations(b.Spec.MatchResources, fldPath.Child("matchResources"))...)
}

func validatePolicyName(name string, fldPath *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	var errs field.ErrorList
	for _, msg := range apimachineryvalidation.NameIsDNSSubdomain(name, false) {
		errs = append(errs, field.Invalid(fldPath, name, msg))
	}
	return errs
}

// validateParamRef requires, when set, exactly one of a path segment name
// and a valid selector, and a parameterNotFoundAction of Allow or Deny.
func validateParamRef(ref *admissionregistrationv1.ParamRef, fldPath *field.Path) field.ErrorList {
	if ref == nil {
		return nil
	}
	var errs field.ErrorList
	if ref.Name != "" {
		for _, msg := range content.IsPathSegmentName(ref.Name) {
			errs = append(errs, field.Invalid(fldPath.Child("name"), ref.Name, msg))
		}
		if ref.Selector != nil {
			errs = append(errs, field.Forbidden(fldPath.Child("name"), `name and selector are mutually exclusive`))
		}
	}
	if ref.Selector != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(ref.Selector, metav1validation.LabelSelectorValidationOptions{}, fldPath.Child("selector"))...)
		if ref.Name != "" {
			errs = append(errs, field.Forbidden(fldPath.Child("selector"), `name and selector are mutually exclusive`))
		}
	}
	if ref.Name == "" && ref.Selector == nil {
		errs = append(errs, field.Required(fldPath, `one of name or selector must be specified`))
	}
	switch {
	case ref.ParameterNotFoundAction == nil || *ref.ParameterNotFoundAction == "":
		errs = append(errs, field.Required(fldPath.Child("parameterNotFoundAction"), ""))
	case *ref.ParameterNotFoundAction != admissionregistrationv1.DenyAction && *ref.ParameterNotFoundAction != admissionregistrationv1.AllowAction:
		errs = append(errs, field.NotSupported(fldPath.Child("parameterNotFoundAction"), *ref.ParameterNotFoundAction,
			[]string{string(admissionregistrationv1.DenyAction), string(admissionregistrationv1.AllowAction)}))
	}
	return errs
}

// validateValidationActions requires at least one unique action of Deny,
// Warn and Audit, not both Deny and Warn.
func validateValidationActions(actions []admissionregistrationv1.ValidationAction, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := sets.New[string]()
	for i, a := range actions {
		if !validValidationActions.Has(string(a)) {
			errs = append(errs, field.NotSupported(fldPath.Index(i), a, sets.List(validValidationActions)))
		}
		if seen.Has(string(a)) {
			errs = append(errs, field.Duplicate(fldPath.Index(i), a))
		}
		seen.Insert(string(a))
	}
	if seen.HasAll(string(admissionregistrationv1.Deny), string(admissionregistrationv1.Warn)) {
		errs = append(errs, field.Invalid(fldPath, actions, "must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)"))
	}
	if len(seen) == 0 {
		errs = append(errs, field.Required(fldPath, "at least one validation action is required"))
	}
	return errs
}
