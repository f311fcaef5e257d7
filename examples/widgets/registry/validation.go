package registry

import (
	"slices"

	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	v1 "example.dev/widgets/apis/widgets/v1"
)

// colors are the supported values of spec.color.
var colors = []string{v1.ColorRed, v1.ColorGreen, v1.ColorBlue}

// Validate validates a new widget: a DNS subdomain name in a namespace
// and a valid spec.
func Validate(w *v1.Widget) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMeta(&w.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	return append(errs, validateSpec(&w.Spec, field.NewPath("spec"))...)
}

// ValidateUpdate validates an update of the widgets resource.
func ValidateUpdate(w, old *v1.Widget) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&w.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	return append(errs, validateSpec(&w.Spec, field.NewPath("spec"))...)
}

// ValidateStatusUpdate validates an update through widgets/status.
func ValidateStatusUpdate(w, old *v1.Widget) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&w.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	return append(errs, validateStatus(&w.Status, field.NewPath("status"))...)
}

// validateSpec requires a size from 1 to 100 and a supported color. An
// absent size decodes as 0, hence "required".
func validateSpec(spec *v1.WidgetSpec, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch {
	case spec.Size == 0:
		errs = append(errs, field.Required(fldPath.Child("size"), validation.InclusiveRangeError(v1.MinSize, v1.MaxSize)))
	case spec.Size < v1.MinSize || spec.Size > v1.MaxSize:
		errs = append(errs, field.Invalid(fldPath.Child("size"), spec.Size, validation.InclusiveRangeError(v1.MinSize, v1.MaxSize)))
	}
	if !slices.Contains(colors, spec.Color) {
		errs = append(errs, field.NotSupported(fldPath.Child("color"), spec.Color, colors))
	}
	return errs
}

// validateStatus validates the controller's report: a non-negative
// observed generation and well-formed conditions.
func validateStatus(status *v1.WidgetStatus, fldPath *field.Path) field.ErrorList {
	errs := apimachineryvalidation.ValidateNonnegativeField(status.ObservedGeneration, fldPath.Child("observedGeneration"))
	return append(errs, metav1validation.ValidateConditions(status.Conditions, fldPath.Child("conditions"))...)
}
