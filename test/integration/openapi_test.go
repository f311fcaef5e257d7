package integration

import (
	"context"
	"net/http"
	"strings"
	"testing"

	openapi_v3 "github.com/google/gnostic-models/openapiv3"
	"google.golang.org/protobuf/proto"
	"k8s.io/client-go/discovery"
)

// TestNativeOpenAPI: the native API groups' OpenAPI documents, which
// lazyopenapi builds on the first request instead of at start, are what
// client-go's OpenAPI v3 client and /openapi/v2 readers get, in JSON and
// protobuf; two servers of one binary list a group-version at one hash, so
// clients' caches survive a restart or another replica, and a stale hash
// redirects to the current one.
func TestNativeOpenAPI(t *testing.T) {
	t.Parallel()
	a, b := startGeneric(t), startGeneric(t)
	ctx := context.Background()

	paths, err := discovery.NewDiscoveryClientForConfigOrDie(a.AdminConfig).OpenAPIV3().Paths()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"api/v1", "apis/rbac.authorization.k8s.io/v1", "apis/coordination.k8s.io/v1", "apis/apiextensions.k8s.io/v1"} {
		if _, ok := paths[p]; !ok {
			t.Fatalf("/openapi/v3 does not list %s", p)
		}
	}
	doc, err := paths["api/v1"].Schema("application/json")
	if err != nil || !strings.Contains(string(doc), `"io.k8s.api.core.v1.ConfigMap"`) {
		t.Fatalf("api/v1's document: %v, %.200s", err, doc)
	}
	pb, err := paths["apis/rbac.authorization.k8s.io/v1"].Schema("application/com.github.proto-openapi.spec.v3@v1.0+protobuf")
	var parsed openapi_v3.Document
	if err != nil || proto.Unmarshal(pb, &parsed) != nil || parsed.GetComponents() == nil {
		t.Fatalf("rbac's document as protobuf: %v, %d bytes", err, len(pb))
	}

	urlOf := func(cfgHost string, c discovery.DiscoveryInterface) string {
		t.Helper()
		body, err := c.RESTClient().Get().AbsPath("/openapi/v3").DoRaw(ctx)
		if err != nil {
			t.Fatalf("%s/openapi/v3: %v", cfgHost, err)
		}
		i := strings.Index(string(body), `"api/v1":{"serverRelativeURL":"`)
		if i < 0 {
			t.Fatalf("%s/openapi/v3 lists no api/v1: %.300s", cfgHost, body)
		}
		rest := string(body)[i+len(`"api/v1":{"serverRelativeURL":"`):]
		return rest[:strings.Index(rest, `"`)]
	}
	first, second := urlOf(a.AdminConfig.Host, a.Client.Discovery()), urlOf(b.AdminConfig.Host, b.Client.Discovery())
	if first != second || !strings.Contains(first, "?hash=") {
		t.Fatalf("api/v1 on two servers of one binary: %q and %q, want one URL with a hash", first, second)
	}

	raw := rawHTTP(t, a.AdminConfig)
	host := strings.TrimSuffix(a.AdminConfig.Host, "/")
	resp, err := raw.Get(host + "/openapi/v3/api/v1?hash=0123")
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusMovedPermanently || resp.Header.Get("Location") != first {
		t.Fatalf("a stale hash: %d to %q, want 301 to %q", resp.StatusCode, resp.Header.Get("Location"), first)
	}

	v2, err := a.Client.Discovery().RESTClient().Get().AbsPath("/openapi/v2").SetHeader("Accept", "application/json").DoRaw(ctx)
	if err != nil || !strings.Contains(string(v2), `"io.k8s.api.core.v1.ConfigMap"`) || !strings.Contains(string(v2), `"swagger":"2.0"`) {
		t.Fatalf("/openapi/v2: %v, %.200s", err, v2)
	}
}
