package authorization

import (
	"fmt"

	authorizationv1 "k8s.io/api/authorization/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// invalid is the 422 of a review of kind.
func invalid(kind string, errs field.ErrorList) error {
	return apierrors.NewInvalid(authorizationv1.SchemeGroupVersion.WithKind(kind).GroupKind(), "", errs)
}

const exactlyOne = `exactly one of nonResourceAttributes or resourceAttributes must be specified`

// validateAttributes: exactly one of resource and non-resource attributes,
// and well-formed selectors.
func validateAttributes(res *authorizationv1.ResourceAttributes, nonRes *authorizationv1.NonResourceAttributes, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if (res == nil) == (nonRes == nil) {
		errs = append(errs, field.Invalid(fld, nonRes, exactlyOne))
	}
	return append(errs, validateResourceAttributes(res, fld.Child("resourceAttributes"))...)
}

// validateSubjectAccessReviewSpec validates the spec of a review about
// someone else, who must be named.
func validateSubjectAccessReviewSpec(spec authorizationv1.SubjectAccessReviewSpec, fld *field.Path) field.ErrorList {
	errs := validateAttributes(spec.ResourceAttributes, spec.NonResourceAttributes, fld)
	if spec.User == "" && len(spec.Groups) == 0 {
		errs = append(errs, field.Invalid(fld.Child("user"), spec.User, `at least one of user or group must be specified`))
	}
	return errs
}

// validateEmptyMeta: a review has no metadata (managed fields aside, which
// the create handler adds; and, if namespaced, the namespace).
func validateEmptyMeta(meta metav1.ObjectMeta, namespaced bool) field.ErrorList {
	meta.ManagedFields = nil
	msg := `must be empty`
	if namespaced {
		meta.Namespace = ""
		msg = `must be empty except for namespace`
	}
	if !apiequality.Semantic.DeepEqual(metav1.ObjectMeta{}, meta) {
		return field.ErrorList{field.Invalid(field.NewPath("metadata"), meta, msg)}
	}
	return nil
}

func validateSubjectAccessReview(r *authorizationv1.SubjectAccessReview) field.ErrorList {
	errs := validateSubjectAccessReviewSpec(r.Spec, field.NewPath("spec"))
	return append(errs, validateEmptyMeta(r.ObjectMeta, false)...)
}

func validateSelfSubjectAccessReview(r *authorizationv1.SelfSubjectAccessReview) field.ErrorList {
	errs := validateAttributes(r.Spec.ResourceAttributes, r.Spec.NonResourceAttributes, field.NewPath("spec"))
	return append(errs, validateEmptyMeta(r.ObjectMeta, false)...)
}

func validateLocalSubjectAccessReview(r *authorizationv1.LocalSubjectAccessReview) field.ErrorList {
	spec := field.NewPath("spec")
	errs := validateSubjectAccessReviewSpec(r.Spec, spec)
	errs = append(errs, validateEmptyMeta(r.ObjectMeta, true)...)
	if res := r.Spec.ResourceAttributes; res != nil && res.Namespace != r.Namespace {
		errs = append(errs, field.Invalid(spec.Child("resourceAttributes", "namespace"), res.Namespace, `must match metadata.namespace`))
	}
	if r.Spec.NonResourceAttributes != nil {
		errs = append(errs, field.Invalid(spec.Child("nonResourceAttributes"), r.Spec.NonResourceAttributes, `disallowed on this kind of request`))
	}
	return errs
}

func validateResourceAttributes(res *authorizationv1.ResourceAttributes, fld *field.Path) field.ErrorList {
	if res == nil {
		return nil
	}
	var errs field.ErrorList
	if fs := res.FieldSelector; fs != nil {
		p := fld.Child("fieldSelector")
		errs = append(errs, validateSelectorForm(fs.RawSelector, len(fs.Requirements), p)...)
		// Unknown operators pass: a newer client may ask about one this
		// server cannot interpret; the authorizer then sees a parse error.
		opts := metav1validation.FieldSelectorValidationOptions{AllowUnknownOperatorInRequirement: true}
		for i, r := range fs.Requirements {
			errs = append(errs, metav1validation.ValidateFieldSelectorRequirement(r, opts, p.Child("requirements").Index(i))...)
		}
	}
	if ls := res.LabelSelector; ls != nil {
		p := fld.Child("labelSelector")
		errs = append(errs, validateSelectorForm(ls.RawSelector, len(ls.Requirements), p)...)
		opts := metav1validation.LabelSelectorValidationOptions{AllowUnknownOperatorInRequirement: true}
		for i, r := range ls.Requirements {
			errs = append(errs, metav1validation.ValidateLabelSelectorRequirement(r, opts, p.Child("requirements").Index(i))...)
		}
	}
	return errs
}

// validateSelectorForm: a selector is either raw or requirements.
func validateSelectorForm(raw string, requirements int, fld *field.Path) field.ErrorList {
	switch {
	case raw != "" && requirements > 0:
		return field.ErrorList{field.Invalid(fld.Child("rawSelector"), raw, "may not specified at the same time as requirements")}
	case raw == "" && requirements == 0:
		return field.ErrorList{field.Required(fld.Child("requirements"), fmt.Sprintf("when %s is specified, requirements or rawSelector is required", fld))}
	}
	return nil
}
