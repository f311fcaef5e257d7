// Package crdshare makes the CRDs an informer holds share their identical
// schema subtrees and descriptions, so a CRD costs the memory of what is
// particular to it.
//
// The apiextensions server's CRD informer holds every CRD decoded, and a
// real CRD set repeats itself: a Crossplane provider's spec.forProvider and
// spec.initProvider are the same schema, its namespaced and cluster-scoped
// twins of a kind are the same CRD twice, and one description is written
// on hundreds of fields. In the Crossplane GCP provider's 817 CRDs, 11 % of
// the schema subtrees are distinct and 16 MiB of descriptions hold 1 MiB of
// distinct text.
//
// A Sharer's Transform, set on the informer before it starts, replaces
// each subtree of an arriving CRD that equals one the Sharer already holds
// by that one: a Properties map, a pointed-to schema (items,
// additionalProperties, not, a version's root) or a description. Equal
// means reflect.DeepEqual, so a nil map stays nil and an empty one empty;
// the CRD reads exactly as decoded. This is safe because objects an
// informer hands out are read-only (every controller copies a CRD before it
// changes it, and a DeepCopy shares nothing); a subtree is only ever
// replaced in an object the informer has not stored yet.
//
// The Sharer holds what it has seen. So that CRDs deleted or changed do not
// keep their schemas alive through it, it forgets everything once it holds
// twice what it held after it last did, and relearns what the informer's
// store still holds (without changing those objects); over a series of
// arrivals that costs a constant factor.
package crdshare

import (
	"hash/maphash"
	"reflect"
	"sync"
	"unsafe"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// minForget is the least a Sharer holds before it forgets and relearns.
const minForget = 4096

// Sharer shares schema subtrees between the CRDs an informer holds.
type Sharer struct {
	list func() []interface{}

	mu      sync.Mutex
	seed    maphash.Seed
	maps    map[uint64]map[string]apiextensionsv1.JSONSchemaProps
	nodes   map[uint64]*apiextensionsv1.JSONSchemaProps
	strs    map[string]string
	learned int // entries held after the last relearning

	// While relearning: the hashes of the maps and pointed-to schemas
	// already learned, by identity, so a subtree the store's CRDs share
	// is walked once.
	seenMaps  map[unsafe.Pointer]uint64
	seenNodes map[*apiextensionsv1.JSONSchemaProps]uint64
}

// New returns a Sharer for an informer whose store's List is list.
func New(list func() []interface{}) *Sharer {
	s := &Sharer{list: list, seed: maphash.MakeSeed()}
	s.reset()
	return s
}

// Transform is a cache.TransformFunc: a CRD comes back with its subtrees
// shared; anything else comes back as it is.
func (s *Sharer) Transform(obj interface{}) (interface{}, error) {
	crd, ok := obj.(*apiextensionsv1.CustomResourceDefinition)
	if !ok {
		return obj, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.share(crd, true)
	if s.size() > 2*s.learned+minForget {
		s.relearn()
	}
	return crd, nil
}

// size is how many entries s holds.
func (s *Sharer) size() int { return len(s.maps) + len(s.nodes) + len(s.strs) }

func (s *Sharer) reset() {
	s.maps = map[uint64]map[string]apiextensionsv1.JSONSchemaProps{}
	s.nodes = map[uint64]*apiextensionsv1.JSONSchemaProps{}
	s.strs = map[string]string{}
}

// relearn forgets everything and learns the subtrees of the CRDs the
// store holds, without changing them: other goroutines read them.
func (s *Sharer) relearn() {
	s.reset()
	s.seenMaps = map[unsafe.Pointer]uint64{}
	s.seenNodes = map[*apiextensionsv1.JSONSchemaProps]uint64{}
	for _, obj := range s.list() {
		if crd, ok := obj.(*apiextensionsv1.CustomResourceDefinition); ok {
			s.share(crd, false)
		}
	}
	s.seenMaps, s.seenNodes = nil, nil
	s.learned = s.size()
}

// share shares crd's subtrees (replace) or only learns them (!replace).
func (s *Sharer) share(crd *apiextensionsv1.CustomResourceDefinition, replace bool) {
	for i := range crd.Spec.Versions {
		v := crd.Spec.Versions[i].Schema
		if v == nil || v.OpenAPIV3Schema == nil {
			continue
		}
		root, _ := s.pointer(v.OpenAPIV3Schema, replace)
		if replace {
			v.OpenAPIV3Schema = root
		}
	}
}

// pointer shares p's subtrees and returns the schema equal to p that s
// holds (p itself if s held none), and p's hash.
func (s *Sharer) pointer(p *apiextensionsv1.JSONSchemaProps, replace bool) (*apiextensionsv1.JSONSchemaProps, uint64) {
	if h, ok := s.seenNodes[p]; ok {
		return p, h
	}
	h := s.node(p, replace)
	if s.seenNodes != nil {
		s.seenNodes[p] = h
	}
	if held, ok := s.nodes[h]; ok {
		if held != p && equalNode(held, p) {
			return held, h
		}
		return p, h
	}
	s.nodes[h] = p
	return p, h
}

// schemaMap shares the values' subtrees of a Properties-like map, then the
// map itself, and returns the map's hash. m points at the field holding it.
func (s *Sharer) schemaMap(m *map[string]apiextensionsv1.JSONSchemaProps, replace bool) uint64 {
	if *m == nil {
		return 0
	}
	id := reflect.ValueOf(*m).UnsafePointer()
	if h, ok := s.seenMaps[id]; ok {
		return h
	}
	var sum uint64 // order-independent: the sum of each entry's hash
	for k, v := range *m {
		ch := s.node(&v, replace)
		if replace {
			(*m)[k] = v
		}
		sum += maphash.String(s.seed, k)*31 + ch
	}
	sum = mix(sum, uint64(len(*m))+1)
	if s.seenMaps != nil {
		s.seenMaps[id] = sum
	}
	if held, ok := s.maps[sum]; ok {
		if replace && !sameMap(held, *m) && equalMap(held, *m) {
			*m = held
		}
		return sum
	}
	s.maps[sum] = *m
	return sum
}

// node shares p's subtrees (in place when replace) and returns a hash of
// p's content. Two schemas reflect.DeepEqual hash alike; a field left out
// of the hash only shares less, since every replacement is checked.
func (s *Sharer) node(p *apiextensionsv1.JSONSchemaProps, replace bool) uint64 {
	var h maphash.Hash
	h.SetSeed(s.seed)
	str := func(f *string) {
		v := *f
		if held, ok := s.strs[v]; ok {
			if replace {
				*f = held
			}
		} else if v != "" {
			s.strs[v] = v
		}
		h.WriteString(v)
		h.WriteByte(0)
	}
	num := func(v uint64) { maphash.WriteComparable(&h, v) }
	str(&p.Description)
	str(&p.Type)
	str(&p.Format)
	h.WriteString(p.ID)
	h.WriteString(string(p.Schema))
	h.WriteString(p.Title)
	h.WriteString(p.Pattern)
	for _, f := range []*string{p.Ref, p.XListType, p.XMapType} {
		if f != nil {
			h.WriteString(*f)
		}
		h.WriteByte(1)
	}
	for _, f := range []*apiextensionsv1.JSON{p.Default, p.Example} {
		if f != nil {
			h.Write(f.Raw)
		}
		h.WriteByte(2)
	}
	for _, e := range p.Enum {
		h.Write(e.Raw)
		h.WriteByte(3)
	}
	for _, r := range p.Required {
		h.WriteString(r)
		h.WriteByte(4)
	}
	for _, k := range p.XListMapKeys {
		h.WriteString(k)
		h.WriteByte(5)
	}
	for _, r := range p.XValidations {
		h.WriteString(r.Rule)
		h.WriteString(r.Message)
		h.WriteByte(6)
	}
	for _, f := range []*float64{p.Maximum, p.Minimum, p.MultipleOf} {
		if f != nil {
			maphash.WriteComparable(&h, *f)
		}
		h.WriteByte(7)
	}
	for _, f := range []*int64{p.MaxLength, p.MinLength, p.MaxItems, p.MinItems, p.MaxProperties, p.MinProperties} {
		if f != nil {
			num(uint64(*f))
		}
		h.WriteByte(8)
	}
	var flags uint64
	for i, b := range []bool{p.ExclusiveMaximum, p.ExclusiveMinimum, p.UniqueItems, p.Nullable,
		p.XEmbeddedResource, p.XIntOrString, p.XPreserveUnknownFields != nil, p.XPreserveUnknownFields != nil && *p.XPreserveUnknownFields} {
		if b {
			flags |= 1 << i
		}
	}
	num(flags)

	num(s.schemaMap(&p.Properties, replace))
	num(s.schemaMap(&p.PatternProperties, replace))
	num(s.schemaMap((*map[string]apiextensionsv1.JSONSchemaProps)(&p.Definitions), replace))
	for _, list := range [][]apiextensionsv1.JSONSchemaProps{p.AllOf, p.OneOf, p.AnyOf} {
		for i := range list {
			num(s.node(&list[i], replace))
		}
		h.WriteByte(9)
	}
	num(s.child(&p.Not, replace))
	if p.Items != nil {
		num(s.child(&p.Items.Schema, replace))
		for i := range p.Items.JSONSchemas {
			num(s.node(&p.Items.JSONSchemas[i], replace))
		}
	}
	for _, b := range []*apiextensionsv1.JSONSchemaPropsOrBool{p.AdditionalProperties, p.AdditionalItems} {
		if b != nil {
			h.WriteByte(10)
			if b.Allows {
				h.WriteByte(1)
			}
			num(s.child(&b.Schema, replace))
		}
	}
	var deps uint64 // order-independent, as a map's entries must be
	for k, d := range p.Dependencies {
		e := maphash.String(s.seed, k)
		if d.Schema != nil {
			e = mix(e, s.node(d.Schema, replace))
		}
		deps += e
	}
	num(deps)
	return h.Sum64()
}

// child shares the schema *f points at, replacing it by the one s holds.
func (s *Sharer) child(f **apiextensionsv1.JSONSchemaProps, replace bool) uint64 {
	if *f == nil {
		return 0
	}
	held, h := s.pointer(*f, replace)
	if replace {
		*f = held
	}
	return h
}

// mix folds n into h.
func mix(h, n uint64) uint64 {
	h ^= n + 0x9e3779b97f4a7c15 + (h << 6) + (h >> 2)
	return h
}
