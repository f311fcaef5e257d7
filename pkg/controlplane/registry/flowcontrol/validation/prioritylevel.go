package validation

import (
	"fmt"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	flowcontrolv1beta3 "k8s.io/api/flowcontrol/v1beta3"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/util/shufflesharding"

	"github.com/gcp-project/gcp/pkg/controlplane/registry/metavalidation"
)

// ValidatePriorityLevelConfiguration validates a priority level on create
// and update.
func ValidatePriorityLevelConfiguration(pl *flowcontrolv1.PriorityLevelConfiguration) field.ErrorList {
	metaPath := field.NewPath("metadata")
	errs := metavalidation.ValidateObjectMeta(&pl.ObjectMeta, false, apimachineryvalidation.NameIsDNSSubdomain, metaPath)
	// The v1beta3 round-trip annotation never belongs on a stored object.
	if _, ok := pl.Annotations[flowcontrolv1beta3.PriorityLevelPreserveZeroConcurrencySharesKey]; ok {
		errs = append(errs, field.Forbidden(metaPath.Child("annotations"), fmt.Sprintf("annotation '%s' is forbidden", flowcontrolv1beta3.PriorityLevelPreserveZeroConcurrencySharesKey)))
	}
	specPath := field.NewPath("spec")
	errs = append(errs, ValidatePriorityLevelConfigurationSpec(&pl.Spec, pl.Name, specPath)...)
	errs = append(errs, ValidateIfMandatoryPriorityLevelConfigurationObject(pl, specPath)...)
	return append(errs, ValidatePriorityLevelConfigurationStatus(&pl.Status, field.NewPath("status"))...)
}

// ValidatePriorityLevelConfigurationUpdate validates an update of a
// priority level: the new object must be valid.
func ValidatePriorityLevelConfigurationUpdate(pl, old *flowcontrolv1.PriorityLevelConfiguration) field.ErrorList {
	errs := metavalidation.ValidateObjectMetaUpdate(&pl.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	return append(errs, ValidatePriorityLevelConfiguration(pl)...)
}

// ValidatePriorityLevelConfigurationStatusUpdate validates an update
// through prioritylevelconfigurations/status.
func ValidatePriorityLevelConfigurationStatusUpdate(pl, old *flowcontrolv1.PriorityLevelConfiguration) field.ErrorList {
	return ValidatePriorityLevelConfigurationStatus(&pl.Status, field.NewPath("status"))
}

// ValidateIfMandatoryPriorityLevelConfigurationObject keeps the mandatory
// priority levels fixed: 'catch-all' entirely, 'exempt' except its
// spec.exempt, which administrators may tune.
func ValidateIfMandatoryPriorityLevelConfigurationObject(pl *flowcontrolv1.PriorityLevelConfiguration, fldPath *field.Path) field.ErrorList {
	mandatory, ok := MandatoryPriorityLevelConfiguration(pl.Name)
	if !ok {
		return nil
	}
	if pl.Name == flowcontrolv1.PriorityLevelConfigurationNameExempt {
		have := pl.Spec.DeepCopy()
		have.Exempt = mandatory.Spec.Exempt
		if !apiequality.Semantic.DeepEqual(&mandatory.Spec, have) {
			return field.ErrorList{field.Invalid(fldPath, pl.Spec, fmt.Sprintf("spec of '%s' except the 'spec.exempt' field must equal the fixed value", pl.Name))}
		}
		return nil
	}
	if !apiequality.Semantic.DeepEqual(pl.Spec, mandatory.Spec) {
		return field.ErrorList{field.Invalid(fldPath, pl.Spec, fmt.Sprintf("spec of '%s' must equal the fixed value", pl.Name))}
	}
	return nil
}

// ValidatePriorityLevelConfigurationSpec validates a priority level's spec;
// name is the object's name (only 'exempt' is of type Exempt).
func ValidatePriorityLevelConfigurationSpec(spec *flowcontrolv1.PriorityLevelConfigurationSpec, name string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if (name == flowcontrolv1.PriorityLevelConfigurationNameExempt) != (spec.Type == flowcontrolv1.PriorityLevelEnablementExempt) {
		errs = append(errs, field.Invalid(fldPath.Child("type"), spec.Type, "must be 'Exempt' if and only if `name` is 'exempt'"))
	}
	switch spec.Type {
	case flowcontrolv1.PriorityLevelEnablementExempt:
		if spec.Limited != nil {
			errs = append(errs, field.Forbidden(fldPath.Child("limited"), "must be nil if the type is not Limited"))
		}
		if spec.Exempt != nil {
			errs = append(errs, validateExempt(spec.Exempt, fldPath.Child("exempt"))...)
		}
	case flowcontrolv1.PriorityLevelEnablementLimited:
		if spec.Exempt != nil {
			errs = append(errs, field.Forbidden(fldPath.Child("exempt"), "must be nil if the type is Limited"))
		}
		if spec.Limited == nil {
			errs = append(errs, field.Required(fldPath.Child("limited"), "must not be empty when type is Limited"))
		} else {
			errs = append(errs, validateLimited(spec.Limited, fldPath.Child("limited"))...)
		}
	case "":
		errs = append(errs, field.Required(fldPath.Child("type"), ""))
	default:
		errs = append(errs, field.NotSupported(fldPath.Child("type"), spec.Type, supportedPriorityLevelTypes))
	}
	return errs
}

func validateLimited(l *flowcontrolv1.LimitedPriorityLevelConfiguration, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if l.NominalConcurrencyShares != nil && *l.NominalConcurrencyShares < 0 {
		errs = append(errs, field.Invalid(fldPath.Child("nominalConcurrencyShares"), *l.NominalConcurrencyShares, "must be a non-negative integer"))
	}
	errs = append(errs, ValidateLimitResponse(l.LimitResponse, fldPath.Child("limitResponse"))...)
	if l.LendablePercent != nil && (*l.LendablePercent < 0 || *l.LendablePercent > 100) {
		errs = append(errs, field.Invalid(fldPath.Child("lendablePercent"), *l.LendablePercent, "must be between 0 and 100, inclusive"))
	}
	if l.BorrowingLimitPercent != nil && *l.BorrowingLimitPercent < 0 {
		errs = append(errs, field.Invalid(fldPath.Child("borrowingLimitPercent"), *l.BorrowingLimitPercent, "if specified, must be a non-negative integer"))
	}
	return errs
}

func validateExempt(e *flowcontrolv1.ExemptPriorityLevelConfiguration, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if e.NominalConcurrencyShares != nil && *e.NominalConcurrencyShares < 0 {
		errs = append(errs, field.Invalid(fldPath.Child("nominalConcurrencyShares"), *e.NominalConcurrencyShares, "must be a non-negative integer"))
	}
	if e.LendablePercent != nil && (*e.LendablePercent < 0 || *e.LendablePercent > 100) {
		errs = append(errs, field.Invalid(fldPath.Child("lendablePercent"), *e.LendablePercent, "must be between 0 and 100, inclusive"))
	}
	return errs
}

// ValidateLimitResponse validates a limited level's limitResponse: queuing
// is required for Queue and forbidden for Reject.
func ValidateLimitResponse(lr flowcontrolv1.LimitResponse, fldPath *field.Path) field.ErrorList {
	switch lr.Type {
	case flowcontrolv1.LimitResponseTypeReject:
		if lr.Queuing != nil {
			return field.ErrorList{field.Forbidden(fldPath.Child("queuing"), "must be nil if limited.limitResponse.type is not Limited")}
		}
	case flowcontrolv1.LimitResponseTypeQueue:
		if lr.Queuing == nil {
			return field.ErrorList{field.Required(fldPath.Child("queuing"), "must not be empty if limited.limitResponse.type is Limited")}
		}
		return validateQueuing(lr.Queuing, fldPath.Child("queuing"))
	case "":
		return field.ErrorList{field.Required(fldPath.Child("type"), "")}
	default:
		return field.ErrorList{field.NotSupported(fldPath.Child("type"), lr.Type, supportedLimitResponseTypes)}
	}
	return nil
}

// validateQueuing validates the queuing parameters, shuffle sharding's
// deck and hand sizes included.
func validateQueuing(q *flowcontrolv1.QueuingConfiguration, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if q.QueueLengthLimit <= 0 {
		errs = append(errs, field.Invalid(fldPath.Child("queueLengthLimit"), q.QueueLengthLimit, "must be positive"))
	}
	if q.Queues <= 0 {
		errs = append(errs, field.Invalid(fldPath.Child("queues"), q.Queues, "must be positive"))
	} else if q.Queues > MaxQueues {
		errs = append(errs, field.Invalid(fldPath.Child("queues"), q.Queues, fmt.Sprintf("must not be greater than %d", MaxQueues)))
	}
	switch {
	case q.HandSize <= 0:
		errs = append(errs, field.Invalid(fldPath.Child("handSize"), q.HandSize, "must be positive"))
	case q.HandSize > q.Queues:
		errs = append(errs, field.Invalid(fldPath.Child("handSize"), q.HandSize, fmt.Sprintf("should not be greater than queues (%d)", q.Queues)))
	case shufflesharding.RequiredEntropyBits(int(q.Queues), int(q.HandSize)) > shufflesharding.MaxHashBits:
		errs = append(errs, field.Invalid(fldPath.Child("handSize"), q.HandSize,
			fmt.Sprintf("required entropy bits of deckSize %d and handSize %d should not be greater than %d", q.Queues, q.HandSize, shufflesharding.MaxHashBits)))
	}
	return errs
}

// ValidatePriorityLevelConfigurationStatus requires each condition to have
// a type, at most once.
func ValidatePriorityLevelConfigurationStatus(status *flowcontrolv1.PriorityLevelConfigurationStatus, fldPath *field.Path) field.ErrorList {
	types := make([]flowcontrolv1.PriorityLevelConfigurationConditionType, len(status.Conditions))
	for i, c := range status.Conditions {
		types[i] = c.Type
	}
	return validateConditionTypes(types, fldPath.Child("conditions"))
}
