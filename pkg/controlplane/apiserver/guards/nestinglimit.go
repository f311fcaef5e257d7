package guards

import (
	"bytes"
	"errors"
	"io"
	"mime"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"

	"github.com/gcp-project/gcp/pkg/controlplane/nesting"
)

// WithNestingLimit answers 400 for a request body that nests objects and
// lists more than limit levels deep (nesting.Check), before any handler
// decodes, patches or validates it: parts of that work grow with the square
// of the depth. It reads at most maxBodyBytes+1 of a body; a larger one is
// passed on as it is, for the handler's 413.
func WithNestingLimit(next http.Handler, codecs serializer.CodecFactory, limit int, maxBodyBytes int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody || !carriesObject(r.Method) {
			next.ServeHTTP(w, r)
			return
		}
		mediaType := r.Header.Get("Content-Type")
		if mediaType != "" {
			parsed, _, err := mime.ParseMediaType(mediaType)
			if err != nil {
				next.ServeHTTP(w, r) // the handler answers 415
				return
			}
			mediaType = parsed
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, maxBodyBytes+1))
		original := r.Body
		if err != nil || int64(len(body)) > maxBodyBytes {
			// What was read is read again first; the handler answers for
			// the error or the size.
			r.Body = readCloser{io.MultiReader(bytes.NewReader(body), original), original}
			next.ServeHTTP(w, r)
			return
		}
		if err := nesting.Check(mediaType, body, limit); err != nil {
			var tooDeep *nesting.Error
			if errors.As(err, &tooDeep) {
				status := &apierrors.StatusError{ErrStatus: metav1.Status{
					Status: metav1.StatusFailure, Code: http.StatusBadRequest, Reason: metav1.StatusReasonBadRequest,
					Message: err.Error(),
				}}
				responsewriters.ErrorNegotiated(status, codecs, schema.GroupVersion{Version: "v1"}, w, r)
				return
			}
		}
		r.Body = readCloser{bytes.NewReader(body), original}
		next.ServeHTTP(w, r)
	})
}

// carriesObject says whether a request of this method has a body that the
// API server decodes as an object or a patch.
func carriesObject(method string) bool {
	return method == http.MethodPost || method == http.MethodPut || method == http.MethodPatch
}

// readCloser reads from one reader and closes the body it came from.
type readCloser struct {
	io.Reader
	io.Closer
}
