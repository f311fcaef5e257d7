package nesting

import (
	"reflect"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
)

// ObjectDepth returns how deeply a decoded object nests, not counting its
// managed fields (which follow the object's shape four levels further
// down), or limit+1 once it passes limit. It is for what a request makes
// rather than what it sends: a JSON patch can copy a subtree deeper than
// any body it carries. An unstructured object (a custom resource) is walked
// as it is; a typed one is converted to its unstructured form first.
func ObjectDepth(obj any, limit int) int {
	var content map[string]any
	switch o := obj.(type) {
	case interface{ UnstructuredContent() map[string]any }:
		content = o.UnstructuredContent()
	default:
		converted, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			return 0
		}
		content = converted
	}
	deepest := 0
	for key, value := range content {
		if meta, ok := value.(map[string]any); ok && key == "metadata" {
			for k, v := range meta {
				if k != "managedFields" {
					deepest = max(deepest, valueDepth(v, limit-2)+1)
				}
			}
			continue
		}
		deepest = max(deepest, valueDepth(value, limit-1))
		if deepest >= limit {
			break
		}
	}
	return deepest + 1
}

// valueDepth is the nesting of a decoded JSON value, up to limit+1.
func valueDepth(v any, limit int) int {
	var children []any
	switch v := v.(type) {
	case map[string]any:
		for _, c := range v {
			children = append(children, c)
		}
	case []any:
		children = v
	default:
		return 0
	}
	if limit < 1 {
		return 1
	}
	deepest := 0
	for _, c := range children {
		deepest = max(deepest, valueDepth(c, limit-1))
		if deepest >= limit {
			break
		}
	}
	return deepest + 1
}

// ObjectLoad returns the members of each map of a decoded object, squared
// and summed (its load, which Width bounds at Width squared), not counting
// its managed fields, which follow the object's shape. It is for what a
// write makes rather than what it sends: merge patches that each add fewer
// than Width keys to one map would otherwise grow it without bound over
// several requests, and every later write of it would cost the field
// manager time in the square of its keys. An unstructured object (a custom
// resource) is walked as it is. A typed one is walked by reflection, into
// only the fields whose types can hold a map: an ordinary ConfigMap costs
// a few of its fields and the lengths of its maps, not a conversion.
func ObjectLoad(obj any) int {
	if u, ok := obj.(interface{ UnstructuredContent() map[string]any }); ok {
		content := u.UnstructuredContent()
		load := len(content) * len(content)
		for key, value := range content {
			if meta, ok := value.(map[string]any); ok && key == "metadata" {
				load += len(meta) * len(meta)
				for k, v := range meta {
					if k != "managedFields" {
						load += valueLoad(v)
					}
				}
				continue
			}
			load += valueLoad(value)
		}
		return load
	}
	return typedLoad(reflect.ValueOf(obj))
}

// valueLoad is the load of a decoded JSON value.
func valueLoad(v any) int {
	switch v := v.(type) {
	case map[string]any:
		load := len(v) * len(v)
		for _, c := range v {
			load += valueLoad(c)
		}
		return load
	case []any:
		load := 0
		for _, c := range v {
			load += valueLoad(c)
		}
		return load
	}
	return 0
}

// typedLoad is the load of a typed value: the lengths of its maps, squared
// and summed, through the encoded fields, elements and values whose types
// can hold a map. A typed object's managed fields hold no map (their field
// sets are raw JSON), so nothing is skipped.
func typedLoad(v reflect.Value) int {
	if !v.IsValid() || !holdsMap(v.Type()) {
		return 0
	}
	switch v.Kind() {
	case reflect.Map:
		load := v.Len() * v.Len()
		if holdsMap(v.Type().Elem()) {
			for it := v.MapRange(); it.Next(); {
				load += typedLoad(it.Value())
			}
		}
		return load
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return 0
		}
		return typedLoad(v.Elem())
	case reflect.Slice, reflect.Array:
		load := 0
		for i := range v.Len() {
			load += typedLoad(v.Index(i))
		}
		return load
	case reflect.Struct:
		load := 0
		for _, i := range mapFields(v.Type()) {
			load += typedLoad(v.Field(i))
		}
		return load
	}
	return 0
}

// typeShapes caches, for each type walked, whether it can hold a map.
var typeShapes sync.Map

// holdsMap says whether a value of type t can hold a map: it is one, or an
// interface (which can hold anything), or it reaches one through pointers,
// elements or encoded struct fields.
func holdsMap(t reflect.Type) bool {
	if held, ok := typeShapes.Load(t); ok {
		return held.(bool)
	}
	held := shapeOf(t, map[reflect.Type]bool{})
	typeShapes.Store(t, held)
	return held
}

// shapeOf works holdsMap out; a type met again inside itself counts as
// holding one, which only costs a walk that finds none.
func shapeOf(t reflect.Type, visiting map[reflect.Type]bool) bool {
	if held, ok := typeShapes.Load(t); ok {
		return held.(bool)
	}
	if visiting[t] {
		return true
	}
	visiting[t] = true
	defer delete(visiting, t)
	switch t.Kind() {
	case reflect.Map, reflect.Interface:
		return true
	case reflect.Pointer, reflect.Slice, reflect.Array:
		return shapeOf(t.Elem(), visiting)
	case reflect.Struct:
		for i := range t.NumField() {
			if f := t.Field(i); encoded(f) && shapeOf(f.Type, visiting) {
				return true
			}
		}
	}
	return false
}

// structFields caches mapFields.
var structFields sync.Map

// mapFields returns the indexes of t's encoded fields that can hold a map.
func mapFields(t reflect.Type) []int {
	if fields, ok := structFields.Load(t); ok {
		return fields.([]int)
	}
	var fields []int
	for i := range t.NumField() {
		if f := t.Field(i); encoded(f) && holdsMap(f.Type) {
			fields = append(fields, i)
		}
	}
	structFields.Store(t, fields)
	return fields
}

// encoded says whether a struct field is part of the object's encoding: an
// exported field, or an embedded one (whose exported fields are promoted).
func encoded(f reflect.StructField) bool {
	return f.IsExported() || f.Anonymous
}
