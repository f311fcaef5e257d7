package crdopenapi

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// defaultQuiet is how long CRDs must stay unchanged before Prebuild builds the
// documents they changed: a thousand CRDs installed at once are built once,
// after the installation, not while it competes for the CPU.
const defaultQuiet = 5 * time.Second

// packed is a group-version's document, gzipped. A Crossplane provider's
// group of 119 CRDs has a document of 8 MiB of JSON, built in about 0.8 s
// on request; gzipped it is about a twentieth of that, served at once.
type packed struct {
	hash  string
	gz    []byte
	built time.Time
}

// EventHandler is what a CRD informer tells Prebuild: that a CRD was
// added, changed or deleted. It never blocks.
func (h *Handler) EventHandler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { h.changedNow() },
		UpdateFunc: func(any, any) { h.changedNow() },
		DeleteFunc: func(any) { h.changedNow() },
	}
}

// changedNow wakes Prebuild, or leaves it awake.
func (h *Handler) changedNow() {
	select {
	case h.changed <- struct{}{}:
	default:
	}
}

// Prebuild builds, until ctx is done, the document of every group-version
// whose CRDs changed, once they have been quiet for a while, and keeps it
// gzipped, so that the first request for a document (kubectl explain, a
// client generating types) is answered as fast as a later one. Built at
// start and after changes, it costs CPU once per change of a group-version
// rather than on a request, and memory for the gzipped documents (15 MiB
// for a Crossplane provider's 1,539 CRDs).
func (h *Handler) Prebuild(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-h.changed:
		}
		if !h.waitQuiet(ctx) {
			return
		}
		h.prebuildAll(ctx)
	}
}

// waitQuiet waits until nothing changed for h.quiet; false if ctx ends.
func (h *Handler) waitQuiet(ctx context.Context) bool {
	quiet := time.NewTimer(h.quiet)
	defer quiet.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-h.changed:
			quiet.Reset(h.quiet)
		case <-quiet.C:
			return true
		}
	}
}

// prebuildAll packs the documents whose hash changed and forgets those of
// group-versions no CRD serves any more.
func (h *Handler) prebuildAll(ctx context.Context) {
	gvs, err := h.groupVersions()
	if err != nil {
		return
	}
	h.mu.Lock()
	for path := range h.packed {
		if _, ok := gvs[path]; !ok {
			delete(h.packed, path)
		}
	}
	h.mu.Unlock()
	for path, crds := range gvs {
		if ctx.Err() != nil {
			return
		}
		hash := h.hash(path, crds)
		if p := h.packedDoc(path); p != nil && p.hash == hash {
			continue
		}
		if err := h.pack(path, hash, crds); err != nil {
			klog.ErrorS(err, "Building an OpenAPI v3 document ahead of its first request", "groupVersion", path)
		}
	}
}

// pack builds path's document and keeps it gzipped.
func (h *Handler) pack(path, hash string, crds []*apiextensionsv1.CustomResourceDefinition) error {
	body, err := h.build(path, crds)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	if err != nil {
		return err
	}
	if _, err := zw.Write(body); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	h.mu.Lock()
	h.packed[path] = &packed{hash: hash, gz: bytes.Clone(buf.Bytes()), built: time.Now()}
	h.mu.Unlock()
	return nil
}

// packedDoc is path's packed document, or nil.
func (h *Handler) packedDoc(path string) *packed {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.packed[path]
}

// unpacked returns path's document for hash from its packed form, or nil.
func (h *Handler) unpacked(path, hash string) []byte {
	p := h.packedDoc(path)
	if p == nil || p.hash != hash {
		return nil
	}
	zr, err := gzip.NewReader(bytes.NewReader(p.gz))
	if err != nil {
		return nil
	}
	body, err := io.ReadAll(zr)
	if err != nil {
		return nil
	}
	return body
}

// acceptsGzip says whether r's client takes a gzipped body.
func acceptsGzip(r *http.Request) bool {
	for _, clause := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		coding, params, _ := strings.Cut(strings.TrimSpace(clause), ";")
		if strings.EqualFold(strings.TrimSpace(coding), "gzip") && strings.ReplaceAll(strings.TrimSpace(params), " ", "") != "q=0" {
			return true
		}
	}
	return false
}
