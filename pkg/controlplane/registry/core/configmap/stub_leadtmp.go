package configmap

import (
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/rest"
)

var _ = corev1.ConfigMap{}
var _ = coordinationv1.Lease{}

func Validate(o *corev1.ConfigMap) field.ErrorList {
	return apimachineryvalidation.ValidateObjectMeta(&o.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
}
func ValidateUpdate(o, old *corev1.ConfigMap) field.ErrorList { return Validate(o) }
func TableConvertor() rest.TableConvertor                     { return rest.NewDefaultTableConvertor(corev1.Resource("x")) }
func SetDefaults(o *corev1.ConfigMap)                         {}
