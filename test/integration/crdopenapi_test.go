package integration

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	openapi_v3 "github.com/google/gnostic-models/openapiv3"
	"google.golang.org/protobuf/proto"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/kube-openapi/pkg/handler3"

	"github.com/gcp-project/gcp/pkg/testserver"

	"github.com/gcp-project/gcp/test/poll"
)

// TestCRDOpenAPIV3: a custom resource's OpenAPI v3 document (built on
// request by crdopenapi) is listed in /openapi/v3 once its CRD is
// established, is what client-go's OpenAPI v3 client reads, comes as JSON
// or protobuf, moves to a new hash when the CRD's schema changes (the old
// hash redirects to it), and goes with the CRD. The server's own
// apiextensions.k8s.io/v1 document is served as before.
func TestCRDOpenAPIV3(t *testing.T) {
	t.Parallel()
	s := startGeneric(t)
	ctx := context.Background()
	crds := apiextensionsclient.NewForConfigOrDie(s.AdminConfig).ApiextensionsV1().CustomResourceDefinitions()
	const path = "apis/openapi.example.com/v1"

	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "gizmos.openapi.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "openapi.example.com",
			Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "gizmos", Kind: "Gizmo"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
							"size": {Type: "integer"},
						}},
					},
				}},
			}},
		},
	}
	if _, err := crds.Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	first := waitOpenAPIV3Path(t, s, path, "")
	gizmo := openAPIV3Gizmo(t, s.AdminConfig, path)
	if got := fmt.Sprint(gizmo["properties"]); !strings.Contains(got, "size") || strings.Contains(got, "colour") {
		t.Fatalf("Gizmo schema properties: %s", got)
	}

	raw := rawHTTP(t, s.AdminConfig)
	host := strings.TrimSuffix(s.AdminConfig.Host, "/")
	get := func(url, accept string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, host+url, nil)
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		resp, err := raw.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = resp.Body.Close() })
		return resp
	}

	// JSON at its hash, with the hash as its ETag and immutable caching.
	resp := get(first, "application/json")
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" ||
		resp.Header.Get("Cache-Control") != "public, immutable" || !strings.Contains(first, strings.Trim(resp.Header.Get("Etag"), `"`)) {
		t.Fatalf("GET %s: %d %v", first, resp.StatusCode, resp.Header)
	}
	if !json.Valid(body) || !strings.Contains(string(body), "com.example.openapi.v1.Gizmo") {
		t.Fatalf("GET %s: not the Gizmo document: %.200s", first, body)
	}

	// Protobuf, as kubectl may ask for it.
	resp = get(first, "application/com.github.proto-openapi.spec.v3.v1.0+protobuf")
	body, _ = io.ReadAll(resp.Body)
	var doc openapi_v3.Document
	if resp.StatusCode != http.StatusOK || proto.Unmarshal(body, &doc) != nil || doc.GetComponents() == nil {
		t.Fatalf("GET %s as protobuf: %d %v, %d bytes", first, resp.StatusCode, resp.Header, len(body))
	}

	// Neither: 406.
	if resp := get(first, "text/html"); resp.StatusCode != http.StatusNotAcceptable {
		t.Fatalf("GET %s as text/html: %d, want 406", first, resp.StatusCode)
	}

	// A new schema is a new hash; the old one redirects to it.
	got, err := crds.Get(ctx, crd.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["colour"] = apiextensionsv1.JSONSchemaProps{Type: "string"}
	if _, err := crds.Update(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	second := waitOpenAPIV3Path(t, s, path, first)
	if got := fmt.Sprint(openAPIV3Gizmo(t, s.AdminConfig, path)["properties"]); !strings.Contains(got, "colour") {
		t.Fatalf("Gizmo schema properties after the update: %s", got)
	}
	if resp := get(first, "application/json"); resp.StatusCode != http.StatusMovedPermanently || resp.Header.Get("Location") != second {
		t.Fatalf("GET the old hash: %d to %q, want 301 to %q", resp.StatusCode, resp.Header.Get("Location"), second)
	}

	// Once CRDs are quiet, the document is prebuilt and sent gzipped to a
	// client that takes gzip: the same document.
	plain, _ := io.ReadAll(get(second, "application/json").Body)
	poll.Until(t, 200*time.Millisecond, time.Minute, func() error {
		req, _ := http.NewRequest(http.MethodGet, host+second, nil)
		req.Header.Set("Accept", "application/json")
		req.Header.Set("Accept-Encoding", "gzip")
		resp, err := raw.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.Header.Get("Content-Encoding") != "gzip" {
			return fmt.Errorf("GET %s with gzip: not gzipped yet (%d)", second, resp.StatusCode)
		}
		zr, err := gzip.NewReader(resp.Body)
		if err != nil {
			return err
		}
		unzipped, err := io.ReadAll(zr)
		if err != nil {
			return err
		}
		if !bytes.Equal(unzipped, plain) {
			t.Fatalf("the prebuilt document differs from the one built on request")
		}
		return nil
	})

	// The server's own group-version is served as before.
	resp = get("/openapi/v3/apis/apiextensions.k8s.io/v1", "application/json")
	body, _ = io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "CustomResourceDefinition") {
		t.Fatalf("GET apiextensions.k8s.io/v1's document: %d %.200s", resp.StatusCode, body)
	}

	// The document goes with its CRD. The schema change gave the gizmos
	// new storage, whose watch cache answers an unpaginated list 429
	// "storage is (re)initializing" until it has loaded. Upstream's CRD
	// finalizer lists that way; should its list meet the 429 and a retry
	// then a conflict, it waits for the informer's 5-minute resync
	// (k8s.io/apiextensions-apiserver's crd_finalizer.go; seen once in CI
	// here, and operator-framework/operator-controller#1437). An
	// unpaginated list, which client-go retries on 429, waits for the
	// cache first.
	gizmos := dynamic.NewForConfigOrDie(s.AdminConfig).Resource(schema.GroupVersionResource{Group: "openapi.example.com", Version: "v1", Resource: "gizmos"})
	if _, err := gizmos.List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := crds.Delete(ctx, crd.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitOpenAPIV3Path(t, s, path, second)
	if resp := get("/openapi/v3/"+path, "application/json"); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("GET %s after the CRD went: %d, want 404", path, resp.StatusCode)
	}
}

// waitOpenAPIV3Path waits until /openapi/v3 lists path at a URL other than
// old (old "" waits for it to be listed; a listed old waits for it to
// change or go) and returns that URL ("" when path went).
func waitOpenAPIV3Path(t *testing.T, s *testserver.Server, path, old string) string {
	t.Helper()
	var url string
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
		body, err := s.Client.Discovery().RESTClient().Get().AbsPath("/openapi/v3").DoRaw(ctx)
		if err != nil {
			return false, nil
		}
		var d handler3.OpenAPIV3Discovery
		if err := json.Unmarshal(body, &d); err != nil {
			return false, err
		}
		gv, listed := d.Paths[path]
		url = gv.ServerRelativeURL
		if old == "" {
			return listed, nil
		}
		return url != old, nil
	})
	if err != nil {
		t.Fatalf("waiting for %s in /openapi/v3 to change from %q: %v (last %q)", path, old, err, url)
	}
	return url
}

// openAPIV3Gizmo reads path's document through client-go's OpenAPI v3
// client (as kubectl does) and returns the Gizmo schema.
func openAPIV3Gizmo(t *testing.T, cfg *rest.Config, path string) map[string]any {
	t.Helper()
	gvs, err := discovery.NewDiscoveryClientForConfigOrDie(cfg).OpenAPIV3().Paths()
	if err != nil {
		t.Fatal(err)
	}
	gv, ok := gvs[path]
	if !ok {
		t.Fatalf("client-go's OpenAPI v3 paths have no %s", path)
	}
	body, err := gv.Schema("application/json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Components struct {
			Schemas map[string]map[string]any `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatal(err)
	}
	gizmo, ok := doc.Components.Schemas["com.example.openapi.v1.Gizmo"]
	if !ok {
		t.Fatalf("no com.example.openapi.v1.Gizmo in %s's document", path)
	}
	spec, _ := gizmo["properties"].(map[string]any)["spec"].(map[string]any)
	if spec == nil {
		return map[string]any{}
	}
	return spec
}

// rawHTTP is an HTTP client with cfg's credentials that does not follow
// redirects.
func rawHTTP(t *testing.T, cfg *rest.Config) *http.Client {
	t.Helper()
	c, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return c
}
