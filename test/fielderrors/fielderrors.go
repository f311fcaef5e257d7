// Package fielderrors gives validation tests what they compare of a
// field.ErrorList: the field paths of its errors, with or without their
// types, in order.
package fielderrors

import "k8s.io/apimachinery/pkg/util/validation/field"

// Fields is the field path of each error ("spec.leaseName").
func Fields(errs field.ErrorList) []string {
	var out []string
	for _, e := range errs {
		out = append(out, e.Field)
	}
	return out
}

// TypesAndFields is the type and field path of each error
// ("FieldValueInvalid spec.leaseName").
func TypesAndFields(errs field.ErrorList) []string {
	var out []string
	for _, e := range errs {
		out = append(out, string(e.Type)+" "+e.Field)
	}
	return out
}
