// Package metavalidation validates object metadata like upstream's core
// validation: k8s.io/apimachinery's rules plus the rule that a finalizer
// name without a "/" must be one of Kubernetes' standard finalizers.
package metavalidation

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func standardFinalizers() sets.Set[string] {
	return sets.New(string(corev1.FinalizerKubernetes), metav1.FinalizerOrphanDependents, metav1.FinalizerDeleteDependents)
}

// ValidateObjectMeta validates meta of a new object.
func ValidateObjectMeta(meta *metav1.ObjectMeta, namespaced bool, nameFn apimachineryvalidation.ValidateNameFunc, fldPath *field.Path) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMeta(meta, namespaced, nameFn, fldPath)
	return append(errs, finalizers(meta.Finalizers, fldPath.Child("finalizers"))...)
}

// ValidateObjectMetaUpdate validates meta of an updated object.
func ValidateObjectMetaUpdate(meta, old *metav1.ObjectMeta, fldPath *field.Path) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(meta, old, fldPath)
	return append(errs, finalizers(meta.Finalizers, fldPath.Child("finalizers"))...)
}

// ValidateFinalizerName validates a finalizer name, standard or qualified.
func ValidateFinalizerName(name string, fldPath *field.Path) field.ErrorList {
	return append(apimachineryvalidation.ValidateFinalizerName(name, fldPath), kubeFinalizerName(name, fldPath)...)
}

// kubeFinalizerName requires a name without "/" to be a standard finalizer.
func kubeFinalizerName(name string, fldPath *field.Path) field.ErrorList {
	if strings.Contains(name, "/") || standardFinalizers().Has(name) {
		return nil
	}
	return field.ErrorList{field.Invalid(fldPath, name, "name is neither a standard finalizer name nor is it fully qualified")}
}

func finalizers(names []string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, name := range names {
		errs = append(errs, kubeFinalizerName(name, fldPath.Index(i))...)
	}
	return errs
}

// DataKeys validates the keys of a configmap's or secret's data map.
func DataKeys[V any](data map[string]V, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for key := range data {
		for _, msg := range validation.IsConfigMapKey(key) {
			errs = append(errs, field.Invalid(fldPath.Key(key), key, msg))
		}
	}
	return errs
}
