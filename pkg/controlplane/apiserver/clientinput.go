package apiserver

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/validation/path"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	"k8s.io/apiserver/pkg/endpoints/request"
)

// withClientInputChecks answers 400 for client input that k8s.io/apiserver
// answers 500 for, before it reaches a handler:
//   - a namespace in the URL that cannot be a path segment ("." and "..",
//     also escaped as %2e%2e): the storage key built from it is invalid;
//   - a request body that cannot be read (a malformed chunked encoding):
//     the handlers pass the read error on as an internal error.
func withClientInputChecks(next http.Handler, codecs serializer.CodecFactory) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if info, ok := request.RequestInfoFrom(r.Context()); ok && info.IsResourceRequest && info.Namespace != "" {
			if msgs := path.IsValidPathSegmentName(info.Namespace); len(msgs) > 0 {
				status := apierrors.NewBadRequest(fmt.Sprintf("namespace %q in the URL: %s", info.Namespace, strings.Join(msgs, "; ")))
				responsewriters.ErrorNegotiated(status, codecs, schema.GroupVersion{Version: "v1"}, w, r)
				return
			}
		}
		if r.Body != nil && r.Body != http.NoBody {
			r.Body = clientBody{r.Body}
		}
		next.ServeHTTP(w, r)
	})
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
