package main

import (
	"encoding/json"
	"math"
	"regexp"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// minimalObject builds an object of a CRD's storage version from its
// schema: every required field (and the first alternative's of a oneOf
// or anyOf), each with the smallest value its type and bounds allow, and
// the field each CEL rule asks has() of first (the Crossplane providers
// require spec.forProvider's parameters that way). Patterns and other
// CEL rules are not read: the server may still reject the object, and
// the bench counts how many it accepts.
func minimalObject(crd *apiextensionsv1.CustomResourceDefinition, name, namespace string) map[string]any {
	v := storageVersion(crd)
	obj := map[string]any{}
	if v.Schema != nil && v.Schema.OpenAPIV3Schema != nil {
		if m, ok := minimalValue(v.Schema.OpenAPIV3Schema).(map[string]any); ok {
			obj = m
		}
	}
	meta := map[string]any{"name": name}
	if namespace != "" {
		meta["namespace"] = namespace
	}
	obj["apiVersion"] = crd.Spec.Group + "/" + v.Name
	obj["kind"] = crd.Spec.Names.Kind
	obj["metadata"] = meta
	return obj
}

// minimalValue is the smallest value of s that its type, enum, default
// and bounds allow.
func minimalValue(s *apiextensionsv1.JSONSchemaProps) any {
	if len(s.Enum) > 0 {
		var v any
		if json.Unmarshal(s.Enum[0].Raw, &v) == nil {
			return v
		}
	}
	if s.Default != nil {
		var v any
		if json.Unmarshal(s.Default.Raw, &v) == nil {
			return v
		}
	}
	switch s.Type {
	case "object":
		return minimalMap(s)
	case "array":
		items := []any{}
		if s.Items != nil && s.Items.Schema != nil {
			for range minOr(s.MinItems, 0) {
				items = append(items, minimalValue(s.Items.Schema))
			}
		}
		return items
	case "string":
		switch s.Format {
		case "date-time":
			return "2026-01-01T00:00:00Z"
		case "date":
			return "2026-01-01"
		}
		return strings.Repeat("x", int(max(1, minOr(s.MinLength, 1))))
	case "integer", "number":
		// int64 and float64, as unstructured content holds numbers.
		n := 0.0
		if s.Minimum != nil {
			n = math.Ceil(*s.Minimum)
			if s.ExclusiveMinimum && n == *s.Minimum {
				n++
			}
		}
		if s.Type == "integer" {
			return int64(n)
		}
		return n
	case "boolean":
		return false
	}
	if s.XIntOrString {
		return int64(0)
	}
	return map[string]any{}
}

func minOr(p *int64, d int64) int64 {
	if p == nil {
		return d
	}
	return *p
}

// minimalMap is the smallest object of an object schema: its required
// fields, the first oneOf's or anyOf's, and the field named first by
// each CEL rule's has().
func minimalMap(s *apiextensionsv1.JSONSchemaProps) map[string]any {
	m := map[string]any{}
	required := slices.Clone(s.Required)
	for _, alternatives := range [][]apiextensionsv1.JSONSchemaProps{s.OneOf, s.AnyOf} {
		if len(alternatives) > 0 {
			required = append(required, alternatives[0].Required...)
		}
	}
	for _, name := range required {
		if p, ok := s.Properties[name]; ok {
			if _, done := m[name]; !done {
				m[name] = minimalValue(&p)
			}
		}
	}
	for _, rule := range s.XValidations {
		if match := hasField.FindStringSubmatch(rule.Rule); match != nil {
			setPath(m, s, strings.Split(match[1], "."))
		}
	}
	return m
}

// hasField finds the first has(self.a.b) of a CEL rule.
var hasField = regexp.MustCompile(`has\(self\.([A-Za-z0-9_]+(?:\.[A-Za-z0-9_]+)*)\)`)

// setPath makes sure the field at path of m, an object of schema s,
// exists: each object on the way, and the minimal value at its end.
func setPath(m map[string]any, s *apiextensionsv1.JSONSchemaProps, path []string) {
	p, ok := s.Properties[path[0]]
	if !ok {
		return
	}
	if len(path) == 1 {
		if _, set := m[path[0]]; !set {
			m[path[0]] = minimalValue(&p)
		}
		return
	}
	child, ok := m[path[0]].(map[string]any)
	if !ok {
		if p.Type != "object" {
			return
		}
		child = minimalMap(&p)
		m[path[0]] = child
	}
	setPath(child, &p, path[1:])
}
