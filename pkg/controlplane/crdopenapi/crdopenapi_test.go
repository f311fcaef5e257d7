package crdopenapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	listers "k8s.io/apiextensions-apiserver/pkg/client/listers/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/kube-openapi/pkg/handler3"
)

func crd(name, group string, generation int64, established bool, versions ...string) *apiextensionsv1.CustomResourceDefinition {
	c := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), Generation: generation},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group, Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: strings.Split(name, ".")[0], Kind: "Thing", ListKind: "ThingList"},
		},
	}
	for _, v := range versions {
		c.Spec.Versions = append(c.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{
			Name: v, Served: true, Storage: v == versions[0],
			Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object"}},
		})
	}
	if established {
		c.Status.Conditions = []apiextensionsv1.CustomResourceDefinitionCondition{{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue}}
	}
	return c
}

func newHandler(t *testing.T, crds ...*apiextensionsv1.CustomResourceDefinition) (*Handler, cache.Indexer) {
	t.Helper()
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, c := range crds {
		if err := indexer.Add(c); err != nil {
			t.Fatal(err)
		}
	}
	h, err := New(handler3.NewOpenAPIService(), listers.NewCustomResourceDefinitionLister(indexer), "v0.0.0-test")
	if err != nil {
		t.Fatal(err)
	}
	return h, indexer
}

func discovery(t *testing.T, h *Handler) map[string]string {
	t.Helper()
	rec := httptest.NewRecorder()
	h.serveDiscovery(rec, httptest.NewRequest(http.MethodGet, Root, nil))
	var d handler3.OpenAPIV3Discovery
	if err := json.Unmarshal(rec.Body.Bytes(), &d); err != nil {
		t.Fatalf("discovery: %d %q: %v", rec.Code, rec.Body, err)
	}
	out := map[string]string{}
	for p, gv := range d.Paths {
		out[p] = gv.ServerRelativeURL
	}
	return out
}

// TestDiscovery: only established CRDs' served versions are listed; a
// group-version's URL changes with its CRDs' generations and set, not
// with their status.
func TestDiscovery(t *testing.T) {
	h, indexer := newHandler(t,
		crd("things.a.example.com", "a.example.com", 1, true, "v1", "v2"),
		crd("others.a.example.com", "a.example.com", 1, true, "v1"),
		crd("things.b.example.com", "b.example.com", 1, false, "v1"),
	)
	before := discovery(t, h)
	if len(before) != 2 || before["apis/a.example.com/v1"] == "" || before["apis/a.example.com/v2"] == "" {
		t.Fatalf("discovery lists %v, want a.example.com's v1 and v2 only", before)
	}

	status := crd("things.a.example.com", "a.example.com", 1, true, "v1", "v2")
	status.Status.AcceptedNames.Kind = "Thing"
	if err := indexer.Update(status); err != nil {
		t.Fatal(err)
	}
	if after := discovery(t, h); after["apis/a.example.com/v1"] != before["apis/a.example.com/v1"] {
		t.Errorf("a status change moved v1 from %s to %s", before["apis/a.example.com/v1"], after["apis/a.example.com/v1"])
	}

	if err := indexer.Update(crd("things.a.example.com", "a.example.com", 2, true, "v1", "v2")); err != nil {
		t.Fatal(err)
	}
	after := discovery(t, h)
	if after["apis/a.example.com/v1"] == before["apis/a.example.com/v1"] || after["apis/a.example.com/v2"] == before["apis/a.example.com/v2"] {
		t.Errorf("a new generation kept the URLs: %v", after)
	}

	if err := indexer.Delete(crd("others.a.example.com", "a.example.com", 1, true, "v1")); err != nil {
		t.Fatal(err)
	}
	if got := discovery(t, h); got["apis/a.example.com/v1"] == after["apis/a.example.com/v1"] || got["apis/a.example.com/v2"] != after["apis/a.example.com/v2"] {
		t.Errorf("deleting the other CRD of v1: %v, was %v", got, after)
	}
}

// TestGroupVersion: a group-version's document merges its CRDs' kinds.
func TestGroupVersion(t *testing.T) {
	a := crd("things.a.example.com", "a.example.com", 1, true, "v1")
	b := crd("others.a.example.com", "a.example.com", 1, true, "v1")
	b.Spec.Names = apiextensionsv1.CustomResourceDefinitionNames{Plural: "others", Kind: "Other", ListKind: "OtherList"}
	h, _ := newHandler(t, a, b)
	rec := httptest.NewRecorder()
	h.serveGroupVersion(rec, httptest.NewRequest(http.MethodGet, Root+"/apis/a.example.com/v1", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("GET: %d %s", rec.Code, rec.Body)
	}
	for _, want := range []string{"com.example.a.v1.Thing", "com.example.a.v1.Other", "/apis/a.example.com/v1/namespaces/{namespace}/others"} {
		if !strings.Contains(rec.Body.String(), want) {
			t.Errorf("the document has no %s", want)
		}
	}
	rec = httptest.NewRecorder()
	h.serveGroupVersion(rec, httptest.NewRequest(http.MethodGet, Root+"/apis/c.example.com/v1", nil))
	if rec.Code != http.StatusNotFound {
		t.Errorf("GET of a group-version no CRD serves: %d, want 404", rec.Code)
	}
}
