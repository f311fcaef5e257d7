package fielderrors

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestFields(t *testing.T) {
	errs := field.ErrorList{
		field.Invalid(field.NewPath("spec", "leaseName"), "x", "bad"),
		field.Required(field.NewPath("metadata", "name"), ""),
	}
	if got, want := Fields(errs), []string{"spec.leaseName", "metadata.name"}; !slices.Equal(got, want) {
		t.Errorf("Fields = %q, want %q", got, want)
	}
	if got, want := TypesAndFields(errs), []string{"FieldValueInvalid spec.leaseName", "FieldValueRequired metadata.name"}; !slices.Equal(got, want) {
		t.Errorf("TypesAndFields = %q, want %q", got, want)
	}
	if got := Fields(nil); got != nil {
		t.Errorf("Fields(nil) = %q, want nil", got)
	}
}
