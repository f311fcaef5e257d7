package namespace

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/rest"
)

func Validate(o *corev1.Namespace) field.ErrorList                    { return nil }
func ValidateUpdate(o, old *corev1.Namespace) field.ErrorList         { return nil }
func ValidateStatusUpdate(o, old *corev1.Namespace) field.ErrorList   { return nil }
func ValidateFinalizeUpdate(o, old *corev1.Namespace) field.ErrorList { return nil }
func TableConvertor() rest.TableConvertor {
	return rest.NewDefaultTableConvertor(corev1.Resource("namespaces"))
}
func SetDefaults(o *corev1.Namespace) {}
