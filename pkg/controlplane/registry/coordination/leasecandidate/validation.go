// Package leasecandidate serves coordination.k8s.io/v1beta1 leasecandidates:
// the candidates for coordinated leader election.
package leasecandidate

import (
	"github.com/blang/semver/v4"
	coordinationv1 "k8s.io/api/coordination/v1"
	coordinationv1beta1 "k8s.io/api/coordination/v1beta1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/gcp-project/gcp/pkg/controlplane/registry/coordination/lease"
)

// Validate validates a new lease candidate as upstream's
// ValidateLeaseCandidate.
func Validate(c *coordinationv1beta1.LeaseCandidate) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMeta(&c.ObjectMeta, true, ValidateName, field.NewPath("metadata"))
	return append(errs, validateSpec(&c.Spec, field.NewPath("spec"))...)
}

// ValidateUpdate validates an update; spec.leaseName is immutable.
func ValidateUpdate(c, old *coordinationv1beta1.LeaseCandidate) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&c.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	errs = append(errs, validateSpec(&c.Spec, field.NewPath("spec"))...)
	return append(errs, apimachineryvalidation.ValidateImmutableField(c.Spec.LeaseName, old.Spec.LeaseName, field.NewPath("spec", "leaseName"))...)
}

// ValidateName accepts the names upstream does for lease candidates: config
// map keys (lease name and identity joined, so dots, dashes and underscores).
func ValidateName(name string, _ bool) []string {
	return validation.IsConfigMapKey(name)
}

func validateSpec(spec *coordinationv1beta1.LeaseCandidateSpec, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if spec.LeaseName == "" {
		errs = append(errs, field.Required(fldPath.Child("leaseName"), ""))
	}

	var emulation semver.Version
	if spec.EmulationVersion != "" {
		v, err := semver.Parse(spec.EmulationVersion)
		if err != nil {
			errs = append(errs, field.Invalid(fldPath.Child("emulationVersion"), spec.EmulationVersion, "must be a valid semantic version"))
		}
		emulation = v
	}
	var binary semver.Version
	if spec.BinaryVersion == "" {
		errs = append(errs, field.Required(fldPath.Child("binaryVersion"), ""))
	} else {
		v, err := semver.Parse(spec.BinaryVersion)
		if err != nil {
			errs = append(errs, field.Invalid(fldPath.Child("binaryVersion"), spec.BinaryVersion, "must be a valid semantic version"))
		}
		binary = v
	}
	if spec.BinaryVersion != "" && spec.EmulationVersion != "" && binary.LT(emulation) {
		errs = append(errs, field.Invalid(fldPath.Child("binaryVersion"), spec.BinaryVersion, "must be greater than or equal to `emulationVersion`"))
	}

	if spec.Strategy == "" {
		errs = append(errs, field.Required(fldPath.Child("strategy"), ""))
	} else {
		if spec.Strategy == coordinationv1.OldestEmulationVersion && emulation.EQ(semver.Version{}) {
			errs = append(errs, field.Required(fldPath.Child("emulationVersion"), "must be specified when `strategy` is 'OldestEmulationVersion'"))
		}
		errs = append(errs, lease.ValidateStrategy(spec.Strategy, fldPath.Child("strategy"))...)
	}
	// pingTime and renewTime are MicroTimes and need no further validation.
	return errs
}
