package crdshare

import (
	"bytes"
	"reflect"
	"slices"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// equalNode reports whether a and b are reflect.DeepEqual, given that
// their children (Properties-like maps and pointed-to schemas) are the
// ones a Sharer holds: those are compared by identity, so two equal
// schemas whose children are equal but not shared compare unequal (they
// are then only not shared), never the other way round. Every field of
// JSONSchemaProps is compared (TestEqualNodeSeesEveryField).
func equalNode(a, b *apiextensionsv1.JSONSchemaProps) bool {
	if a == b {
		return true
	}
	return a.ID == b.ID && a.Schema == b.Schema && equalPtr(a.Ref, b.Ref) &&
		a.Description == b.Description && a.Type == b.Type && a.Format == b.Format && a.Title == b.Title &&
		equalJSON(a.Default, b.Default) && equalJSON(a.Example, b.Example) && equalJSONs(a.Enum, b.Enum) &&
		equalPtr(a.Maximum, b.Maximum) && a.ExclusiveMaximum == b.ExclusiveMaximum &&
		equalPtr(a.Minimum, b.Minimum) && a.ExclusiveMinimum == b.ExclusiveMinimum && equalPtr(a.MultipleOf, b.MultipleOf) &&
		equalPtr(a.MaxLength, b.MaxLength) && equalPtr(a.MinLength, b.MinLength) && a.Pattern == b.Pattern &&
		equalPtr(a.MaxItems, b.MaxItems) && equalPtr(a.MinItems, b.MinItems) && a.UniqueItems == b.UniqueItems &&
		equalPtr(a.MaxProperties, b.MaxProperties) && equalPtr(a.MinProperties, b.MinProperties) &&
		equalStrings(a.Required, b.Required) && equalStrings(a.XListMapKeys, b.XListMapKeys) &&
		a.Nullable == b.Nullable && equalPtr(a.XPreserveUnknownFields, b.XPreserveUnknownFields) &&
		a.XEmbeddedResource == b.XEmbeddedResource && a.XIntOrString == b.XIntOrString &&
		equalPtr(a.XListType, b.XListType) && equalPtr(a.XMapType, b.XMapType) && equalPtr(a.ExternalDocs, b.ExternalDocs) &&
		a.Not == b.Not && sameMap(a.Properties, b.Properties) && sameMap(a.PatternProperties, b.PatternProperties) &&
		sameMap(a.Definitions, b.Definitions) && equalOrBool(a.AdditionalProperties, b.AdditionalProperties) &&
		equalOrBool(a.AdditionalItems, b.AdditionalItems) && equalItems(a.Items, b.Items) &&
		// Rare in CRDs: compared in full.
		reflect.DeepEqual(a.AllOf, b.AllOf) && reflect.DeepEqual(a.OneOf, b.OneOf) && reflect.DeepEqual(a.AnyOf, b.AnyOf) &&
		reflect.DeepEqual(a.Dependencies, b.Dependencies) && reflect.DeepEqual(a.XValidations, b.XValidations)
}

// equalMap reports whether two Properties-like maps are equal as
// equalNode compares their values.
func equalMap(a, b map[string]apiextensionsv1.JSONSchemaProps) bool {
	if (a == nil) != (b == nil) || len(a) != len(b) {
		return false
	}
	for k, av := range a {
		bv, ok := b[k]
		if !ok || !equalNode(&av, &bv) {
			return false
		}
	}
	return true
}

// sameMap reports whether a and b are the same map (not only equal).
func sameMap(a, b map[string]apiextensionsv1.JSONSchemaProps) bool {
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

func equalPtr[T comparable](a, b *T) bool {
	return a == b || a != nil && b != nil && *a == *b
}

func equalStrings(a, b []string) bool {
	return (a == nil) == (b == nil) && slices.Equal(a, b)
}

func equalJSON(a, b *apiextensionsv1.JSON) bool {
	return a == b || a != nil && b != nil && (a.Raw == nil) == (b.Raw == nil) && bytes.Equal(a.Raw, b.Raw)
}

func equalJSONs(a, b []apiextensionsv1.JSON) bool {
	return (a == nil) == (b == nil) && slices.EqualFunc(a, b, func(x, y apiextensionsv1.JSON) bool { return equalJSON(&x, &y) })
}

func equalOrBool(a, b *apiextensionsv1.JSONSchemaPropsOrBool) bool {
	return a == b || a != nil && b != nil && a.Allows == b.Allows && a.Schema == b.Schema
}

func equalItems(a, b *apiextensionsv1.JSONSchemaPropsOrArray) bool {
	return a == b || a != nil && b != nil && a.Schema == b.Schema && reflect.DeepEqual(a.JSONSchemas, b.JSONSchemas)
}
