// Package lazyopenapi serves a server's OpenAPI v2 document and v3
// group-version documents, built from its routes, when they are first
// asked for rather than when the server starts.
//
// k8s.io/apiserver's PrepareRun builds the whole v2 document and every v3
// group-version document from the routes, and the aggregator then asks for
// the v3 discovery document, whose hashes handler3 computes by encoding
// every document. For gcp's native server that was about 0.17 s of CPU of
// each start (a third of a warm start on 2 cores) and the documents' heap
// for as long as the server runs, although nothing in the server reads
// them: clients such as `kubectl explain` and `kubectl apply` ask for one
// group-version at a time, and seldom.
//
// A v3 group-version's hash names the binary and the group-version's
// routes (see hash) instead of the document's bytes, so discovery costs
// nothing to answer; the documents themselves are handler3's, built by
// k8s.io/apiserver's own routes.OpenAPI, so they are exactly what
// PrepareRun would have built.
package lazyopenapi

import (
	"bytes"
	"crypto/sha256"
	"debug/elf"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	restful "github.com/emicklei/go-restful/v3"
	"github.com/munnerz/goautoneg"
	"k8s.io/apiserver/pkg/server/mux"
	"k8s.io/apiserver/pkg/server/routes"
	builder2 "k8s.io/kube-openapi/pkg/builder"
	"k8s.io/kube-openapi/pkg/cached"
	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/common/restfuladapter"
	"k8s.io/kube-openapi/pkg/handler"
	"k8s.io/kube-openapi/pkg/handler3"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// V2Path and V3Path are where the documents are served.
const (
	V2Path = "/openapi/v2"
	V3Path = "/openapi/v3"
)

// InstallV2 serves the OpenAPI v2 document of container's routes at
// V2Path on m, built on the first request. The server must have been
// configured with SkipOpenAPIInstallation, so that PrepareRun does not
// install its own.
func InstallV2(container *restful.Container, config *common.Config, m *mux.PathRecorderMux) {
	build := func() (*spec.Swagger, string, error) {
		s, err := builder2.BuildOpenAPISpecFromRoutes(restfuladapter.AdaptWebServices(container.RegisteredWebServices()), config)
		if err != nil {
			return nil, "", fmt.Errorf("building the OpenAPI v2 document: %w", err)
		}
		s.Definitions = handler.PruneDefaults(s.Definitions)
		// handler's own ETag is computed from the encoded document.
		return s, "built", nil
	}
	handler.NewOpenAPIServiceLazy(cached.Once(cached.Func(build))).RegisterOpenAPIVersionedService(V2Path, m)
}

// v3 serves the OpenAPI v3 discovery document and group-version documents
// of a server's routes.
type v3 struct {
	container *restful.Container
	config    *common.OpenAPIV3Config
	binary    string

	indexOnce sync.Once
	hashes    map[string]string // group-version path -> hash
	discovery []byte

	docsOnce sync.Once
	docs     *handler3.OpenAPIService
}

// InstallV3 serves the OpenAPI v3 documents of container's routes at
// V3Path on m: discovery from the routes alone, a group-version's document
// built (with all the others) on the first request for one. As with
// InstallV2, the server must skip its own installation. The routes are
// read on the first request, by when the server has installed them all.
func InstallV3(container *restful.Container, config *common.OpenAPIV3Config, m *mux.PathRecorderMux) {
	v := &v3{container: container, config: config, binary: binaryID()}
	m.Handle(V3Path, http.HandlerFunc(v.serveDiscovery))
	m.HandlePrefix(V3Path+"/", http.HandlerFunc(v.serveGroupVersion))
}

// index groups the routes by group-version, as routes.OpenAPI.InstallV3
// does (by their web service's root path), and hashes each group.
func (v *v3) index() {
	v.indexOnce.Do(func() {
		byPath := map[string][]*restful.WebService{}
		for _, ws := range v.container.RegisteredWebServices() {
			p := strings.TrimPrefix(ws.RootPath(), "/")
			byPath[p] = append(byPath[p], ws)
		}
		v.hashes = make(map[string]string, len(byPath))
		d := handler3.OpenAPIV3Discovery{Paths: make(map[string]handler3.OpenAPIV3DiscoveryGroupVersion, len(byPath))}
		for p, wss := range byPath {
			v.hashes[p] = hash(v.binary, p, wss)
			d.Paths[p] = handler3.OpenAPIV3DiscoveryGroupVersion{ServerRelativeURL: relativeURL(p, v.hashes[p])}
		}
		// A map of strings always encodes.
		v.discovery, _ = json.Marshal(d)
	})
}

// hash names the document of group-version path: the binary (whose
// definitions and builders make the document) and the routes of path
// (which differ between servers of one binary with different APIs
// enabled). Two servers of one binary serving the same routes give the
// same hash, so clients' caches keep working across replicas and
// restarts; any other change gives another.
func hash(binary, path string, wss []*restful.WebService) string {
	var lines []string
	for _, ws := range wss {
		for _, r := range ws.Routes() {
			line := fmt.Sprintf("%s %s %s %T %T", r.Method, r.Path, r.Operation, r.ReadSample, r.WriteSample)
			for _, p := range r.ParameterDocs {
				d := p.Data()
				line += fmt.Sprintf(" %s:%d:%s:%t", d.Name, d.Kind, d.DataType, d.Required)
			}
			for _, code := range slices.Sorted(maps.Keys(r.ResponseErrors)) {
				line += fmt.Sprintf(" %d:%T", code, r.ResponseErrors[code].Model)
			}
			lines = append(lines, line)
		}
	}
	slices.Sort(lines)
	s := sha256.New()
	fmt.Fprintf(s, "lazyopenapi/1\n%s\n%s\n", binary, path)
	for _, l := range lines {
		fmt.Fprintln(s, l)
	}
	return fmt.Sprintf("%X", s.Sum(nil))
}

// binaryID identifies the running binary by its Go build ID, which
// changes whenever anything it was built from does. Where it cannot be
// read, each process is its own: hashes then change with every restart,
// which costs clients a download, never a stale document.
func binaryID() string {
	if id, err := goBuildID(); err == nil && id != "" {
		return "go-build-id " + id
	}
	return fmt.Sprintf("process %d %d", os.Getpid(), time.Now().UnixNano())
}

// goBuildID reads the Go build ID note of the running executable.
func goBuildID() (string, error) {
	path, err := os.Executable()
	if err != nil {
		return "", err
	}
	f, err := elf.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	s := f.Section(".note.go.buildid")
	if s == nil {
		return "", fmt.Errorf("%s has no Go build ID", path)
	}
	note, err := s.Data()
	if err != nil {
		return "", err
	}
	// An ELF note: name size, description size and type (4 bytes each),
	// the name "Go\0\0", then the build ID.
	if len(note) < 16 || !bytes.Equal(note[12:16], []byte("Go\x00\x00")) {
		return "", fmt.Errorf("%s: unexpected Go build ID note", path)
	}
	return string(bytes.TrimRight(note[16:], "\x00")), nil
}

// relativeURL is where the document of path with hash is served.
func relativeURL(path, hash string) string {
	return V3Path + "/" + path + "?hash=" + hash
}

func (v *v3) serveDiscovery(w http.ResponseWriter, r *http.Request) {
	v.index()
	sum := sha256.Sum256(v.discovery)
	w.Header().Set("Etag", strconv.Quote(fmt.Sprintf("%X", sum)))
	w.Header().Set("Content-Type", "application/json")
	http.ServeContent(w, r, V3Path, time.Time{}, bytes.NewReader(v.discovery))
}

func (v *v3) serveGroupVersion(w http.ResponseWriter, r *http.Request) {
	v.index()
	path := strings.TrimPrefix(r.URL.Path, V3Path+"/")
	want, ok := v.hashes[path]
	if !ok {
		http.NotFound(w, r)
		return
	}
	if accept := r.Header.Get("Accept"); accept != "" && len(goautoneg.ParseAccept(accept)) == 0 {
		// handler3 would answer nothing at all.
		w.WriteHeader(http.StatusNotAcceptable)
		return
	}
	q := r.URL.Query()
	if got := q.Get("hash"); got != "" {
		if got != want {
			http.Redirect(w, r, relativeURL(path, want), http.StatusMovedPermanently)
			return
		}
		// The hash names this binary's document of these routes, which
		// never changes: cacheable for good, as handler3 marks a document
		// asked for by its hash.
		w.Header().Set("Cache-Control", "public, immutable")
		w.Header().Set("Expires", time.Now().AddDate(1, 0, 0).Format(time.RFC1123))
	}
	// handler3 checks a hash against its own (the encoded document's), so
	// it is asked without one.
	q.Del("hash")
	r2 := r.Clone(r.Context())
	r2.URL.RawQuery = q.Encode()
	rw := &responded{ResponseWriter: w}
	v.documents().HandleGroupVersion(rw, r2)
	if !rw.wrote {
		// handler3 answers nothing for a group-version it has no document
		// of: InstallV3 failed to build it and logged why.
		w.Header().Del("Cache-Control")
		w.Header().Del("Expires")
		http.Error(w, "the OpenAPI v3 document of "+path+" could not be built", http.StatusInternalServerError)
	}
}

// responded records whether a handler wrote a response.
type responded struct {
	http.ResponseWriter
	wrote bool
}

func (r *responded) WriteHeader(code int) {
	r.wrote = true
	r.ResponseWriter.WriteHeader(code)
}

func (r *responded) Write(b []byte) (int, error) {
	r.wrote = true
	return r.ResponseWriter.Write(b)
}

// documents builds every group-version's document with k8s.io/apiserver's
// routes.OpenAPI, as PrepareRun would have, the first time one is asked
// for. handler3 encodes each only when it is asked for.
func (v *v3) documents() *handler3.OpenAPIService {
	v.docsOnce.Do(func() {
		v.docs = routes.OpenAPI{V3Config: v.config}.InstallV3(v.container, mux.NewPathRecorderMux("lazyopenapi"))
	})
	return v.docs
}
