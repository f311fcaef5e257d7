package workarounds

import (
	"errors"
	"io"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// WithUnreadableBodyAsBadRequest answers 400 for a request body that
// cannot be read (a malformed chunked encoding), which k8s.io/apiserver
// v0.37.2 answers 500: limitedReadBody (pkg/endpoints/handlers/rest.go)
// returns the read error as it is. In a server the body is read from the
// client's connection, so a read that fails is the client's (a size past
// the limit stays 413). No upstream issue was found. test/integration
// TestBadInput/"malformed chunked body is 400" holds it.
func WithUnreadableBodyAsBadRequest(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
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
