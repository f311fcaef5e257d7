package lazyopenapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	restful "github.com/emicklei/go-restful/v3"
	corev1 "k8s.io/api/core/v1"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/mux"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/kube-openapi/pkg/handler3"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/gcp-project/gcp/pkg/controlplane/openapi"
)

// configMapRoutes is a web service at root serving ConfigMap reads, and,
// with write, writes too.
func configMapRoutes(root string, write bool) *restful.WebService {
	ws := new(restful.WebService).Path(root).Produces("application/json").Consumes("application/json")
	noop := func(*restful.Request, *restful.Response) {}
	ws.Route(ws.GET("/namespaces/{namespace}/configmaps/{name}").To(noop).Operation("readCoreV1NamespacedConfigMap").
		Param(ws.PathParameter("namespace", "")).Param(ws.PathParameter("name", "")).
		Returns(http.StatusOK, "OK", corev1.ConfigMap{}).Writes(corev1.ConfigMap{}))
	if write {
		ws.Route(ws.PUT("/namespaces/{namespace}/configmaps/{name}").To(noop).Operation("replaceCoreV1NamespacedConfigMap").
			Param(ws.PathParameter("namespace", "")).Param(ws.PathParameter("name", "")).
			Reads(corev1.ConfigMap{}).Returns(http.StatusOK, "OK", corev1.ConfigMap{}).Writes(corev1.ConfigMap{}))
	}
	return ws
}

// server installs both documents of routes on a mux and counts the
// documents built (each build names every route's operation).
func server(t *testing.T, wss ...*restful.WebService) (http.Handler, *atomic.Int32) {
	t.Helper()
	namer := openapi.NewDefinitionNamer(scheme.Scheme)
	c := restful.NewContainer()
	for _, ws := range wss {
		c.Add(ws)
	}
	m := mux.NewPathRecorderMux("test")
	v2, v3 := genericapiserver.DefaultOpenAPIConfig(openapi.GetOpenAPIDefinitions, namer), genericapiserver.DefaultOpenAPIV3Config(openapi.GetOpenAPIDefinitions, namer)
	v2.Info.Version, v3.Info.Version = "v0", "v0"
	var builds atomic.Int32
	v2.PostProcessSpec = func(s *spec.Swagger) (*spec.Swagger, error) {
		builds.Add(1)
		return s, nil
	}
	v3.PostProcessSpec = func(s *spec3.OpenAPI) (*spec3.OpenAPI, error) {
		builds.Add(1)
		return s, nil
	}
	InstallV2(c, v2, m)
	InstallV3(c, v3, m)
	return m, &builds
}

func get(t *testing.T, h http.Handler, url, accept string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, url, nil)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func discover(t *testing.T, h http.Handler) map[string]string {
	t.Helper()
	rec := get(t, h, V3Path, "")
	var d handler3.OpenAPIV3Discovery
	if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &d) != nil {
		t.Fatalf("GET %s: %d %s", V3Path, rec.Code, rec.Body)
	}
	urls := map[string]string{}
	for p, gv := range d.Paths {
		urls[p] = gv.ServerRelativeURL
	}
	return urls
}

func TestDocumentsAreBuiltWhenFirstAskedFor(t *testing.T) {
	h, builds := server(t, configMapRoutes("/api/v1", true))

	urls := discover(t, h)
	if len(urls) != 1 || !strings.HasPrefix(urls["api/v1"], V3Path+"/api/v1?hash=") {
		t.Fatalf("discovery: %v", urls)
	}
	if n := builds.Load(); n != 0 {
		t.Fatalf("discovery built %d documents; it should need none", n)
	}

	rec := get(t, h, urls["api/v1"], "application/json")
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "io.k8s.api.core.v1.ConfigMap") {
		t.Fatalf("GET %s: %d %.200s", urls["api/v1"], rec.Code, rec.Body)
	}
	if rec.Header().Get("Cache-Control") != "public, immutable" {
		t.Fatalf("GET %s: Cache-Control %q, want immutable at the discovered hash", urls["api/v1"], rec.Header().Get("Cache-Control"))
	}
	v3Builds := builds.Load()
	if v3Builds == 0 {
		t.Fatal("the v3 document was served without being built")
	}
	if rec := get(t, h, urls["api/v1"], "application/json"); rec.Code != http.StatusOK || builds.Load() != v3Builds {
		t.Fatalf("second GET: %d, %d more builds; the document should be kept", rec.Code, builds.Load()-v3Builds)
	}

	rec = get(t, h, V2Path, "application/json")
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"swagger":"2.0"`) || !strings.Contains(rec.Body.String(), "io.k8s.api.core.v1.ConfigMap") {
		t.Fatalf("GET %s: %d %.200s", V2Path, rec.Code, rec.Body)
	}
	if builds.Load() == v3Builds {
		t.Fatal("the v2 document was served without being built")
	}
}

func TestGroupVersionRequests(t *testing.T) {
	h, _ := server(t, configMapRoutes("/api/v1", true))
	url := discover(t, h)["api/v1"]
	path := strings.SplitN(url, "?", 2)[0]

	// Without a hash: the document, not marked immutable.
	if rec := get(t, h, path, ""); rec.Code != http.StatusOK || rec.Header().Get("Cache-Control") != "" {
		t.Fatalf("GET %s: %d %v", path, rec.Code, rec.Header())
	}
	// Another hash: redirected to this one.
	if rec := get(t, h, path+"?hash=0123", ""); rec.Code != http.StatusMovedPermanently || rec.Header().Get("Location") != url {
		t.Fatalf("GET with a stale hash: %d to %q, want 301 to %q", rec.Code, rec.Header().Get("Location"), url)
	}
	// Protobuf, as kubectl may ask for it.
	const pb = "application/com.github.proto-openapi.spec.v3.v1.0+protobuf"
	if rec := get(t, h, url, pb); rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != pb || rec.Body.Len() == 0 {
		t.Fatalf("GET as protobuf: %d %v", rec.Code, rec.Header())
	}
	// What cannot be served: 406; what is not there: 404.
	for _, accept := range []string{"text/html", ";;"} {
		if rec := get(t, h, url, accept); rec.Code != http.StatusNotAcceptable {
			t.Fatalf("GET with Accept %q: %d, want 406", accept, rec.Code)
		}
	}
	if rec := get(t, h, V3Path+"/apis/nothing.example.com/v1", ""); rec.Code != http.StatusNotFound {
		t.Fatalf("GET an unknown group-version: %d, want 404", rec.Code)
	}
}

func TestHashNamesTheRoutes(t *testing.T) {
	a, _ := server(t, configMapRoutes("/api/v1", true))
	b, _ := server(t, configMapRoutes("/api/v1", true))
	readOnly, _ := server(t, configMapRoutes("/api/v1", false))

	same, other := discover(t, a)["api/v1"], discover(t, b)["api/v1"]
	if same != other {
		t.Fatalf("two servers of one binary and the same routes: %s and %s, want one hash", same, other)
	}
	if fewer := discover(t, readOnly)["api/v1"]; fewer == same {
		t.Fatalf("servers with different routes share the hash %s", same)
	}
	if h := hash("another binary", "api/v1", []*restful.WebService{configMapRoutes("/api/v1", true)}); strings.HasSuffix(same, h) {
		t.Fatal("another binary gives the same hash")
	}
	if id, err := goBuildID(); err != nil || id == "" {
		t.Fatalf("the test binary's Go build ID: %q, %v", id, err)
	}
}
