package nesting

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	yaml "go.yaml.in/yaml/v3"
)

// FuzzCheck holds the measures to what a decoder makes of the same bytes,
// with depth and width as explicit dimensions of the seeds: JSON's depth is
// the decoded value's, and its longest key as written is no shorter than
// the decoded value's longest; YAML's one-pass bound is never below the
// depth of the node tree; and no body, in any media type, panics.
func FuzzCheck(f *testing.F) {
	const limit = 20
	for _, depth := range []int{0, 1, limit - 1, limit, limit + 1, 3 * limit} {
		for _, width := range []int{1, 3} {
			f.Add(depth, width, []byte(`"leaf"`))
			f.Add(depth, width, []byte("- a: [b, {c: d}]\n  e: |\n    [[[\n"))
		}
	}
	f.Add(0, 1, []byte("a: &a [[[x]]]\nb: [[*a, *a]]\n"))
	f.Add(0, 1, []byte("? - - a\n: - - b\n"))
	f.Add(0, 1, []byte("k8s\x00\x0a\x02\x0a\x00"))
	f.Add(2, 2, []byte(`{"k\u00e9\"y":["a:b"],"":{"\\":1}}`))
	f.Add(0, 1, []byte("\xd9\xd9\xf7\xbf\x7f\x61a\x62bc\xff\x9f\x01\xff\x5f\x41a\xff\xc1\x01\xff"))
	f.Add(0, 1, []byte("a:\n  ? |\n    long\n  : v\n"))
	f.Fuzz(func(t *testing.T, depth, width int, leaf []byte) {
		if depth < 0 || depth > 5*limit || width < 1 || width > 8 || len(leaf) > 512 {
			return
		}
		body := shaped(depth, width, leaf)
		for _, mediaType := range []string{"application/json", "application/json-patch+json", "application/yaml", "application/cbor", "application/vnd.kubernetes.protobuf"} {
			_ = Check(mediaType, body, limit)
			_ = Check(mediaType, leaf, limit)
		}
		if json.Valid(body) {
			var v any
			if err := json.Unmarshal(body, &v); err == nil {
				if got, want := jsonDepth(body, limit), min(valueDepth(v, 1<<20), limit+1); got != want {
					t.Fatalf("jsonDepth %d, decoded depth %d: %q", got, want, body)
				}
				decoded := walker{keys: true}
				decoded.value(v)
				if _, _, key := scanJSON(body, 1<<20); key < decoded.key {
					t.Fatalf("scanJSON's longest key %d, decoded %d: %q", key, decoded.key, body)
				}
			}
		}
		for _, doc := range [][]byte{body, leaf} {
			var node yaml.Node
			if bytes.IndexByte(doc, '&') >= 0 || yaml.Unmarshal(doc, &node) != nil {
				continue
			}
			m := yamlMeasure{limit: 1 << 20, depths: map[*yaml.Node]int{}}
			if measured := m.depth(&node); yamlBound(doc) < measured {
				t.Fatalf("yamlBound %d below the tree's depth %d: %q", yamlBound(doc), measured, doc)
			}
		}
	})
}

// shaped nests leaf depth levels deep, alternating objects and lists, with
// width siblings at each level.
func shaped(depth, width int, leaf []byte) []byte {
	s := string(leaf)
	for d := 0; d < depth; d++ {
		siblings := make([]string, width)
		for i := range siblings {
			siblings[i] = s
		}
		if d%2 == 0 {
			s = "[" + strings.Join(siblings, ",") + "]"
		} else {
			for i := range siblings {
				siblings[i] = `"k` + string(rune('a'+i)) + `":` + siblings[i]
			}
			s = "{" + strings.Join(siblings, ",") + "}"
		}
		if len(s) > 1<<16 {
			break
		}
	}
	return []byte(s)
}
