package typed

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func errNotType(obj runtime.Object) error {
	return fmt.Errorf("unexpected object type %T", obj)
}

func metaOf(obj runtime.Object) (metav1.Object, error) {
	return meta.Accessor(obj)
}
