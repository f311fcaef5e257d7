package typed

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// StatusMetadata says what an update through a status subresource keeps of
// the stored object's metadata; upstream's status strategies differ in it.
type StatusMetadata int

const (
	// StatusTakesMetadata takes the metadata as the request sent it, as
	// upstream's namespaces/status and resourcequotas/status do. Server-side
	// apply resets only the spec.
	StatusTakesMetadata StatusMetadata = iota
	// StatusResetsMetadata keeps the stored labels, annotations, finalizers,
	// owner references and the rest of metav1.ResetObjectMetaForStatus, as
	// most of upstream's newer status strategies do. Server-side apply
	// resets metadata and spec.
	StatusResetsMetadata
	// StatusKeepsMetadata keeps all of the stored metadata but
	// managedFields, which record the status writer, as upstream's
	// flowcontrol status strategies do. Server-side apply resets metadata
	// and spec.
	StatusKeepsMetadata
)

// StatusStrategy returns the strategy of a status subresource derived from
// main, the resource's own strategy: an update takes the spec from the
// stored object (keepSpec copies old's spec into obj) and the metadata as
// meta says, is validated by validate, and warns of nothing; server-side
// apply resets, in apiVersion, what the update does not take. The rest of
// main (typer, namespacing, generation from Spec) is kept, so a status
// update never bumps the generation.
func StatusStrategy[T runtime.Object](main *Strategy[T], apiVersion fieldpath.APIVersion, meta StatusMetadata,
	keepSpec func(obj, old T), validate func(obj, old T) field.ErrorList) *Strategy[T] {
	s := *main
	s.PrepareUpdateFn = func(_ context.Context, obj, old T) {
		keepSpec(obj, old)
		switch meta {
		case StatusResetsMetadata:
			metav1.ResetObjectMetaForStatus(objectMeta(obj), objectMeta(old))
		case StatusKeepsMetadata:
			m := objectMeta(obj)
			managedFields := m.ManagedFields
			*m = *objectMeta(old)
			m.ManagedFields = managedFields
		}
	}
	s.ValidateUpdateFn = func(_ context.Context, obj, old T) field.ErrorList { return validate(obj, old) }
	s.WarnUpdate = nil
	reset := fieldpath.NewSet(fieldpath.MakePathOrDie("spec"))
	if meta != StatusTakesMetadata {
		reset.Insert(fieldpath.MakePathOrDie("metadata"))
	}
	s.ResetFields = map[fieldpath.APIVersion]*fieldpath.Set{apiVersion: reset}
	return &s
}

// objectMeta is obj's ObjectMeta; every served type embeds one.
func objectMeta(obj runtime.Object) *metav1.ObjectMeta {
	return obj.(metav1.ObjectMetaAccessor).GetObjectMeta().(*metav1.ObjectMeta)
}
