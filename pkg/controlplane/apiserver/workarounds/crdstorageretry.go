package workarounds

import (
	"bytes"
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/endpoints/responsewriter"
	genericapiserver "k8s.io/apiserver/pkg/server"
)

// crdStorageRetryAttempts bounds how often one request is served again
// after its custom resource storage was replaced under it.
const crdStorageRetryAttempts = 3

// drainRefusal is the message apiextensions-apiserver's handler answers
// with when a request reaches a custom resource storage that is being torn
// down.
var drainRefusal = []byte(`"apiserver is shutting down"`)

// withCRDStorageRetry is the apiextensions server as a delegate, its
// handler wrapped in serveAgainOnStorageSwap.
type withCRDStorageRetry struct {
	*genericapiserver.GenericAPIServer
	handler http.Handler
}

// NewWithCRDStorageRetry returns the apiextensions server s as a delegate
// whose handler serves a request again when the storage it reached was
// replaced under it (serveAgainOnStorageSwap).
func NewWithCRDStorageRetry(s *genericapiserver.GenericAPIServer) genericapiserver.DelegationTarget {
	return withCRDStorageRetry{GenericAPIServer: s, handler: serveAgainOnStorageSwap(s.UnprotectedHandler(), s.Serializer)}
}

// UnprotectedHandler is the apiextensions server's handler, wrapped.
func (s withCRDStorageRetry) UnprotectedHandler() http.Handler { return s.handler }

// serveAgainOnStorageSwap serves a custom resource request again when
// apiextensions-apiserver refused it with 503 "apiserver is shutting down"
// while the server was not shutting down.
//
// The handler looks up a CRD's storage, then counts the request in the
// storage's wait group; when the CRD changes or is deleted, the storage is
// replaced and, a second later, waited on and torn down (upstream
// kubernetes/kubernetes#77816). A request that looked the storage up before
// and is counted after the wait began is refused with that 503 and never
// served. A create sleeps two seconds in between when the CRD was
// established less than two seconds ago (kubernetes/kubernetes#99199), so
// a create racing a CRD's deletion or update got it. The refused request
// was not served at all (its body is unread), so it is served again: it
// then finds the CRD's new storage, its terminating state (403 for a
// create) or its absence (404). Held by TestCreateRacingCRDDelete.
func serveAgainOnStorageSwap(next http.Handler, codecs runtime.NegotiatedSerializer) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info, ok := request.RequestInfoFrom(r.Context())
		if !ok || !info.IsResourceRequest || info.Verb == "watch" {
			// Watches are not counted in the wait group.
			next.ServeHTTP(w, r)
			return
		}
		header := w.Header().Clone()
		for attempt := 1; ; attempt++ {
			c := &refusalCatcher{ResponseWriter: w}
			next.ServeHTTP(responsewriter.WrapForHTTP1Or2(c), r)
			if !c.finish() {
				return
			}
			resetHeader(w.Header(), header)
			if attempt == crdStorageRetryAttempts {
				gr := schema.GroupResource{Group: info.APIGroup, Resource: info.Resource}
				status := apierrors.NewServiceUnavailable(fmt.Sprintf(
					"the storage of %s was replaced %d times while this request waited for it (its CustomResourceDefinition is changing or being deleted); retry",
					gr, attempt))
				w.Header().Set("Retry-After", "1")
				responsewriters.ErrorNegotiated(status, codecs, schema.GroupVersion{Group: info.APIGroup, Version: info.APIVersion}, w, r)
				return
			}
		}
	})
}

// resetHeader makes h what saved was.
func resetHeader(h, saved http.Header) {
	for k := range h {
		delete(h, k)
	}
	for k, v := range saved {
		h[k] = v
	}
}

// refusalCatcher holds back a 503 with Retry-After until it knows whether
// it is the storage drain's refusal; everything else passes through.
type refusalCatcher struct {
	http.ResponseWriter
	started bool // the response went to the client
	held    bool // a 503 is held back
	body    bytes.Buffer
}

func (c *refusalCatcher) Unwrap() http.ResponseWriter { return c.ResponseWriter }

func (c *refusalCatcher) WriteHeader(code int) {
	if c.started || c.held {
		return
	}
	if code == http.StatusServiceUnavailable && c.Header().Get("Retry-After") != "" {
		c.held = true
		return
	}
	c.started = true
	c.ResponseWriter.WriteHeader(code)
}

func (c *refusalCatcher) Write(p []byte) (int, error) {
	if c.held {
		return c.body.Write(p)
	}
	c.started = true
	return c.ResponseWriter.Write(p)
}

// Flush passes on, unless a 503 is held back.
func (c *refusalCatcher) Flush() {
	if c.held {
		return
	}
	if f, ok := c.ResponseWriter.(http.Flusher); ok {
		c.started = true
		f.Flush()
	}
}

// finish reports whether the answer was the storage drain's refusal (and
// so was not sent); any other held-back 503 is sent now.
func (c *refusalCatcher) finish() bool {
	if !c.held {
		return false
	}
	if bytes.Contains(c.body.Bytes(), drainRefusal) {
		return true
	}
	c.ResponseWriter.WriteHeader(http.StatusServiceUnavailable)
	_, _ = c.ResponseWriter.Write(c.body.Bytes())
	return false
}
