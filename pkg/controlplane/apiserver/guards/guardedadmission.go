package guards

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"

	"github.com/gcp-project/gcp/pkg/controlplane/nesting"
)

// guardedAdmission is the admission chain with gcp's request guards at the
// seam between mutating and validating admission, where the registry
// validates the object:
//   - when mutating admission is done, an object of any resource with a map
//     key longer than nesting.KeyLength is refused (WithNestingLimit finds
//     long keys in JSON, YAML and CBOR bodies, this in protobuf too), and
//     one whose maps are wider than nesting.Width allows, unless it is no
//     wider than the object it replaces;
//   - then, for a custom resource, the request's evalBudget starts, and it
//     stops when validating admission begins, so the CRD's schema and CEL
//     rules run within it;
//   - before the validating plugins, a custom resource or CRD that nests more
//     than limit levels deep (its managed fields not counted) is refused (a
//     CRD's status subresource, which cannot change its spec, is not
//     measured).
//     WithNestingLimit bounds what a request sends; this bounds what it
//     makes, which a JSON patch's copies and moves can make deeper than
//     anything it sends, and merge patches wider over several requests than
//     any one of them, so stored objects stay under the limits.
type guardedAdmission struct {
	chain admission.Interface
	limit int
}

// WithGuardedAdmission wraps an admission chain with guardedAdmission.
func WithGuardedAdmission(chain admission.Interface, limit int) admission.Interface {
	return guardedAdmission{chain: chain, limit: limit}
}

// Handles implements admission.Interface: the guards are for creates and
// updates, the chain's plugins for what they say.
func (g guardedAdmission) Handles(op admission.Operation) bool {
	return isWrite(op) || g.chain.Handles(op)
}

// Admit implements admission.MutationInterface: the chain's, then an
// object with a key longer than nesting.KeyLength, or wider than
// nesting.Width allows, is refused before the registry validates it (which
// quotes a key into each error, and walks a custom resource's every
// member), then the evaluation budget starts for a custom resource.
func (g guardedAdmission) Admit(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) error {
	if m, ok := g.chain.(admission.MutationInterface); ok && m.Handles(a.GetOperation()) {
		if err := m.Admit(ctx, a, o); err != nil {
			return err
		}
	}
	if isWrite(a.GetOperation()) && a.GetObject() != nil && nesting.ObjectKey(a.GetObject()) > nesting.KeyLength {
		return apierrors.NewBadRequest((&nesting.Error{Limit: g.limit, Where: "the object this request makes", LongKey: true}).Error())
	}
	if isWrite(a.GetOperation()) && a.GetObject() != nil && tooWide(a.GetObject(), a.GetOldObject()) {
		return apierrors.NewBadRequest((&nesting.Error{Limit: g.limit, Where: "the object this request makes", Wide: true}).Error())
	}
	if budget := budgetFrom(ctx); budget != nil && isWrite(a.GetOperation()) && isCustomResource(a) {
		budget.arm(fmt.Sprintf("%s %q", a.GetResource().GroupResource(), a.GetName()))
	}
	return nil
}

// Validate implements admission.ValidationInterface: the budget stops, the
// object's depth is checked, then the chain's.
func (g guardedAdmission) Validate(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) error {
	if budget := budgetFrom(ctx); budget != nil {
		budget.disarm()
	}
	// A CRD's status subresource writes its status alone (the registry
	// keeps the stored spec), whose typed fields nest a few levels: its
	// depth is the stored CRD's, checked when that was written. Converting
	// a CRD of tens of KiB to measure it was a quarter of each status
	// update's CPU, and apiextensions-apiserver's controllers make two or
	// three, one CRD at a time, for every CRD created (issue 38).
	crdSpec := isCRD(a) && a.GetSubresource() == ""
	if isWrite(a.GetOperation()) && a.GetObject() != nil && (isCustomResource(a) || crdSpec) {
		if nesting.ObjectDepth(a.GetObject(), g.limit) > g.limit {
			return apierrors.NewBadRequest((&nesting.Error{Limit: g.limit, Where: "the object this request makes"}).Error())
		}
	}
	if v, ok := g.chain.(admission.ValidationInterface); ok && v.Handles(a.GetOperation()) {
		return v.Validate(ctx, a, o)
	}
	return nil
}

// tooWide says whether obj's maps are wider than nesting.Width allows
// (nesting.ObjectLoad) and wider than old's, the object it replaces, if
// any: an object stored before the limit, or before it was lowered, can
// still be written as long as it does not grow, so that it can be shrunk.
func tooWide(obj, old runtime.Object) bool {
	load := nesting.ObjectLoad(obj)
	if load <= nesting.Width*nesting.Width {
		return false
	}
	return old == nil || nesting.ObjectLoad(old) < load
}

// isWrite says whether op writes an object the guards look at.
func isWrite(op admission.Operation) bool { return op == admission.Create || op == admission.Update }

// isCustomResource says whether a's object is a custom resource (whose
// registry runs CEL rules with the request's context, and whose fields can
// nest without bound).
func isCustomResource(a admission.Attributes) bool {
	_, ok := a.GetObject().(runtime.Unstructured)
	return ok
}

// isCRD says whether a's object is a CustomResourceDefinition, whose schema
// can nest without bound.
func isCRD(a admission.Attributes) bool {
	return a.GetKind().GroupKind() == schema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}
}
