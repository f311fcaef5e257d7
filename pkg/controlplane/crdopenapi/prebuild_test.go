package crdopenapi

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gcp-project/gcp/test/poll"
)

func get(t *testing.T, h *Handler, url string, header map[string]string) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, url, nil)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	h.serveGroupVersion(rec, req)
	return rec
}

// TestPrebuiltDocumentsAreTheBuiltOnes: once CRDs have been quiet, every
// group-version's document is prebuilt; a client that takes gzip gets it
// gzipped as kept, one that does not gets it plain, and both are the
// document built on request. A CRD that changes gets its new document.
func TestPrebuiltDocumentsAreTheBuiltOnes(t *testing.T) {
	h, indexer := newHandler(t,
		crd("things.a.example.com", "a.example.com", 1, true, "v1"),
		crd("others.b.example.com", "b.example.com", 1, true, "v1"),
	)
	built := map[string][]byte{}
	for p, url := range discovery(t, h) {
		rec := get(t, h, url, nil)
		if rec.Code != http.StatusOK {
			t.Fatalf("GET %s: %d", url, rec.Code)
		}
		built[p] = rec.Body.Bytes()
	}
	// A fresh handler over the same CRDs, prebuilt.
	h, indexer = newHandler(t, crd("things.a.example.com", "a.example.com", 1, true, "v1"), crd("others.b.example.com", "b.example.com", 1, true, "v1"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h.quiet = 10 * time.Millisecond
	go h.Prebuild(ctx)
	h.changedNow()
	poll.Until(t, 100*time.Millisecond, time.Minute, func() error {
		for p := range built {
			if h.packedDoc(p) == nil {
				return errNotYet(p)
			}
		}
		return nil
	})
	for p, url := range discovery(t, h) {
		zipped := get(t, h, url, map[string]string{"Accept-Encoding": "gzip"})
		if zipped.Header().Get("Content-Encoding") != "gzip" {
			t.Fatalf("GET %s with gzip: not gzipped (%v)", url, zipped.Header())
		}
		zr, err := gzip.NewReader(zipped.Body)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(zr)
		if err != nil {
			t.Fatal(err)
		}
		plain := get(t, h, url, nil)
		if !bytes.Equal(body, built[p]) || !bytes.Equal(plain.Body.Bytes(), built[p]) || plain.Header().Get("Content-Encoding") != "" {
			t.Errorf("%s: prebuilt documents differ from the one built on request", p)
		}
	}

	changed := crd("things.a.example.com", "a.example.com", 2, true, "v1")
	changed.Spec.Versions[0].Schema.OpenAPIV3Schema.Description = "changed"
	if err := indexer.Update(changed); err != nil {
		t.Fatal(err)
	}
	h.changedNow()
	url := discovery(t, h)["apis/a.example.com/v1"]
	if body := get(t, h, url, nil).Body.String(); !strings.Contains(body, `"changed"`) {
		t.Fatalf("the changed CRD's document, asked before it was prebuilt again, lacks its change")
	}
	poll.Until(t, 100*time.Millisecond, time.Minute, func() error {
		if p := h.packedDoc("apis/a.example.com/v1"); p == nil || !strings.Contains(url, p.hash) {
			return errNotYet("apis/a.example.com/v1 again")
		}
		return nil
	})
}

type errNotYet string

func (e errNotYet) Error() string { return string(e) + " is not prebuilt yet" }
