package nesting

import (
	"encoding/json"
	"fmt"
	"strings"
)

// checkJSON measures a JSON body's depth and the load of its objects.
func checkJSON(body []byte, limit, width int) error {
	depth, load, key := scanJSON(body, limit)
	switch {
	case depth > limit:
		return &Error{Limit: limit}
	case load > width*width:
		return &Error{Limit: limit, Wide: true}
	case key > KeyLength:
		return &Error{Limit: limit, LongKey: true}
	}
	return nil
}

// scanJSON returns the greatest nesting of objects and arrays in data, the
// members of each object squared and summed (its load: the colons outside
// strings, counted per object), and the length of its longest member name
// as written (a string followed by a colon, escapes as they are), in one
// pass. It stops, with the depth at limit+1, as soon as the depth passes
// limit. It does not validate the JSON: brackets, strings and colons are
// counted as they come.
func scanJSON(data []byte, limit int) (depth, load, key int) {
	var members []int // of each open object or array, innermost last
	inString, escaped := false, false
	start, last := 0, 0 // where the open string began; the last one's length
	for i, c := range data {
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
				last = i - start - 1
			}
			continue
		}
		switch c {
		case '"':
			inString, start = true, i
		case '{', '[':
			members = append(members, 0)
			if len(members) > depth {
				depth = len(members)
				if depth > limit {
					return depth, load, key
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
			key = max(key, last)
		}
	}
	return depth, load, key
}

// jsonDepth returns the depth scanJSON finds.
func jsonDepth(data []byte, limit int) int {
	depth, _, _ := scanJSON(data, limit)
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
// three levels deep; each segment of a path is a key, at most KeyLength
// bytes long. A copy or a move to a path deeper than where it takes
// from deepens what it carries by the difference, whatever that is; together
// the operations of one patch may deepen the document by at most limit
// levels, so no patch makes more than twice the limit before the object's
// own check refuses it (ObjectDepth). A patch that is not a list of
// operations passes (the handler says what is wrong with it).
func checkJSONPatch(body []byte, limit int) error {
	// The list and its operation objects add two levels to each value.
	depth, load, key := scanJSON(body, limit+2)
	switch {
	case depth > limit+2:
		return &Error{Limit: limit}
	case load > Width*Width:
		return &Error{Limit: limit, Wide: true}
	case key > KeyLength:
		return &Error{Limit: limit, LongKey: true}
	}
	var ops []jsonPatchOperation
	if err := json.Unmarshal(body, &ops); err != nil {
		return nil
	}
	deepened := 0
	for i, op := range ops {
		// A path's segments are the keys its value lands under.
		if longestSegment(op.Path) > KeyLength || longestSegment(op.From) > KeyLength {
			return &Error{Limit: limit, LongKey: true, Where: fmt.Sprintf("operation %d, path %q", i, truncate(op.Path, 80))}
		}
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

// longestSegment is the length of a JSON pointer's longest segment, as
// written.
func longestSegment(pointer string) int {
	longest := 0
	for segment := range strings.SplitSeq(pointer, "/") {
		longest = max(longest, len(segment))
	}
	return longest
}

// truncate shortens s to at most n bytes for a message.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
