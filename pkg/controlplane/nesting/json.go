package nesting

import (
	"encoding/json"
	"fmt"
	"strings"
)

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
