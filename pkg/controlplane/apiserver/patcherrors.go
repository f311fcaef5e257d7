package apiserver

import (
	"bytes"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	"k8s.io/apiserver/pkg/endpoints/responsewriter"
)

// patchInputErrors are the starts of the messages k8s.io/apiserver answers
// 500 with when a PATCH body cannot be applied to the object, although the
// fault is the client's: a server-side apply patch with a field of the
// wrong type or one the schema does not declare, and a strategic merge
// patch with an unknown $patch directive or a directive of the wrong type.
var patchInputErrors = []string{
	"failed to create typed patch object",
	"unknown patch type",
	"expected a ",
	"invalid type for ",
	"unable to find api field",
}

// withPatchInputErrors answers 400 instead of 500 for a PATCH whose body
// could not be applied for one of patchInputErrors, with the same message
// (which names the field). Other 500s, and every other request, pass as
// they are.
func withPatchInputErrors(next http.Handler, codecs serializer.CodecFactory) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPatch {
			next.ServeHTTP(w, r)
			return
		}
		capture := &internalErrorCapture{ResponseWriter: w}
		next.ServeHTTP(responsewriter.WrapForHTTP1Or2(capture), r)
		if !capture.captured {
			return
		}
		status := &metav1.Status{}
		if _, _, err := codecs.UniversalDeserializer().Decode(capture.body.Bytes(), nil, status); err == nil && isPatchInputError(status.Message) {
			responsewriters.ErrorNegotiated(apierrors.NewBadRequest(status.Message), codecs, schema.GroupVersion{Version: "v1"}, w, r)
			return
		}
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = w.Write(capture.body.Bytes())
	})
}

func isPatchInputError(msg string) bool {
	for _, prefix := range patchInputErrors {
		if strings.HasPrefix(msg, prefix) || strings.HasPrefix(msg, "Internal error occurred: "+prefix) {
			return true
		}
	}
	return false
}

// internalErrorCapture holds back a 500 response (status and body) so the
// filter can look at it; anything else goes through at once.
type internalErrorCapture struct {
	http.ResponseWriter
	captured, wroteHeader bool
	body                  bytes.Buffer
}

func (c *internalErrorCapture) Unwrap() http.ResponseWriter { return c.ResponseWriter }

func (c *internalErrorCapture) WriteHeader(code int) {
	if c.wroteHeader {
		return
	}
	c.wroteHeader = true
	if code == http.StatusInternalServerError {
		c.captured = true
		return
	}
	c.ResponseWriter.WriteHeader(code)
}

func (c *internalErrorCapture) Write(p []byte) (int, error) {
	if !c.wroteHeader {
		c.WriteHeader(http.StatusOK)
	}
	if c.captured {
		return c.body.Write(p)
	}
	return c.ResponseWriter.Write(p)
}
