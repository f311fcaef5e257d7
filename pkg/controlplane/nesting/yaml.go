package nesting

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// checkYAML measures a YAML body. JSON is YAML, and what clients send as
// YAML most often is JSON (kubectl's and client-go's server-side apply):
// that is measured as JSON. Other YAML is first bounded cheaply (yamlBound);
// only when the bound passes a limit is it read as a node tree, which
// keeps an alias as a reference to its anchor instead of a copy, and
// measured, an alias counting as deep as what it refers to.
func checkYAML(body []byte, limit int) error {
	if json.Valid(body) {
		return checkJSON(body, limit, Width)
	}
	if yamlBound(body) <= limit && yamlWidthBound(body) <= Width && !mayHaveLongKey(body) {
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
		if m.key > KeyLength {
			return &Error{Limit: limit, LongKey: true}
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

// mayHaveLongKey says whether a YAML body may have a key longer than
// KeyLength. The parser takes an implicit key ("key: value", in block or
// flow style) only on one line of at most 1,024 characters, so a longer key
// is an explicit one ("? key"), or an alias to a long anchor (which
// yamlBound sends to the node tree already), in a body longer than the key.
func mayHaveLongKey(body []byte) bool {
	if len(body) <= KeyLength {
		return false
	}
	for i := bytes.IndexByte(body, '?'); i >= 0; {
		if i+1 == len(body) || body[i+1] == ' ' || body[i+1] == '\t' || body[i+1] == '\n' || body[i+1] == '\r' {
			return true
		}
		next := bytes.IndexByte(body[i+1:], '?')
		if next < 0 {
			break
		}
		i += next + 1
	}
	return false
}

// yamlMeasure measures YAML node trees, each anchored node once.
type yamlMeasure struct {
	limit int
	// depths holds each node measured through an alias: its depth, or -1
	// while it is being measured (an alias inside its own anchor).
	depths map[*yaml.Node]int
	// load is the entries of each mapping measured, squared and summed.
	load int
	// key is the length of the longest scalar key measured, an alias
	// counting as its anchor.
	key int
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
			for i := 0; i < len(n.Content); i += 2 {
				key := n.Content[i]
				if key.Kind == yaml.AliasNode && key.Alias != nil {
					key = key.Alias
				}
				if key.Kind == yaml.ScalarNode {
					m.key = max(m.key, len(key.Value))
				}
			}
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
