package integration

import (
	"context"
	"net/http"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// TestProtobufBodyForACustomResource: custom resources have no protobuf
// form; a protobuf body for one is 415 (apiextensions-apiserver's decoder
// panicked on it and the client got no answer), nothing is stored, and
// protobuf bodies for native resources still work.
func TestProtobufBodyForACustomResource(t *testing.T) {
	t.Parallel()
	s := startGeneric(t)
	createCRD(t, s, "protobody.example.com", "things", "Thing")
	const things = "/apis/protobody.example.com/v1/namespaces/default/things"
	body := []byte("k8s\x00\x0a\x04\x0a\x02v1\x12\x05Thing")
	for _, method := range []string{http.MethodPost, http.MethodPut} {
		path := things
		if method == http.MethodPut {
			path += "/x"
		}
		code, out := rawRequest(t, s.AdminConfig, method, path, runtime.ContentTypeProtobuf, body)
		if code != http.StatusUnsupportedMediaType || !strings.Contains(out, "send application/json") {
			t.Errorf("%s %s with a protobuf body: want 415, got %d: %.300s", method, path, code, out)
		}
	}
	if code, out := rawRequest(t, s.AdminConfig, http.MethodGet, things, "", nil); code != http.StatusOK || strings.Contains(out, `"name"`) {
		t.Errorf("things after refused protobuf bodies: %d %.300s", code, out)
	}

	cfg := rest.CopyConfig(s.AdminConfig)
	cfg.ContentType = runtime.ContentTypeProtobuf
	client := kubernetes.NewForConfigOrDie(cfg)
	if _, err := client.CoreV1().ConfigMaps("default").Create(context.Background(),
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "protobuf"}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("protobuf create of a configmap: %v", err)
	}
}
