package nesting

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/fxamacker/cbor/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
)

// nestedJSON is {"x":{"x":...1...}} with depth objects.
func nestedJSON(depth int) string {
	return strings.Repeat(`{"x":`, depth) + "1" + strings.Repeat("}", depth)
}

// nestedList is [[...[1]...]] with depth lists.
func nestedList(depth int) string {
	return strings.Repeat("[", depth) + "1" + strings.Repeat("]", depth)
}

func TestCheck(t *testing.T) {
	const limit = 10
	tests := []struct {
		name, mediaType, body string
		tooDeep               bool
	}{
		{"flat JSON", "application/json", `{"a":1,"b":[1,2],"c":{"d":"e"}}`, false},
		{"JSON at the limit", "application/json", nestedJSON(limit), false},
		{"JSON past the limit", "application/json", nestedJSON(limit + 1), true},
		{"lists past the limit", "application/json", nestedList(limit + 1), true},
		{"no media type is JSON", "", nestedJSON(limit + 1), true},
		{"merge patch", "application/merge-patch+json", nestedJSON(limit + 1), true},
		{"strategic merge patch", "application/strategic-merge-patch+json", nestedList(limit + 1), true},
		{"brackets in strings do not count", "application/json", `{"a":"` + strings.Repeat(`[{\"`, 50) + `"}`, false},
		{"wide is not deep", "application/json", "[" + strings.Repeat(nestedJSON(limit)+",", 100) + "1]", true},
		{"wide within the limit", "application/json", "[" + strings.Repeat(nestedJSON(limit-1)+",", 100) + "1]", false},
		{"JSON patch value at the limit", "application/json-patch+json", `[{"op":"add","path":"/a","value":` + nestedJSON(limit-1) + `}]`, false},
		{"JSON patch path and value past the limit", "application/json-patch+json", `[{"op":"add","path":"/a/b","value":` + nestedJSON(limit-1) + `}]`, true},
		{"JSON patch path alone past the limit", "application/json-patch+json", `[{"op":"add","path":"` + strings.Repeat("/a", limit+1) + `","value":1}]`, true},
		{"JSON patch copies to deeper paths add up", "application/json-patch+json", "[" + strings.Repeat(`{"op":"copy","from":"/a","path":"/a/b/c/d"},`, 4) + `{"op":"test","path":"/a","value":1}]`, true},
		{"JSON patch copies within the limit", "application/json-patch+json", "[" + strings.Repeat(`{"op":"move","from":"/a/b/c","path":"/a/b/c/d"},`, 10) + `{"op":"copy","from":"/a/b","path":"/a"}]`, false},
		{"JSON patch that is not a list passes", "application/json-patch+json", `{"op":"add"}`, false},
		{"YAML block past the limit", "application/yaml", nestedYAML(limit + 1), true},
		{"YAML block at the limit", "application/apply-patch+yaml", nestedYAML(limit), false},
		{"YAML flow past the limit", "application/yaml", nestedList(limit + 1), true},
		{"YAML compact sequences past the limit", "application/yaml", strings.Repeat("- ", limit+1) + "x\n", true},
		{"YAML aliases add their anchor's depth", "application/yaml", "a: &a " + nestedList(6) + "\nb: [[[[[*a]]]]]\n", true},
		{"YAML aliases within the limit", "application/yaml", "a: &a " + nestedList(3) + "\nb: [[[[*a]]]]\n", false},
		{"YAML alias bomb is measured, not expanded", "application/yaml", aliasBomb(), false},
		{"unreadable YAML is the handler's", "application/yaml", "a: [\n" + strings.Repeat("[", 30), false},
		{"JSON as YAML", "application/apply-patch+yaml", nestedJSON(limit + 1), true},
		{"JSON as YAML within the limit", "application/apply-patch+yaml", nestedJSON(limit), false},
		{"shallow YAML with long lines", "application/yaml", "a:\n  b: " + strings.Repeat("x", 500) + "\n  c: [1, 2]\n", false},
		{"unknown media types pass", "text/plain", nestedList(limit + 1), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Check(tt.mediaType, []byte(tt.body), limit)
			var tooDeep *Error
			if got := errors.As(err, &tooDeep); got != tt.tooDeep {
				t.Fatalf("too deep: got %v (%v), want %v", got, err, tt.tooDeep)
			}
			if err != nil && !strings.Contains(err.Error(), "at most 10 levels") {
				t.Errorf("the message does not name the limit: %v", err)
			}
		})
	}
}

// nestedYAML is a block mapping depth levels deep.
func nestedYAML(depth int) string {
	var b strings.Builder
	for i := 0; i < depth-1; i++ {
		b.WriteString(strings.Repeat(" ", i) + "x:\n")
	}
	b.WriteString(strings.Repeat(" ", depth-1) + "x: y\n")
	return b.String()
}

// aliasBomb is the "billion laughs" shape: each level refers to the one
// before nine times. Expanded it is huge; measured it is nine levels deep.
func aliasBomb() string {
	var b strings.Builder
	b.WriteString("a0: &a0 [x]\n")
	for i := 1; i < 9; i++ {
		b.WriteString("a" + string(rune('0'+i)) + ": &a" + string(rune('0'+i)) + " [")
		for j := 0; j < 9; j++ {
			if j > 0 {
				b.WriteString(",")
			}
			b.WriteString("*a" + string(rune('0'+i-1)))
		}
		b.WriteString("]\n")
	}
	return b.String()
}

func TestCheckCBOR(t *testing.T) {
	const limit = 10
	nested := func(depth int) []byte {
		var v any = 1
		for i := 0; i < depth; i++ {
			v = map[string]any{"x": v}
		}
		em, err := cbor.EncOptions{}.EncMode()
		if err != nil {
			t.Fatal(err)
		}
		data, err := em.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		// As the API server writes it: the self-describing tag first.
		return append([]byte{0xd9, 0xd9, 0xf7}, data...)
	}
	if err := Check("application/cbor", nested(limit), limit); err != nil {
		t.Errorf("at the limit: %v", err)
	}
	if err := Check("application/apply-patch+cbor", nested(limit+1), limit); err == nil {
		t.Errorf("past the limit: no error")
	}
	if err := Check("application/cbor", []byte{0xff, 0x00}, limit); err != nil {
		t.Errorf("malformed CBOR is the handler's: %v", err)
	}
}

func TestCheckProtobuf(t *testing.T) {
	const limit = 10
	encode := func(obj runtime.Object) []byte {
		info, ok := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
		if !ok {
			t.Fatal("no protobuf serializer")
		}
		var buf bytes.Buffer
		if err := scheme.Codecs.EncoderForVersion(info.Serializer, corev1.SchemeGroupVersion).Encode(obj, &buf); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	// A ConfigMap is an object, its metadata, a map entry: three levels.
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", Labels: map[string]string{"a": "b"}}, Data: map[string]string{"k": nestedList(50)}}
	if d := protobufDepth(encode(cm), 100); d != 3 {
		t.Errorf("a ConfigMap measured %d levels, want 3 (a string is not a level, whatever it holds)", d)
	}
	if err := Check("application/vnd.kubernetes.protobuf", encode(cm), 3); err != nil {
		t.Errorf("ConfigMap at the limit: %v", err)
	}
	if err := Check("application/vnd.kubernetes.protobuf", encode(cm), 2); err == nil {
		t.Errorf("ConfigMap past the limit: no error")
	}
	// Messages nested in raw bytes, as a hostile client could send them.
	msg := []byte{0x08, 0x01}
	for i := 0; i < limit+5; i++ {
		msg = append([]byte{0x0a, byte(len(msg))}, msg...)
		if len(msg) > 120 {
			break
		}
	}
	if err := Check("application/vnd.kubernetes.protobuf", msg, limit); err == nil {
		t.Errorf("nested messages past the limit: no error")
	}
	if err := Check("application/vnd.kubernetes.protobuf", []byte("k8s\x00\xff\xff"), limit); err != nil {
		t.Errorf("malformed protobuf is the handler's: %v", err)
	}
}

func TestJSONDepthStopsAtTheLimit(t *testing.T) {
	if d := jsonDepth([]byte(nestedList(10000)), 100); d != 101 {
		t.Errorf("got %d, want 101", d)
	}
}

// BenchmarkCheck shows that checking is linear in the body's size: a 1 MiB
// body of flat fields and one of lists nested to the limit cost about the
// same per byte. The flat bodies spread their 70,000 and 80,000 fields over
// objects of 1,000, within the width limit, so that Check reads them whole.
func BenchmarkCheck(b *testing.B) {
	flatObject := `{` + strings.Repeat(`"k":"vvvvvvvv",`, 999) + `"z":1}`
	flat := []byte(`{"a":[` + strings.Repeat(flatObject+",", 69) + flatObject + `]}`)
	deep := []byte("[" + strings.Repeat(nestedList(Limit-1)+",", 1<<20/(2*Limit)) + "1]")
	yamlBody := []byte(strings.Repeat("- "+nestedList(Limit-2)+"\n", 1<<20/(2*Limit)))
	yamlFlat := []byte("a:\n" + strings.Repeat("- z: 1\n"+strings.Repeat("  k: vvvvvvvv\n", 999), 80))
	for _, bc := range []struct {
		name, mediaType string
		body            []byte
	}{
		{"json-flat", "application/json", flat},
		{"json-deep", "application/json", deep},
		{"yaml-json", "application/apply-patch+yaml", flat},
		{"yaml-flat", "application/yaml", yamlFlat},
		{"yaml-deep", "application/yaml", yamlBody},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(bc.body)))
			b.ReportAllocs()
			for b.Loop() {
				if err := Check(bc.mediaType, bc.body, Limit); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func TestObjectDepth(t *testing.T) {
	const limit = 10
	var v any = "leaf"
	for i := 0; i < limit+5; i++ {
		if i%2 == 0 {
			v = map[string]any{"x": v}
		} else {
			v = []any{1, v}
		}
		// The object's field holds v: one level more.
		want := min(i+2, limit+1)
		if got := ObjectDepth(&unstructured{v}, limit); got != want {
			t.Fatalf("unstructured %d deep: got %d, want %d", i+2, got, want)
		}
		if got := ObjectDepth(&struct {
			X any `json:"x"`
		}{v}, limit); got != want {
			t.Fatalf("typed %d deep: got %d, want %d", i+2, got, want)
		}
	}
	withManagedFields := map[string]any{"metadata": map[string]any{"name": "a", "managedFields": nestedValue(limit + 5)}, "x": 1}
	if got := ObjectDepth(&unstructured{withManagedFields}, limit); got != 2 {
		t.Errorf("managed fields counted: got %d, want 2", got)
	}
}

// nestedValue is depth maps within one another.
func nestedValue(depth int) any {
	var v any = 1
	for i := 0; i < depth; i++ {
		v = map[string]any{"x": v}
	}
	return v
}

// unstructured has the method unstructured.Unstructured has; its content is
// an object whose field "x" holds the value, or the value itself when it is
// an object.
type unstructured struct{ content any }

func (u *unstructured) UnstructuredContent() map[string]any {
	if m, ok := u.content.(map[string]any); ok && m["metadata"] != nil {
		return m
	}
	return map[string]any{"x": u.content}
}

func TestCheckWidth(t *testing.T) {
	keys := func(n int, format string, sep string) string {
		parts := make([]string, n)
		for i := range parts {
			parts[i] = fmt.Sprintf(format, i)
		}
		return strings.Join(parts, sep)
	}
	wideJSON := `{"data":{` + keys(Width+1, `"k%06d":""`, ",") + `}}`
	// One member fewer than the width: the object around it adds its own.
	atWidthJSON := `{"data":{` + keys(Width-1, `"k%06d":""`, ",") + `}}`
	wideList := `{"items":[` + keys(3*Width, `"k%06d"`, ",") + `]}`
	for _, tt := range []struct {
		name, mediaType, body string
		wide                  bool
	}{
		{"JSON object past the width", "application/json", wideJSON, true},
		{"JSON object at the width", "application/json", atWidthJSON, false},
		{"long lists are not wide", "application/json", wideList, false},
		{"colons in strings do not count", "application/json", `{"a":"` + strings.Repeat(":", 3*Width) + `"}`, false},
		{"merge patch", "application/merge-patch+json", wideJSON, true},
		{"JSON patch value", "application/json-patch+json", `[{"op":"add","path":"/x","value":` + wideJSON + `}]`, true},
		{"JSON as YAML", "application/apply-patch+yaml", wideJSON, true},
		{"several large objects add up", "application/json", `{"a":{` + keys(3*Width/4, `"k%06d":""`, ",") + `},"b":{` + keys(3*Width/4, `"k%06d":""`, ",") + `}}`, true},
		{"many small objects do not", "application/json", "[" + strings.Repeat(`{"a":1,"b":2,"c":3},`, 50000) + "1]", false},
		{"block YAML past the width", "application/yaml", "data:\n" + keys(Width+1, "  k%06d: v", "\n") + "\n", true},
		{"block YAML at the width", "application/yaml", "data:\n" + keys(Width-1, "  k%06d: v", "\n") + "\n", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := Check(tt.mediaType, []byte(tt.body), Limit)
			var e *Error
			if got := errors.As(err, &e) && e.Wide; got != tt.wide {
				t.Fatalf("wide: got %v (%v), want %v", got, err, tt.wide)
			}
		})
	}
	cm := &corev1.ConfigMap{Data: map[string]string{}}
	for i := 0; i <= Width; i++ {
		cm.Data[fmt.Sprintf("k%06d", i)] = ""
	}
	info, _ := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
	var buf bytes.Buffer
	if err := scheme.Codecs.EncoderForVersion(info.Serializer, corev1.SchemeGroupVersion).Encode(cm, &buf); err != nil {
		t.Fatal(err)
	}
	if err := Check("application/vnd.kubernetes.protobuf", buf.Bytes(), Limit); err == nil {
		t.Errorf("a protobuf ConfigMap past the width: no error")
	}
	// In protobuf a map's entries are fields of the message beside its
	// others (metadata here, and its own fields), so the limit comes a few
	// keys sooner.
	for i := 0; i < 10; i++ {
		delete(cm.Data, fmt.Sprintf("k%06d", i))
	}
	buf.Reset()
	if err := scheme.Codecs.EncoderForVersion(info.Serializer, corev1.SchemeGroupVersion).Encode(cm, &buf); err != nil {
		t.Fatal(err)
	}
	if err := Check("application/vnd.kubernetes.protobuf", buf.Bytes(), Limit); err != nil {
		t.Errorf("a protobuf ConfigMap at the width: %v", err)
	}
	// A long string reads as a message of varints; it is one value.
	big := &corev1.ConfigMap{Data: map[string]string{"d": strings.Repeat("x", 900<<10)}}
	buf.Reset()
	if err := scheme.Codecs.EncoderForVersion(info.Serializer, corev1.SchemeGroupVersion).Encode(big, &buf); err != nil {
		t.Fatal(err)
	}
	if err := Check("application/vnd.kubernetes.protobuf", buf.Bytes(), Limit); err != nil {
		t.Errorf("a protobuf ConfigMap of one long value: %v", err)
	}
}

func TestCheckKeyLength(t *testing.T) {
	long, atLimit := strings.Repeat("k", KeyLength+1), strings.Repeat("k", KeyLength)
	cborOf := func(v any) string {
		b, err := cbor.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	// An indefinite-length text string of two chunks, as a map's key.
	chunked := func(n int) string {
		return "\xd9\xd9\xf7\xa1\x7f" + cborOf(strings.Repeat("k", n/2)) + cborOf(strings.Repeat("k", n-n/2)) + "\xff\x01"
	}
	for _, tt := range []struct {
		name, mediaType, body string
		long                  bool
	}{
		{"JSON key past the limit", "application/json", `{"data":{"` + long + `":"v"}}`, true},
		{"JSON key at the limit", "application/json", `{"data":{"` + atLimit + `":"v"}}`, false},
		{"JSON value past the limit is no key", "application/json", `{"data":{"k":"` + long + `"}}`, false},
		{"JSON list items are no keys", "application/json", `{"a":["` + long + `"]}`, false},
		{"escapes count as written", "application/json", `{"` + strings.Repeat(`\u0041`, KeyLength/6+1) + `":1}`, true},
		{"merge patch", "application/merge-patch+json", `{"data":{"` + long + `":null}}`, true},
		{"JSON patch path", "application/json-patch+json", `[{"op":"add","path":"/data/` + long + `","value":"v"}]`, true},
		{"JSON patch from", "application/json-patch+json", `[{"op":"copy","from":"/data/` + long + `","path":"/data/a"}]`, true},
		{"JSON patch path at the limit", "application/json-patch+json", `[{"op":"add","path":"/data/` + atLimit + `","value":"v"}]`, false},
		{"JSON as YAML", "application/apply-patch+yaml", `{"data":{"` + long + `":"v"}}`, true},
		{"YAML explicit key", "application/yaml", "data:\n  ? " + long + "\n  : v\n", true},
		{"YAML explicit key in flow", "application/yaml", "data: {? " + long + " : v}\n", true},
		{"YAML explicit key at the limit", "application/yaml", "data:\n  ? " + atLimit + "\n  : v\n", false},
		{"YAML alias to a long key", "application/yaml", "a: &a " + long + "\ndata:\n  *a : v\n", true},
		{"YAML long value", "application/yaml", "data:\n  k: " + long + "\n  q: what?\n", false},
		{"CBOR key", "application/cbor", "\xd9\xd9\xf7" + cborOf(map[string]any{"data": map[string]any{long: "v"}}), true},
		{"CBOR byte string key", "application/cbor", "\xa1\x5a" + string(binary.BigEndian.AppendUint32(nil, uint32(len(long)))) + long + "\x01", true},
		{"CBOR key at the limit", "application/cbor", cborOf(map[string]any{"data": map[string]any{atLimit: "v"}}), false},
		{"CBOR value", "application/cbor", cborOf(map[string]any{"data": []any{long, map[string]any{"k": long}}}), false},
		{"CBOR chunked key", "application/cbor", chunked(KeyLength + 1), true},
		{"CBOR chunked key at the limit", "application/cbor", chunked(KeyLength), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := Check(tt.mediaType, []byte(tt.body), Limit)
			var e *Error
			if got := errors.As(err, &e) && e.LongKey; got != tt.long {
				t.Fatalf("long key: got %v (%v), want %v", got, err, tt.long)
			}
			if tt.long && !strings.Contains(err.Error(), fmt.Sprintf("at most %d bytes", KeyLength)) {
				t.Errorf("the message does not name the limit: %v", err)
			}
		})
	}
}
