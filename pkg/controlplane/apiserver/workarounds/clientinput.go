package workarounds

import (
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/validation/path"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/endpoints/responsewriter"
)

// WithClientInputChecks answers 4xx for client input that k8s.io/apiserver
// v0.37.2 answers 500 for, or no answer at all. No upstream issue was
// found for any of them; each names the upstream code path and the test
// that holds it (docs/architecture.md, "Workarounds for upstream"):
//   - a namespace in the URL that cannot be a path segment ("." and "..",
//     also escaped as %2e%2e): registry.NamespaceKeyFunc
//     (pkg/registry/generic/registry/store.go) checks the name but not the
//     namespace, and storage.PrepareKey (pkg/storage/interfaces.go) refuses
//     the key with a plain error. TestBadInput/"namespace . or .. in the
//     URL is 400".
//   - a request body that cannot be read (a malformed chunked encoding):
//     limitedReadBody (pkg/endpoints/handlers/rest.go) returns the read
//     error as it is. In a server the body is read from the client's
//     connection, so a read that fails is the client's (a size past the
//     limit stays 413). TestBadInput/"malformed chunked body is 400".
//   - a protobuf body for a resource without a protobuf form (415):
//     apiextensions-apiserver's crdHandler (pkg/apiserver/
//     customresource_handler.go) has no protobuf form for custom resources
//     and its decoder dereferences a nil pointer on one, so the client gets
//     no answer. TestProtobufBodyForACustomResource.
//   - a watch's timeoutSeconds that is negative or, made a time.Duration,
//     overflows: handleWatch (pkg/endpoints/handlers/get.go) multiplies it
//     into a time.Duration unchecked, so the watch is answered 200 and then
//     ends at once with an InternalError event, or with an empty body.
//     TestWatchTimeoutSeconds.
func WithClientInputChecks(next http.Handler, codecs serializer.CodecFactory) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if info, ok := request.RequestInfoFrom(r.Context()); ok && info.IsResourceRequest {
			if info.Namespace != "" {
				if msgs := path.IsValidPathSegmentName(info.Namespace); len(msgs) > 0 {
					status := apierrors.NewBadRequest(fmt.Sprintf("namespace %q in the URL: %s", info.Namespace, strings.Join(msgs, "; ")))
					responsewriters.ErrorNegotiated(status, codecs, schema.GroupVersion{Version: "v1"}, w, r)
					return
				}
			}
			if info.Verb == "watch" {
				if msg := badWatchTimeout(r.URL.Query()["timeoutSeconds"]); msg != "" {
					responsewriters.ErrorNegotiated(apierrors.NewBadRequest(msg), codecs, schema.GroupVersion{Version: "v1"}, w, r)
					return
				}
			}
		}
		if r.Body != nil && r.Body != http.NoBody {
			r.Body = clientBody{r.Body}
		}
		if isProtobuf(r) {
			serveProtobufBody(next, w, r, codecs)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// maxWatchTimeoutSeconds is the largest timeoutSeconds whose
// time.Duration does not overflow.
const maxWatchTimeoutSeconds = int64(math.MaxInt64 / time.Second)

// badWatchTimeout says what is wrong with a watch's timeoutSeconds values,
// or "" if nothing is. The handler reads only the first value, as
// int64 seconds made a time.Duration; 0 (or none) means the server's
// default.
func badWatchTimeout(values []string) string {
	if len(values) == 0 {
		return ""
	}
	n, err := strconv.ParseInt(values[0], 10, 64)
	if err == nil && n >= 0 && n <= maxWatchTimeoutSeconds {
		return ""
	}
	return fmt.Sprintf("timeoutSeconds: Invalid value: %q: must be a whole number of seconds from 0 (the server's default) to %d", values[0], maxWatchTimeoutSeconds)
}

// isProtobuf says whether r sends a protobuf body.
func isProtobuf(r *http.Request) bool {
	mediaType, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return err == nil && mediaType == runtime.ContentTypeProtobuf && r.Body != nil && r.Body != http.NoBody
}

// serveProtobufBody serves a request with a protobuf body, and answers 415
// if decoding it panics before anything was written: custom resources
// have no protobuf form, and apiextensions-apiserver's decoder for them
// dereferences a nil pointer on one instead of refusing it, so the client
// got no answer at all.
func serveProtobufBody(next http.Handler, w http.ResponseWriter, r *http.Request, codecs serializer.CodecFactory) {
	tracked := &headerTracker{ResponseWriter: w}
	defer func() {
		p := recover()
		if p == nil {
			return
		}
		if p == http.ErrAbortHandler || tracked.wroteHeader {
			panic(p)
		}
		utilruntime.HandleError(fmt.Errorf("a protobuf body for %s made the handler panic; answered 415: %v", r.URL.Path, p))
		status := &apierrors.StatusError{ErrStatus: metav1.Status{
			Status: metav1.StatusFailure, Code: http.StatusUnsupportedMediaType, Reason: metav1.StatusReasonUnsupportedMediaType,
			Message: fmt.Sprintf("the body's media type %s is not accepted for %s: send application/json or application/yaml", runtime.ContentTypeProtobuf, r.URL.Path),
		}}
		responsewriters.ErrorNegotiated(status, codecs, schema.GroupVersion{Version: "v1"}, w, r)
	}()
	next.ServeHTTP(responsewriter.WrapForHTTP1Or2(tracked), r)
}

// headerTracker notes whether the response has begun.
type headerTracker struct {
	http.ResponseWriter
	wroteHeader bool
}

func (h *headerTracker) Unwrap() http.ResponseWriter { return h.ResponseWriter }

func (h *headerTracker) WriteHeader(code int) {
	h.wroteHeader = true
	h.ResponseWriter.WriteHeader(code)
}

func (h *headerTracker) Write(p []byte) (int, error) {
	h.wroteHeader = true
	return h.ResponseWriter.Write(p)
}

// clientBody turns an error reading the body (other than its end, and
// than the size limit, which is 413's) into a 400 the handlers pass on.
type clientBody struct{ io.ReadCloser }

func (b clientBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	var tooLarge *http.MaxBytesError
	if err != nil && err != io.EOF && !errors.As(err, &tooLarge) && !apierrors.IsBadRequest(err) {
		err = apierrors.NewBadRequest("reading the request body: " + err.Error())
	}
	return n, err
}
