// Package lease serves coordination.k8s.io/v1 leases.
package lease

import (
	"slices"
	"strings"

	coordinationv1 "k8s.io/api/coordination/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/gcp-project/gcp/pkg/controlplane/registry/table"
)

// Validate validates a new lease as upstream's coordination validation.
func Validate(l *coordinationv1.Lease) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMeta(&l.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	return append(errs, validateSpec(&l.Spec, field.NewPath("spec"))...)
}

// ValidateUpdate validates an update.
func ValidateUpdate(l, old *coordinationv1.Lease) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&l.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	return append(errs, validateSpec(&l.Spec, field.NewPath("spec"))...)
}

func validateSpec(spec *coordinationv1.LeaseSpec, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if d := spec.LeaseDurationSeconds; d != nil && *d <= 0 {
		errs = append(errs, field.Invalid(fldPath.Child("leaseDurationSeconds"), d, "must be greater than 0"))
	}
	if t := spec.LeaseTransitions; t != nil && *t < 0 {
		errs = append(errs, field.Invalid(fldPath.Child("leaseTransitions"), t, "must be greater than or equal to 0"))
	}
	if spec.Strategy != nil {
		errs = append(errs, ValidateStrategy(*spec.Strategy, fldPath.Child("strategy"))...)
	}
	if spec.PreferredHolder != nil && *spec.PreferredHolder != "" && (spec.Strategy == nil || *spec.Strategy == "") {
		errs = append(errs, field.Forbidden(fldPath.Child("preferredHolder"), "may only be specified if `strategy` is defined"))
	}
	return errs
}

// ValidateStrategy validates the strategy of a lease or lease candidate
// as upstream's ValidateCoordinatedLeaseStrategy: a strategy Kubernetes
// defines, or a qualified name (example.com/mine). Like upstream, it reports
// its errors one level below fldPath (spec.strategy.strategy).
func ValidateStrategy(strategy coordinationv1.CoordinatedLeaseStrategy, fldPath *field.Path) field.ErrorList {
	valid := []coordinationv1.CoordinatedLeaseStrategy{coordinationv1.OldestEmulationVersion}
	if !strings.Contains(string(strategy), "/") {
		if !slices.Contains(valid, strategy) {
			return field.ErrorList{field.NotSupported(fldPath.Child("strategy"), strategy, valid)}
		}
		return nil
	}
	var errs field.ErrorList
	for _, msg := range validation.IsQualifiedName(string(strategy)) {
		errs = append(errs, field.Invalid(fldPath.Child("strategy"), strategy, msg))
	}
	return errs
}

// TableConvertor prints NAME HOLDER AGE, as kubectl shows leases.
func TableConvertor() table.Convertor {
	return table.New([]metav1.TableColumnDefinition{
		table.NameColumn(),
		{Name: "Holder", Type: "string", Description: "The holder of the lease"},
		table.AgeColumn(),
	}, func(obj runtime.Object) ([]interface{}, error) {
		l := obj.(*coordinationv1.Lease)
		holder := ""
		if l.Spec.HolderIdentity != nil {
			holder = *l.Spec.HolderIdentity
		}
		return []interface{}{l.Name, holder, table.Age(l.CreationTimestamp)}, nil
	})
}
