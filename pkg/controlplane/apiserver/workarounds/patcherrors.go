package workarounds

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

// patchInputError is the start of a message k8s.io/apiserver answers 500
// with when a PATCH body cannot be applied to the object, although the
// fault is the client's, and where upstream makes it.
type patchInputError struct {
	prefix, upstream string
}

// patchInputErrors are the messages WithPatchInputErrors answers 400 for.
// The handler (pkg/endpoints/handlers/patch.go, v0.37.2) passes them on
// as they are: applyPatcher.applyPatchToCurrentObject returns the field
// manager's error, and applyPatchToObject's interpretStrategicMergePatchError
// makes a 400 of only five of mergepatch's sentinel errors. No issue is open
// upstream for the strategic merge patch messages.
// TestPatchInputErrorTable and test/integration TestPatchInputIsAClientError
// hold them.
var patchInputErrors = []patchInputError{
	{"failed to create typed patch object", "server-side apply with a field of the wrong type or one the schema does not declare: " +
		"k8s.io/apimachinery util/managedfields/internal structuredMergeManager.Apply (kubernetes#139253, kubernetes#122480)"},
	{"unknown patch type", "strategic merge patch with an unknown $patch directive: k8s.io/apimachinery util/mergepatch.ErrBadPatchType"},
	{"expected a ", "strategic merge patch with a directive of the wrong type: util/mergepatch.ErrBadArgType and ErrBadArgKind"},
	{"invalid type for ", "strategic merge patch with a value of the wrong type: util/strategicpatch.InvalidTypeError"},
	{"unable to find api field", "strategic merge patch naming a field the type does not have: util/strategicpatch.FieldNotFoundError"},
}

// WithPatchInputErrors answers 400, with upstream's message, for a PATCH
// that k8s.io/apiserver answers 500 with one of patchInputErrors' messages;
// any other answer passes unchanged.
func WithPatchInputErrors(next http.Handler, codecs serializer.CodecFactory) http.Handler {
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
	for _, e := range patchInputErrors {
		if strings.HasPrefix(msg, e.prefix) || strings.HasPrefix(msg, "Internal error occurred: "+e.prefix) {
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
