package apiserver

import (
	"bytes"
	"context"
	"errors"
	"io"
	"mime"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"

	"github.com/gcp-project/gcp/pkg/controlplane/nesting"
)

// withNestingLimit answers 400 for a request body that nests objects and
// lists more than limit levels deep (nesting.Check), before any handler
// decodes, patches or validates it: parts of that work grow with the square
// of the depth. It reads at most maxBodyBytes+1 of a body; a larger one is
// passed on as it is, for the handler's 413.
func withNestingLimit(next http.Handler, codecs serializer.CodecFactory, limit int, maxBodyBytes int64) http.Handler {
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

// nestingAdmission refuses a created or updated object that nests more than
// limit levels deep, before the validating admission plugins run and
// before it is stored, and otherwise is the admission chain it wraps.
// withNestingLimit bounds what a request sends; this bounds what it makes,
// which a JSON patch's copies and moves can make deeper than anything it
// sends. Kept under the limit, stored objects keep every later request's
// patches cheap. Only objects whose types can hold arbitrary JSON are
// measured: custom resources and CRDs.
type nestingAdmission struct {
	chain admission.Interface
	limit int
}

// withNestingAdmission wraps an admission chain with nestingAdmission.
func withNestingAdmission(chain admission.Interface, limit int) admission.Interface {
	return nestingAdmission{chain: chain, limit: limit}
}

// Handles implements admission.Interface: the check is for creates and
// updates, the chain's plugins for what they say.
func (n nestingAdmission) Handles(op admission.Operation) bool {
	return op == admission.Create || op == admission.Update || n.chain.Handles(op)
}

// Admit implements admission.MutationInterface: the chain's.
func (n nestingAdmission) Admit(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) error {
	if m, ok := n.chain.(admission.MutationInterface); ok && m.Handles(a.GetOperation()) {
		return m.Admit(ctx, a, o)
	}
	return nil
}

// Validate implements admission.ValidationInterface: the depth first, then
// the chain's.
func (n nestingAdmission) Validate(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) error {
	if op := a.GetOperation(); (op == admission.Create || op == admission.Update) && a.GetObject() != nil && n.measured(a) {
		if nesting.ObjectDepth(a.GetObject(), n.limit) > n.limit {
			return apierrors.NewBadRequest((&nesting.Error{Limit: n.limit, Where: "the object this request makes"}).Error())
		}
	}
	if v, ok := n.chain.(admission.ValidationInterface); ok && v.Handles(a.GetOperation()) {
		return v.Validate(ctx, a, o)
	}
	return nil
}

// measured says whether the object of a can nest without bound.
func (n nestingAdmission) measured(a admission.Attributes) bool {
	if _, ok := a.GetObject().(runtime.Unstructured); ok {
		return true
	}
	return a.GetKind().GroupKind() == schema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}
}
