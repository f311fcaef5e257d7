// Package namespace serves core/v1 namespaces and their status and
// finalize subresources.
package namespace

import (
	corev1 "k8s.io/api/core/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/gcp-project/gcp/pkg/controlplane/registry/metavalidation"
	"github.com/gcp-project/gcp/pkg/controlplane/registry/table"
)

// SetDefaults labels a namespace with its name and sets the Active phase,
// as upstream's SetDefaults_Namespace and SetDefaults_NamespaceStatus.
func SetDefaults(ns *corev1.Namespace) {
	if ns.Name != "" {
		if ns.Labels == nil {
			ns.Labels = map[string]string{}
		}
		ns.Labels[corev1.LabelMetadataName] = ns.Name
	}
	if ns.Status.Phase == "" {
		ns.Status.Phase = corev1.NamespaceActive
	}
}

// Validate validates a new namespace: a DNS label name, valid finalizers.
func Validate(ns *corev1.Namespace) field.ErrorList {
	errs := metavalidation.ValidateObjectMeta(&ns.ObjectMeta, false, apimachineryvalidation.ValidateNamespaceName, field.NewPath("metadata"))
	for i, f := range ns.Spec.Finalizers {
		errs = append(errs, metavalidation.ValidateFinalizerName(string(f), field.NewPath("spec", "finalizers").Index(i))...)
	}
	return errs
}

// ValidateUpdate validates an update of the main resource.
func ValidateUpdate(ns, old *corev1.Namespace) field.ErrorList {
	return metavalidation.ValidateObjectMetaUpdate(&ns.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
}

// ValidateStatusUpdate allows Active only without, and Terminating only
// with, a deletion timestamp.
func ValidateStatusUpdate(ns, old *corev1.Namespace) field.ErrorList {
	errs := metavalidation.ValidateObjectMetaUpdate(&ns.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	if ns.DeletionTimestamp.IsZero() {
		if ns.Status.Phase != corev1.NamespaceActive {
			errs = append(errs, field.Invalid(field.NewPath("status", "Phase"), ns.Status.Phase, "may only be 'Active' if `deletionTimestamp` is empty"))
		}
	} else if ns.Status.Phase != corev1.NamespaceTerminating {
		errs = append(errs, field.Invalid(field.NewPath("status", "Phase"), ns.Status.Phase, "may only be 'Terminating' if `deletionTimestamp` is not empty"))
	}
	return errs
}

// ValidateFinalizeUpdate validates spec.finalizers set through finalize.
func ValidateFinalizeUpdate(ns, old *corev1.Namespace) field.ErrorList {
	errs := metavalidation.ValidateObjectMetaUpdate(&ns.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	for i, f := range ns.Spec.Finalizers {
		errs = append(errs, metavalidation.ValidateFinalizerName(string(f), field.NewPath("spec", "finalizers").Index(i))...)
	}
	return errs
}

// TableConvertor prints NAME STATUS AGE, as kubectl shows namespaces.
func TableConvertor() table.Convertor {
	return table.New([]metav1.TableColumnDefinition{
		table.NameColumn(),
		{Name: "Status", Type: "string", Description: "The status of the namespace"},
		table.AgeColumn(),
	}, func(obj runtime.Object) ([]interface{}, error) {
		ns := obj.(*corev1.Namespace)
		return []interface{}{ns.Name, string(ns.Status.Phase), table.Age(ns.CreationTimestamp)}, nil
	})
}
