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
	w := walker{}
	w.object(obj)
	return w.load
}

// ObjectKey returns the length of the longest key of a decoded object's
// maps, its managed fields not counted, for KeyLength. It is for bodies
// whose keys Check cannot find (protobuf, where a map entry's key is a
// string field like any other), so it walks the keys of every map, where
// ObjectLoad needs only their lengths.
func ObjectKey(obj any) int {
	w := walker{keys: true}
	w.object(obj)
	return w.key
}

// walker measures a decoded object's maps: their load, and with keys their
// longest key.
type walker struct {
	keys      bool
	load, key int
}

// object walks an unstructured object as it is, but for its managed
// fields, and a typed one by reflection.
func (w *walker) object(obj any) {
	u, ok := obj.(interface{ UnstructuredContent() map[string]any })
	if !ok {
		w.typed(reflect.ValueOf(obj))
		return
	}
	content := u.UnstructuredContent()
	w.mapOf(content)
	for key, value := range content {
		if meta, ok := value.(map[string]any); ok && key == "metadata" {
			w.mapOf(meta)
			for k, v := range meta {
				if k != "managedFields" {
					w.value(v)
				}
			}
			continue
		}
		w.value(value)
	}
}

// mapOf counts an unstructured map's members, and its keys.
func (w *walker) mapOf(m map[string]any) {
	w.load += len(m) * len(m)
	if w.keys {
		for k := range m {
			w.key = max(w.key, len(k))
		}
	}
}

// value walks a decoded JSON value.
func (w *walker) value(v any) {
	switch v := v.(type) {
	case map[string]any:
		w.mapOf(v)
		for _, c := range v {
			w.value(c)
		}
	case []any:
		for _, c := range v {
			w.value(c)
		}
	}
}

// typed walks a typed value: the lengths of its maps (and their keys),
// through the encoded fields, elements and values whose types can hold a
// map. A typed object's managed fields hold no map (their field sets are
// raw JSON), so nothing is skipped.
func (w *walker) typed(v reflect.Value) {
	if !v.IsValid() || !holdsMap(v.Type()) {
		return
	}
	switch v.Kind() {
	case reflect.Map:
		w.load += v.Len() * v.Len()
		if w.keys {
			w.typedKeys(v)
		}
		if holdsMap(v.Type().Elem()) {
			for it := v.MapRange(); it.Next(); {
				w.typed(it.Value())
			}
		}
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			w.typed(v.Elem())
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			w.typed(v.Index(i))
		}
	case reflect.Struct:
		for _, i := range mapFields(v.Type()) {
			w.typed(v.Field(i))
		}
	}
}

// typedKeys measures the keys of a typed map whose keys are strings: the
// maps of Kubernetes' types directly, others through one reused key value,
// so that no key is copied.
func (w *walker) typedKeys(v reflect.Value) {
	if v.Type().Key().Kind() != reflect.String {
		return
	}
	if !v.CanInterface() { // reached through an embedded unexported struct
		for it := v.MapRange(); it.Next(); {
			w.key = max(w.key, it.Key().Len())
		}
		return
	}
	switch m := v.Interface().(type) {
	case map[string]string:
		for k := range m {
			w.key = max(w.key, len(k))
		}
		return
	case map[string][]byte:
		for k := range m {
			w.key = max(w.key, len(k))
		}
		return
	}
	key := reflect.New(v.Type().Key()).Elem()
	for it := v.MapRange(); it.Next(); {
		key.SetIterKey(it)
		w.key = max(w.key, key.Len())
	}
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
