package typed

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// AddVersionedAsInternal registers types under gv and, unchanged, under gv's
// group at the internal version: the versioned k8s.io/api type is its own hub
// (docs/architecture.md decision 2), so the apiserver's conversion to the internal
// version is a copy. It also adds the meta/v1 options types to gv.
func AddVersionedAsInternal(scheme *runtime.Scheme, gv schema.GroupVersion, types ...runtime.Object) {
	scheme.AddKnownTypes(gv, types...)
	scheme.AddKnownTypes(schema.GroupVersion{Group: gv.Group, Version: runtime.APIVersionInternal}, types...)
	metav1.AddToGroupVersion(scheme, gv)
}
