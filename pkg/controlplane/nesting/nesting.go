// Package nesting measures how deeply a request body nests objects and lists
// within one another, in each media type the API server decodes, without
// decoding it into objects.
//
// Parts of the request path cost time proportional to the square of an
// object's depth (json-patch's merge patch re-encodes each level's subtree;
// the custom resource read path walks it again per level), so one body of
// 60 KB nested 10,000 levels deep held the CPU for seconds and the heap for
// hundreds of MiB. Check bounds the depth before any of that runs, in time
// linear in the body's size.
package nesting

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/fxamacker/cbor/v2"
	yaml "go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/runtime"
)

// Limit is how many levels of objects and lists within one another a request
// body may have: {"a":{"b":[1]}} has three. The deepest objects Kubernetes'
// own types make are about 16 levels (a CronJob), and a CRD whose schema
// embeds a CronJob's is about 35; managed fields follow an object's shape
// four levels down. 100 leaves room for all of these and keeps the
// quadratic parts of the request path cheap (docs/security.md).
const Limit = 100

// Width is how many members one object (a map) of a request body may have,
// fewer when several are that large: the members of each object, squared
// and summed over the body, may be at most Width squared. The field manager
// keeps each object's field paths in a sorted slice and inserts each member
// where it belongs, so its time grows with that sum: 60,000 keys of one
// ConfigMap took 3.3 s of CPU before the object was refused as too large
// for etcd, and a 3 MiB body holds 250,000, in one object or in twelve of
// 20,000. At the limit it is about 0.4 s.
const Width = 20000

// Error says that a body nests deeper than the limit, or that one of its
// objects has more members than Width.
type Error struct {
	// Limit is the number of levels allowed.
	Limit int
	// Where says where in the body the limit was passed, when known (a JSON
	// patch operation's path).
	Where string
	// Wide says the body passed Width, not Limit.
	Wide bool
}

func (e *Error) Error() string {
	where := ""
	if e.Where != "" {
		where = " (" + e.Where + ")"
	}
	if e.Wide {
		return fmt.Sprintf("the objects in the request body have too many members%s; gcp accepts at most %d "+
			"keys in one object, fewer when several objects are that large (the members of each object, "+
			"squared and summed, at most %d squared)", where, Width, Width)
	}
	return fmt.Sprintf("the request body nests objects and lists more than %d levels deep%s; "+
		"gcp accepts at most %d levels of nesting", e.Limit, where, e.Limit)
}

// Media types, as the API server names them.
const (
	mediaJSON           = "application/json"
	mediaMergePatch     = "application/merge-patch+json"
	mediaStrategicPatch = "application/strategic-merge-patch+json"
	mediaJSONPatch      = "application/json-patch+json"
	mediaYAML           = "application/yaml"
	mediaApplyYAML      = "application/apply-patch+yaml"
	mediaCBOR           = "application/cbor"
	mediaApplyCBOR      = "application/apply-patch+cbor"
	mediaProtobuf       = "application/vnd.kubernetes.protobuf"
)

// Check returns an *Error when body, of the given media type (without
// parameters; "" is JSON, as the API server reads it), nests more than limit
// levels deep. A body Check cannot read, or of a media type the API server
// does not decode, passes: the handler that decodes it answers for it. For a
// JSON patch, each operation counts the segments of its path as levels, since
// that is where its value lands.
func Check(mediaType string, body []byte, limit int) error {
	switch mediaType {
	case "", mediaJSON, mediaMergePatch, mediaStrategicPatch:
		return checkJSON(body, limit, Width)
	case mediaJSONPatch:
		return checkJSONPatch(body, limit)
	case mediaYAML, mediaApplyYAML:
		return checkYAML(body, limit)
	case mediaCBOR, mediaApplyCBOR:
		return checkCBOR(body, limit)
	case mediaProtobuf:
		if protobufDepth(body, limit) > limit {
			return &Error{Limit: limit}
		}
		if protobufLoad(body) > Width*Width {
			return &Error{Limit: limit, Wide: true}
		}
	}
	return nil
}

// checkJSON measures a JSON body's depth and the load of its objects.
func checkJSON(body []byte, limit, width int) error {
	depth, load := scanJSON(body, limit)
	if depth > limit {
		return &Error{Limit: limit}
	}
	if load > width*width {
		return &Error{Limit: limit, Wide: true}
	}
	return nil
}

// protobufLoad returns, for each message in data, the fields that are
// themselves messages (map entries, items of a repeated message), squared
// and summed. Only those count: protobuf does not say which fields are
// messages, and a string such as "xxxx" reads as a message of varints.
func protobufLoad(data []byte) int {
	load, _ := messageLoad(bytes.TrimPrefix(data, protobufMagic), Limit+1)
	return load
}

// messageLoad returns the load of data read as a message, down to depth
// levels, and whether it reads as one.
func messageLoad(data []byte, depth int) (int, bool) {
	messages, load := 0, 0
	for len(data) > 0 {
		key, n := uvarint(data)
		if n <= 0 || key>>3 == 0 {
			return 0, false
		}
		data = data[n:]
		switch key & 7 {
		case 0:
			if _, n = uvarint(data); n <= 0 {
				return 0, false
			}
			data = data[n:]
		case 1:
			if len(data) < 8 {
				return 0, false
			}
			data = data[8:]
		case 5:
			if len(data) < 4 {
				return 0, false
			}
			data = data[4:]
		case 2:
			length, n := uvarint(data)
			if n <= 0 || length > uint64(len(data)-n) {
				return 0, false
			}
			if depth > 0 && length > 0 {
				if sub, ok := messageLoad(data[n:n+int(length)], depth-1); ok {
					messages++
					load += sub
				}
			}
			data = data[n+int(length):]
		default:
			return 0, false
		}
	}
	return load + messages*messages, true
}

// scanJSON returns the greatest nesting of objects and arrays in data, and
// the members of each object squared and summed (its load: the colons
// outside strings, counted per object), in one pass. It stops, with the
// depth at limit+1, as soon as the depth passes limit. It does not validate
// the JSON: brackets and colons outside strings are counted as they come.
func scanJSON(data []byte, limit int) (depth, load int) {
	var members []int // of each open object or array, innermost last
	inString, escaped := false, false
	for _, c := range data {
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '{', '[':
			members = append(members, 0)
			if len(members) > depth {
				depth = len(members)
				if depth > limit {
					return depth, load
				}
			}
		case '}', ']':
			if len(members) > 0 {
				members = members[:len(members)-1]
			}
		case ':':
			if len(members) > 0 {
				// From n to n+1 members the square grows by 2n+1.
				load += 2*members[len(members)-1] + 1
				members[len(members)-1]++
			}
		}
	}
	return depth, load
}

// jsonDepth returns the depth scanJSON finds.
func jsonDepth(data []byte, limit int) int {
	depth, _ := scanJSON(data, limit)
	return depth
}

// jsonPatchOperation is the part of a JSON patch operation that says how
// deep its value lands.
type jsonPatchOperation struct {
	Op    string          `json:"op"`
	Path  string          `json:"path"`
	From  string          `json:"from"`
	Value json.RawMessage `json:"value"`
}

// checkJSONPatch counts each operation's path segments and its value's own
// depth together: {"op":"add","path":"/a/b","value":{"c":1}} makes an object
// three levels deep. A copy or a move to a path deeper than where it takes
// from deepens what it carries by the difference, whatever that is; together
// the operations of one patch may deepen the document by at most limit
// levels, so no patch makes more than twice the limit before the object's
// own check refuses it (ObjectDepth). A patch that is not a list of
// operations passes (the handler says what is wrong with it).
func checkJSONPatch(body []byte, limit int) error {
	// The list and its operation objects add two levels to each value.
	depth, load := scanJSON(body, limit+2)
	if depth > limit+2 {
		return &Error{Limit: limit}
	}
	if load > Width*Width {
		return &Error{Limit: limit, Wide: true}
	}
	var ops []jsonPatchOperation
	if err := json.Unmarshal(body, &ops); err != nil {
		return nil
	}
	deepened := 0
	for i, op := range ops {
		if segments(op.Path)+jsonDepth(op.Value, limit) > limit {
			return &Error{Limit: limit, Where: fmt.Sprintf("operation %d, path %q", i, truncate(op.Path, 80))}
		}
		if op.Op == "copy" || op.Op == "move" {
			deepened += max(segments(op.Path)-segments(op.From), 0)
			if deepened > limit {
				return &Error{Limit: limit, Where: fmt.Sprintf("operation %d: copies and moves to deeper paths add up to more than %d levels", i, limit)}
			}
		}
	}
	return nil
}

// segments counts the levels a JSON pointer descends.
func segments(pointer string) int {
	return strings.Count(pointer, "/")
}

// truncate shortens s to at most n bytes for a message.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// checkYAML measures a YAML body. JSON is YAML, and what clients send as
// YAML most often is JSON (kubectl's and client-go's server-side apply):
// that is measured as JSON. Other YAML is first bounded cheaply (yamlBound);
// only when the bound passes the limit is it read as a node tree, which
// keeps an alias as a reference to its anchor instead of a copy, and
// measured, an alias counting as deep as what it refers to.
func checkYAML(body []byte, limit int) error {
	if json.Valid(body) {
		return checkJSON(body, limit, Width)
	}
	if yamlBound(body) <= limit && yamlWidthBound(body) <= Width {
		return nil
	}
	dec := yaml.NewDecoder(bytes.NewReader(body))
	for {
		var doc yaml.Node
		if err := dec.Decode(&doc); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			// The parser stops at its own depth limit (10,000).
			if strings.Contains(err.Error(), "exceeded max depth") {
				return &Error{Limit: limit}
			}
			// Other unreadable YAML is the handler's to refuse.
			return nil
		}
		m := yamlMeasure{limit: limit, depths: map[*yaml.Node]int{}}
		if m.depth(&doc) > limit {
			return &Error{Limit: limit}
		}
		if m.load > Width*Width {
			return &Error{Limit: limit, Wide: true}
		}
	}
}

// yamlBound returns a number no smaller than the depth of a YAML body, in
// one pass over its bytes, or a number past any limit when the body has an
// anchor (whose aliases could repeat its depth anywhere). A block collection
// begins further right than the one holding it, or at the same column for a
// sequence that is a mapping's value, and it begins where a line's text
// begins or after the "- ", "? " and ": " indicators that start it: so each
// column up to the rightmost such start adds at most two levels. Each flow
// bracket adds at most one, wherever it is.
func yamlBound(body []byte) int {
	if bytes.IndexByte(body, '&') >= 0 {
		return int(^uint(0) >> 1)
	}
	rightmost := 0
	for line := range bytes.SplitSeq(body, []byte{'\n'}) {
		i := 0
		for {
			for i < len(line) && (line[i] == ' ' || line[i] == '\t') {
				i++
			}
			if i+1 < len(line) && (line[i] == '-' || line[i] == '?' || line[i] == ':') && (line[i+1] == ' ' || line[i+1] == '\t') {
				i += 2
				continue
			}
			break
		}
		rightmost = max(rightmost, i)
	}
	return 2*(rightmost+1) + bytes.Count(body, []byte{'['}) + bytes.Count(body, []byte{'{'})
}

// yamlWidthBound returns a number no smaller than the entries of all the
// mappings of a YAML body together, and so than the square root of their
// load: each entry has a ": ", a "," (in flow style, where an entry may be
// a key alone) or a "? " (an explicit key).
func yamlWidthBound(body []byte) int {
	return bytes.Count(body, []byte{':'}) + bytes.Count(body, []byte{','}) + bytes.Count(body, []byte{'?'})
}

// yamlMeasure measures YAML node trees, each anchored node once.
type yamlMeasure struct {
	limit int
	// depths holds each node measured through an alias: its depth, or -1
	// while it is being measured (an alias inside its own anchor).
	depths map[*yaml.Node]int
	// load is the entries of each mapping measured, squared and summed.
	load int
}

func (m *yamlMeasure) depth(n *yaml.Node) int {
	switch n.Kind {
	case yaml.DocumentNode:
		deepest := 0
		for _, c := range n.Content {
			deepest = max(deepest, m.depth(c))
		}
		return deepest
	case yaml.AliasNode:
		if n.Alias == nil {
			return 0
		}
		d, seen := m.depths[n.Alias]
		if seen {
			if d < 0 { // a cycle: as deep as anything can be
				return m.limit + 1
			}
			return d
		}
		m.depths[n.Alias] = -1
		d = m.depth(n.Alias)
		m.depths[n.Alias] = d
		return d
	case yaml.MappingNode, yaml.SequenceNode:
		if n.Kind == yaml.MappingNode {
			m.load += (len(n.Content) / 2) * (len(n.Content) / 2)
		}
		deepest := 0
		for _, c := range n.Content {
			deepest = max(deepest, m.depth(c))
			if deepest >= m.limit {
				return m.limit + 1
			}
		}
		return deepest + 1
	}
	return 0
}

// checkCBOR uses the CBOR decoder's own well-formedness check, which counts
// arrays and maps as levels, as JSON's are counted (its smallest limit is
// 4), and limits each map to Width pairs (not the sum of their squares).
func checkCBOR(body []byte, limit int) error {
	mode, err := cbor.DecOptions{MaxNestedLevels: max(limit, 4), MaxMapPairs: Width}.DecMode()
	if err != nil {
		return nil
	}
	var tooDeep *cbor.MaxNestedLevelError
	var tooWide *cbor.MaxMapPairsError
	switch err := mode.Wellformed(body); {
	case errors.As(err, &tooDeep):
		return &Error{Limit: limit}
	case errors.As(err, &tooWide):
		return &Error{Limit: limit, Wide: true}
	}
	return nil
}

// protobufMagic begins the API server's protobuf encoding, before the
// runtime.Unknown envelope that holds the object.
var protobufMagic = []byte{0x6b, 0x38, 0x73, 0x00}

// protobufDepth returns how deeply messages nest in data, or limit+1 once it
// passes limit. Protobuf does not say which fields are messages, so a
// length-delimited field counts as a message when its bytes read as one
// whole (field numbers above zero, known wire types, lengths inside it).
// The envelope (runtime.Unknown, and the object's bytes inside it) is not
// counted, so an object's depth is its JSON form's or less: a list of
// messages is one level here, two in JSON.
func protobufDepth(data []byte, limit int) int {
	if !bytes.HasPrefix(data, protobufMagic) {
		return messageDepth(data, limit, 0)
	}
	// The envelope is one level more than the object it holds.
	return max(messageDepth(data[len(protobufMagic):], limit+1, 0)-1, 0)
}

// messageDepth returns the depth of data read as a message whose fields are
// at level depth+1, or -1 when data does not read as a message. It stops at
// limit+1.
func messageDepth(data []byte, limit, depth int) int {
	level := depth + 1
	deepest := level
	for len(data) > 0 {
		key, n := uvarint(data)
		if n <= 0 || key>>3 == 0 {
			return -1
		}
		data = data[n:]
		switch key & 7 {
		case 0: // varint
			_, n = uvarint(data)
			if n <= 0 {
				return -1
			}
			data = data[n:]
		case 1: // 64-bit
			if len(data) < 8 {
				return -1
			}
			data = data[8:]
		case 5: // 32-bit
			if len(data) < 4 {
				return -1
			}
			data = data[4:]
		case 2: // length-delimited: bytes, a string, or a message
			length, n := uvarint(data)
			if n <= 0 || length > uint64(len(data)-n) {
				return -1
			}
			field := data[n : n+int(length)]
			data = data[n+int(length):]
			if len(field) == 0 || level >= limit+1 {
				continue
			}
			if d := messageDepth(field, limit, level); d > deepest {
				deepest = d
				if deepest > limit {
					return deepest
				}
			}
		default: // groups are not used, and 6 and 7 are not wire types
			return -1
		}
	}
	if level > limit {
		return level
	}
	return deepest
}

// uvarint reads a protobuf varint; n <= 0 when data does not begin with one.
func uvarint(data []byte) (uint64, int) {
	var v uint64
	for i := 0; i < len(data) && i < 10; i++ {
		b := data[i]
		v |= uint64(b&0x7f) << (7 * i)
		if b < 0x80 {
			return v, i + 1
		}
	}
	return 0, 0
}

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
