// Package serviceaccount serves core/v1 serviceaccounts.
package serviceaccount

import (
	corev1 "k8s.io/api/core/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/gcp-project/gcp/pkg/controlplane/registry/metavalidation"
	"github.com/gcp-project/gcp/pkg/controlplane/registry/table"
)

// Validate validates a new service account (its metadata, as upstream).
func Validate(sa *corev1.ServiceAccount) field.ErrorList {
	return metavalidation.ValidateObjectMeta(&sa.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
}

// ValidateUpdate validates an update.
func ValidateUpdate(sa, old *corev1.ServiceAccount) field.ErrorList {
	errs := metavalidation.ValidateObjectMetaUpdate(&sa.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	return append(errs, Validate(sa)...)
}

// TableConvertor prints NAME SECRETS AGE, as kubectl shows service accounts.
func TableConvertor() table.Convertor {
	return table.New([]metav1.TableColumnDefinition{
		table.NameColumn(),
		{Name: "Secrets", Type: "string"},
		table.AgeColumn(),
	}, func(obj runtime.Object) ([]interface{}, error) {
		sa := obj.(*corev1.ServiceAccount)
		return []interface{}{sa.Name, int64(len(sa.Secrets)), table.Age(sa.CreationTimestamp)}, nil
	})
}
