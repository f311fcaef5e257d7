package integration

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/fxamacker/cbor/v2"

	"github.com/gcp-project/gcp/pkg/controlplane/nesting"
)

// keysJSON is a JSON object of n keys named prefix000000 on, each "".
func keysJSON(prefix string, n int) string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf(`"%s%06d":""`, prefix, i)
	}
	return "{" + strings.Join(keys, ",") + "}"
}

// TestNestingWidthAcrossWrites: each body stays under nesting.Width, but
// merge patches that each add 15,000 keys to one map would grow it past
// the limit over two requests; the write that would pass it is refused
// with a 400 naming the limit, and the object stays as it was, for a
// ConfigMap (a typed object) and a custom resource alike. Issue 28: a
// ConfigMap grown so to 60,000 keys cost seconds of CPU on every later
// write.
func TestNestingWidthAcrossWrites(t *testing.T) {
	t.Parallel()
	s := startGeneric(t)
	gvr := createCRD(t, s, "width.example.com", "things", "Thing")
	const (
		cm     = "/api/v1/namespaces/default/configmaps"
		things = "/apis/width.example.com/v1/namespaces/default/things"
	)
	if code, out := rawRequest(t, s.AdminConfig, http.MethodPost, cm, "application/json", []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"grow"}}`)); code != http.StatusCreated {
		t.Fatalf("creating a configmap: %d %.300s", code, out)
	}
	if code, out := rawRequest(t, s.AdminConfig, http.MethodPost, things, "application/json", []byte(`{"apiVersion":"width.example.com/v1","kind":"Thing","metadata":{"name":"grow"},"x":{}}`)); code != http.StatusCreated {
		t.Fatalf("creating a thing: %d %.300s", code, out)
	}
	const batch = 15000
	for _, c := range []struct{ name, path, field string }{
		{"configmap", cm + "/grow", "data"},
		{"custom resource", things + "/grow", "x"},
	} {
		t.Run(c.name, func(t *testing.T) {
			for i := range 4 {
				patch := `{"` + c.field + `":` + keysJSON(fmt.Sprintf("p%d-", i), batch) + `}`
				start := time.Now()
				code, out := rawRequest(t, s.AdminConfig, http.MethodPatch, c.path, "application/merge-patch+json", []byte(patch))
				t.Logf("patch %d: %d in %v", i, code, time.Since(start))
				if i == 0 {
					if code != http.StatusOK {
						t.Fatalf("the first %d keys: %d %.300s", batch, code, out)
					}
					continue
				}
				if code != http.StatusBadRequest || !strings.Contains(out, fmt.Sprintf("at most %d keys", nesting.Width)) {
					t.Errorf("patch %d, to %d keys: want 400 naming the width, got %d: %.300s", i, (i+1)*batch, code, out)
				}
			}
		})
	}

	// Both objects are as the first patch left them.
	got, err := s.Client.CoreV1().ConfigMaps("default").Get(context.Background(), "grow", metav1.GetOptions{})
	if err != nil || len(got.Data) != batch {
		t.Errorf("the configmap after refused patches: %d keys, %v", len(got.Data), err)
	}
	thing, err := dynamic.NewForConfigOrDie(s.AdminConfig).Resource(gvr).Namespace("default").Get(context.Background(), "grow", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if x, _ := thing.Object["x"].(map[string]any); len(x) != batch {
		t.Errorf("the thing after refused patches: %d keys", len(x))
	}
}

// TestNestingLongKeys: a member name (a map key) longer than
// nesting.KeyLength is refused with a 400 naming the limit, before the
// work that grows with it, in JSON, the patches, YAML and CBOR, for a
// ConfigMap and a custom resource; a key at the limit is served. Issue 28:
// one key 1–2 MB long cost seconds of CPU.
func TestNestingLongKeys(t *testing.T) {
	t.Parallel()
	s := startGeneric(t)
	createCRD(t, s, "longkeys.example.com", "things", "Thing")
	const (
		cm     = "/api/v1/namespaces/default/configmaps"
		things = "/apis/longkeys.example.com/v1/namespaces/default/things"
	)
	long := strings.Repeat("k", 2<<20)
	if code, out := rawRequest(t, s.AdminConfig, http.MethodPost, cm, "application/json", []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"keep"},"data":{"k":"v"}}`)); code != http.StatusCreated {
		t.Fatalf("creating a configmap: %d %.300s", code, out)
	}
	if code, out := rawRequest(t, s.AdminConfig, http.MethodPost, things, "application/json", []byte(`{"apiVersion":"longkeys.example.com/v1","kind":"Thing","metadata":{"name":"keep"},"x":{}}`)); code != http.StatusCreated {
		t.Fatalf("creating a thing: %d %.300s", code, out)
	}
	cases := []struct{ name, method, path, contentType, body string }{
		{"configmap key", http.MethodPost, cm, "application/json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"long"},"data":{"` + long + `":"v"}}`},
		{"label key", http.MethodPost, cm, "application/json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"long","labels":{"` + long + `":"v"}}}`},
		{"merge patch", http.MethodPatch, cm + "/keep", "application/merge-patch+json", `{"data":{"` + long + `":"v"}}`},
		{"strategic merge patch", http.MethodPatch, cm + "/keep", "application/strategic-merge-patch+json", `{"data":{"` + long + `":"v"}}`},
		{"JSON patch path", http.MethodPatch, cm + "/keep", "application/json-patch+json", `[{"op":"add","path":"/data/` + long + `","value":"v"}]`},
		{"YAML", http.MethodPost, cm, "application/yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: long}\ndata:\n  ? " + long + "\n  : v\n"},
		{"protobuf", http.MethodPost, cm, runtime.ContentTypeProtobuf, protobufConfigMap(t, long)},
		{"CBOR", http.MethodPost, things, "application/cbor", cborThing(long)},
		{"custom resource", http.MethodPost, things, "application/json", `{"apiVersion":"longkeys.example.com/v1","kind":"Thing","metadata":{"name":"long"},"x":{"` + long + `":1}}`},
		{"custom resource merge patch", http.MethodPatch, things + "/keep", "application/merge-patch+json", `{"x":{"` + long + `":1}}`},
		{"server-side apply", http.MethodPatch, things + "/keep?fieldManager=m", "application/apply-patch+yaml", `{"apiVersion":"longkeys.example.com/v1","kind":"Thing","metadata":{"name":"keep"},"x":{"` + long + `":1}}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			code, out := rawRequest(t, s.AdminConfig, c.method, c.path, c.contentType, []byte(c.body))
			t.Logf("%d in %v", code, time.Since(start))
			if code != http.StatusBadRequest || !strings.Contains(out, fmt.Sprintf("at most %d bytes", nesting.KeyLength)) {
				t.Errorf("want 400 naming the limit, got %d: %.300s", code, out)
			}
		})
	}
	// At the limit a key is the validation's to judge: a custom resource
	// without a schema for it stores it.
	atLimit := strings.Repeat("k", nesting.KeyLength)
	if code, out := rawRequest(t, s.AdminConfig, http.MethodPatch, things+"/keep", "application/merge-patch+json", []byte(`{"x":{"`+atLimit+`":1}}`)); code != http.StatusOK {
		t.Errorf("a key at the limit: %d %.300s", code, out)
	}
}

// cborThing is a Thing whose field x has one key, in CBOR.
func cborThing(key string) string {
	body, err := cbor.Marshal(map[string]any{"apiVersion": "longkeys.example.com/v1", "kind": "Thing", "metadata": map[string]any{"name": "long"}, "x": map[string]any{key: 1}})
	if err != nil {
		panic(err)
	}
	return "\xd9\xd9\xf7" + string(body)
}

// protobufConfigMap is a ConfigMap whose data has one key, in protobuf.
func protobufConfigMap(t *testing.T, key string) string {
	cm := &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: "long"},
		Data:       map[string]string{key: "v"},
	}
	info, ok := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
	if !ok {
		t.Fatal("no protobuf serializer")
	}
	var buf bytes.Buffer
	if err := scheme.Codecs.EncoderForVersion(info.Serializer, corev1.SchemeGroupVersion).Encode(cm, &buf); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}
