// Package crdopenapi serves the OpenAPI v3 documents of custom resources
// (/openapi/v3/apis/<group>/<version>), instead of keeping one built for
// every CustomResourceDefinition as objects.
//
// k8s.io/apiextensions-apiserver's OpenAPI v3 controller builds each CRD's
// document when the CRD is established and keeps it, and its handler
// (k8s.io/kube-openapi's handler3) computes a group-version's hash by
// encoding its document, which the aggregator asks for every second. So
// every CRD costs its document twice over, as objects and as JSON (about
// 0.25 MiB of heap per CRD of a small schema), whether or not anyone ever
// reads it. Here a group-version's hash is computed from what its document
// is built from (the identity and generation of each CRD serving it, and
// the libraries' version), so the discovery document costs nothing to
// answer. A document is built when it is asked for and kept in a small
// cache; and, once CRDs have been quiet for a few seconds, every
// group-version's document is built ahead of its first request and kept
// gzipped (Prebuild): a Crossplane provider's biggest group is 8 MiB of
// JSON that took 0.8 s to build on request, and gzipped about a twentieth.
package crdopenapi

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/munnerz/goautoneg"
	apiextensionshelpers "k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	listers "k8s.io/apiextensions-apiserver/pkg/client/listers/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/controller/openapi/builder"
	apiextensionsfeatures "k8s.io/apiextensions-apiserver/pkg/features"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apiserver/pkg/server/mux"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/klog/v2"
	"k8s.io/kube-openapi/pkg/handler3"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/utils/lru"
)

// Root is the path of the OpenAPI v3 discovery document.
const Root = "/openapi/v3"

// cacheSize is how many group-version documents are kept once built. A
// document of one small CRD is about 64 KiB of JSON.
const cacheSize = 32

// Handler serves /openapi/v3 for a server whose own group-versions are in
// a handler3 service and whose custom resources are listed by a CRD lister.
type Handler struct {
	static     *handler3.OpenAPIService
	staticGVs  map[string]handler3.OpenAPIV3DiscoveryGroupVersion
	crds       listers.CustomResourceDefinitionLister
	generation string
	options    builder.Options

	docs *lru.Cache // group-version path -> *document

	// changed wakes Prebuild; packed holds what it built, by path.
	changed chan struct{}
	quiet   time.Duration
	mu      sync.Mutex
	packed  map[string]*packed
}

// document is one group-version's built document.
type document struct {
	hash     string
	json     []byte
	built    time.Time
	pbOnce   sync.Once
	protobuf []byte
	pbErr    error
}

// New returns a Handler. static serves the server's own group-versions
// (those of its routes) and is never changed afterwards; libraryVersion
// names the k8s.io libraries, whose definitions (ObjectMeta and the rest)
// every document includes.
func New(static *handler3.OpenAPIService, crds listers.CustomResourceDefinitionLister, libraryVersion string) (*Handler, error) {
	staticGVs, err := discover(static)
	if err != nil {
		return nil, err
	}
	h := &Handler{
		static:    static,
		staticGVs: staticGVs,
		crds:      crds,
		options: builder.Options{
			V2:                      false,
			IncludeSelectableFields: utilfeature.DefaultFeatureGate.Enabled(apiextensionsfeatures.CustomResourceFieldSelectors),
		},
		docs:    lru.New(cacheSize),
		changed: make(chan struct{}, 1),
		quiet:   defaultQuiet,
		packed:  map[string]*packed{},
	}
	h.generation = fmt.Sprintf("crdopenapi/1 %s selectable-fields=%t", libraryVersion, h.options.IncludeSelectableFields)
	return h, nil
}

// Install replaces the handlers a server's PrepareRun registered at
// /openapi/v3 on m with h.
func (h *Handler) Install(m *mux.PathRecorderMux) {
	m.Unregister(Root)
	m.Unregister(Root + "/")
	m.Handle(Root, http.HandlerFunc(h.serveDiscovery))
	m.HandlePrefix(Root+"/", http.HandlerFunc(h.serveGroupVersion))
}

// discover reads static's discovery document.
func discover(static *handler3.OpenAPIService) (map[string]handler3.OpenAPIV3DiscoveryGroupVersion, error) {
	rec := httptest.NewRecorder()
	static.HandleDiscovery(rec, httptest.NewRequest(http.MethodGet, Root, nil))
	if rec.Code != http.StatusOK {
		return nil, fmt.Errorf("OpenAPI v3 discovery of the server's own group-versions: status %d", rec.Code)
	}
	var d handler3.OpenAPIV3Discovery
	if err := json.Unmarshal(rec.Body.Bytes(), &d); err != nil {
		return nil, fmt.Errorf("OpenAPI v3 discovery of the server's own group-versions: %w", err)
	}
	return d.Paths, nil
}

// groupVersions returns, for each group-version path that established CRDs
// serve, those CRDs sorted by name.
func (h *Handler) groupVersions() (map[string][]*apiextensionsv1.CustomResourceDefinition, error) {
	crds, err := h.crds.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	out := map[string][]*apiextensionsv1.CustomResourceDefinition{}
	for _, crd := range crds {
		if !apiextensionshelpers.IsCRDConditionTrue(crd, apiextensionsv1.Established) {
			continue
		}
		for _, v := range crd.Spec.Versions {
			if v.Served {
				p := gvPath(crd.Spec.Group, v.Name)
				out[p] = append(out[p], crd)
			}
		}
	}
	for _, list := range out {
		slices.SortFunc(list, func(a, b *apiextensionsv1.CustomResourceDefinition) int { return strings.Compare(a.Name, b.Name) })
	}
	return out, nil
}

// gvPath is a group-version's path below /openapi/v3.
func gvPath(group, version string) string {
	return "apis/" + group + "/" + version
}

// hash names the document built for path from crds: it changes whenever
// a CRD serving path is added, removed or has its spec changed (its
// generation), or the libraries change.
func (h *Handler) hash(path string, crds []*apiextensionsv1.CustomResourceDefinition) string {
	s := sha256.New()
	fmt.Fprintf(s, "%s\n%s\n", h.generation, path)
	for _, crd := range crds {
		fmt.Fprintf(s, "%s %s %d\n", crd.Name, crd.UID, crd.Generation)
	}
	return fmt.Sprintf("%X", s.Sum(nil))
}

func (h *Handler) serveDiscovery(w http.ResponseWriter, r *http.Request) {
	gvs, err := h.groupVersions()
	if err != nil {
		klog.ErrorS(err, "Listing CustomResourceDefinitions for OpenAPI v3 discovery")
		http.Error(w, "the custom resource definitions are not listed yet", http.StatusServiceUnavailable)
		return
	}
	d := handler3.OpenAPIV3Discovery{Paths: make(map[string]handler3.OpenAPIV3DiscoveryGroupVersion, len(gvs)+len(h.staticGVs))}
	for p, crds := range gvs {
		d.Paths[p] = handler3.OpenAPIV3DiscoveryGroupVersion{ServerRelativeURL: relativeURL(p, h.hash(p, crds))}
	}
	for p, gv := range h.staticGVs {
		d.Paths[p] = gv
	}
	body, err := json.Marshal(d)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	sum := sha256.Sum256(body)
	w.Header().Set("Etag", strconv.Quote(fmt.Sprintf("%X", sum)))
	w.Header().Set("Content-Type", "application/json")
	http.ServeContent(w, r, Root, time.Time{}, bytes.NewReader(body))
}

// relativeURL is where the document of path with hash is served.
func relativeURL(path, hash string) string {
	return Root + "/" + path + "?hash=" + hash
}

func (h *Handler) serveGroupVersion(w http.ResponseWriter, r *http.Request) {
	path := strings.TrimPrefix(r.URL.Path, Root+"/")
	if _, ok := h.staticGVs[path]; ok {
		h.static.HandleGroupVersion(w, r)
		return
	}
	gvs, err := h.groupVersions()
	if err != nil {
		klog.ErrorS(err, "Listing CustomResourceDefinitions for an OpenAPI v3 document")
		http.Error(w, "the custom resource definitions are not listed yet", http.StatusServiceUnavailable)
		return
	}
	crds, ok := gvs[path]
	if !ok {
		http.NotFound(w, r)
		return
	}

	w.Header().Add("Vary", "Accept")
	mediaType, protobuf, ok := negotiate(r.Header.Get("Accept"))
	if !ok {
		w.WriteHeader(http.StatusNotAcceptable)
		return
	}
	hash := h.hash(path, crds)
	if want := r.URL.Query().Get("hash"); want != "" && want != hash {
		http.Redirect(w, r, relativeURL(path, hash), http.StatusMovedPermanently)
		return
	}
	if p := h.packedDoc(path); p != nil && p.hash == hash && !protobuf && acceptsGzip(r) && r.Header.Get("Range") == "" {
		// Prebuilt: sent as it is kept.
		w.Header().Add("Vary", "Accept-Encoding")
		w.Header().Set("Content-Encoding", "gzip")
		serveDocument(w, r, mediaType, hash, p.built, p.gz)
		return
	}
	doc, err := h.document(path, hash, crds)
	if err != nil {
		klog.ErrorS(err, "Building an OpenAPI v3 document", "groupVersion", path)
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	body := doc.json
	if protobuf {
		doc.pbOnce.Do(func() { doc.protobuf, doc.pbErr = handler3.ToV3ProtoBinary(doc.json) })
		if doc.pbErr != nil {
			// The document is there in JSON; a schema gnostic cannot read
			// has no protobuf form.
			klog.ErrorS(doc.pbErr, "Encoding an OpenAPI v3 document as protobuf", "groupVersion", path)
			http.Error(w, "this document is served as application/json only: "+doc.pbErr.Error(), http.StatusNotAcceptable)
			return
		}
		body = doc.protobuf
	}
	serveDocument(w, r, mediaType, hash, doc.built, body)
}

// serveDocument sends a document of hash, built at built: the hash is its
// ETag, and at its hashed URL it is cached for good.
func serveDocument(w http.ResponseWriter, r *http.Request, mediaType, hash string, built time.Time, body []byte) {
	w.Header().Set("Content-Type", mediaType)
	w.Header().Set("Etag", strconv.Quote(hash))
	if r.URL.Query().Get("hash") != "" {
		w.Header().Set("Cache-Control", "public, immutable")
		w.Header().Set("Expires", time.Now().AddDate(1, 0, 0).Format(time.RFC1123))
	}
	http.ServeContent(w, r, "", built, bytes.NewReader(body))
}

// negotiate picks JSON or protobuf from an Accept header, as handler3 does.
func negotiate(accept string) (mediaType string, protobuf, ok bool) {
	if accept == "" {
		accept = "*/*"
	}
	offers := []struct {
		subType, mediaType string
		protobuf           bool
	}{
		{"json", "application/json", false},
		{"com.github.proto-openapi.spec.v3.v1.0+protobuf", "application/com.github.proto-openapi.spec.v3.v1.0+protobuf", true},
		{"com.github.proto-openapi.spec.v3@v1.0+protobuf", "application/com.github.proto-openapi.spec.v3.v1.0+protobuf", true},
	}
	for _, clause := range goautoneg.ParseAccept(accept) {
		for _, o := range offers {
			if (clause.Type == "application" || clause.Type == "*") && (clause.SubType == o.subType || clause.SubType == "*") {
				return o.mediaType, o.protobuf, true
			}
		}
	}
	return "", false, false
}

// document returns path's document for hash, from the cache or built from
// crds. A CRD whose document cannot be built is left out, as the
// apiextensions controller leaves it out.
func (h *Handler) document(path, hash string, crds []*apiextensionsv1.CustomResourceDefinition) (*document, error) {
	if v, ok := h.docs.Get(path); ok && v.(*document).hash == hash {
		return v.(*document), nil
	}
	body := h.unpacked(path, hash)
	if body == nil {
		var err error
		if body, err = h.build(path, crds); err != nil {
			return nil, err
		}
	}
	doc := &document{hash: hash, json: body, built: time.Now()}
	h.docs.Add(path, doc)
	return doc, nil
}

// build builds path's document from crds, as JSON.
func (h *Handler) build(path string, crds []*apiextensionsv1.CustomResourceDefinition) ([]byte, error) {
	version := path[strings.LastIndex(path, "/")+1:]
	var built []*spec3.OpenAPI
	for _, crd := range crds {
		spec, err := builder.BuildOpenAPIV3(crd, version, h.options)
		if err != nil {
			klog.ErrorS(err, "Building the OpenAPI v3 document of a CustomResourceDefinition", "crd", crd.Name, "version", version)
			continue
		}
		built = append(built, spec)
	}
	return json.Marshal(merge(built))
}

// merge merges specs into one document. Should two conflict (CRDs in one
// group naming the same kind are never both established, so they should
// not), the later one is left out rather than the whole group-version.
func merge(specs []*spec3.OpenAPI) *spec3.OpenAPI {
	merged, err := builder.MergeSpecsV3(specs...)
	if err == nil {
		return merged
	}
	merged = nil
	for _, s := range specs {
		with := []*spec3.OpenAPI{s}
		if merged != nil {
			with = []*spec3.OpenAPI{merged, s}
		}
		next, err := builder.MergeSpecsV3(with...)
		if err != nil {
			klog.ErrorS(err, "Merging the OpenAPI v3 documents of CustomResourceDefinitions")
			continue
		}
		merged = next
	}
	return merged
}
