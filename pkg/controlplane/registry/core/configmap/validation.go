// Package configmap serves core/v1 configmaps.
package configmap

import (
	"reflect"

	corev1 "k8s.io/api/core/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/gcp-project/gcp/pkg/controlplane/registry/metavalidation"
)

// Validate validates a new configmap as upstream: name, key syntax, no key
// in both data and binaryData, 1 MiB in all.
func Validate(cm *corev1.ConfigMap) field.ErrorList {
	errs := metavalidation.ValidateObjectMeta(&cm.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	errs = append(errs, metavalidation.DataKeys(cm.Data, field.NewPath("data"))...)
	errs = append(errs, metavalidation.DataKeys(cm.BinaryData, field.NewPath("binaryData"))...)
	total := 0
	for key, value := range cm.Data {
		if _, dup := cm.BinaryData[key]; dup {
			errs = append(errs, field.Invalid(field.NewPath("data").Key(key), key, "duplicate of key present in binaryData"))
		}
		total += len(value)
	}
	for _, value := range cm.BinaryData {
		total += len(value)
	}
	if total > corev1.MaxSecretSize {
		errs = append(errs, field.TooLong(field.NewPath(""), "", corev1.MaxSecretSize))
	}
	return errs
}

// ValidateUpdate validates an update: an immutable configmap keeps its data.
func ValidateUpdate(cm, old *corev1.ConfigMap) field.ErrorList {
	errs := metavalidation.ValidateObjectMetaUpdate(&cm.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	if old.Immutable != nil && *old.Immutable {
		if cm.Immutable == nil || !*cm.Immutable {
			errs = append(errs, field.Forbidden(field.NewPath("immutable"), "field is immutable when `immutable` is set"))
		}
		if !reflect.DeepEqual(cm.Data, old.Data) {
			errs = append(errs, field.Forbidden(field.NewPath("data"), "field is immutable when `immutable` is set"))
		}
		if !reflect.DeepEqual(cm.BinaryData, old.BinaryData) {
			errs = append(errs, field.Forbidden(field.NewPath("binaryData"), "field is immutable when `immutable` is set"))
		}
	}
	return append(errs, Validate(cm)...)
}
