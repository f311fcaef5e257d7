package integration

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

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
