// Package storageversion serves internal.apiserver.k8s.io/v1alpha1
// storageversions: which version each API server encodes a resource in.
package storageversion

import (
	"fmt"
	"slices"
	"strings"

	apiserverinternalv1alpha1 "k8s.io/api/apiserverinternal/v1alpha1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Validate validates a new storage version as upstream's
// ValidateStorageVersion.
func Validate(sv *apiserverinternalv1alpha1.StorageVersion) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMeta(&sv.ObjectMeta, false, ValidateName, field.NewPath("metadata"))
	return append(errs, validateStatus(&sv.Status, field.NewPath("status"))...)
}

// ValidateUpdate validates an update of the main resource. The spec is
// empty and the status cannot change there, so, as upstream, nothing
// beyond the object meta checks every update gets is validated.
func ValidateUpdate(sv, old *apiserverinternalv1alpha1.StorageVersion) field.ErrorList {
	return nil
}

// ValidateStatusUpdate validates an update through the status subresource.
func ValidateStatusUpdate(sv, old *apiserverinternalv1alpha1.StorageVersion) field.ErrorList {
	return validateStatus(&sv.Status, field.NewPath("status"))
}

// ValidateName accepts "<group>.<resource>": the group a DNS subdomain, the
// resource a DNS-1035 label (the core group is named "core").
func ValidateName(name string, _ bool) []string {
	idx := strings.LastIndex(name, ".")
	if idx < 0 {
		return []string{"name must be in the form of <group>.<resource>"}
	}
	var errs []string
	for _, msg := range validation.IsDNS1123Subdomain(name[:idx]) {
		errs = append(errs, "the group segment "+msg)
	}
	for _, msg := range validation.IsDNS1035Label(name[idx+1:]) {
		errs = append(errs, "the resource segment "+msg)
	}
	return errs
}

func validateStatus(status *apiserverinternalv1alpha1.StorageVersionStatus, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	ids := sets.New[string]()
	for i, ssv := range status.StorageVersions {
		p := fldPath.Child("storageVersions").Index(i)
		if ids.Has(ssv.APIServerID) {
			errs = append(errs, field.Duplicate(p.Child("apiServerID"), ssv.APIServerID))
		} else {
			ids.Insert(ssv.APIServerID)
		}
		errs = append(errs, validateServerStorageVersion(&ssv, p)...)
	}
	if err := validateCommonVersion(status, fldPath); err != nil {
		errs = append(errs, err)
	}
	return append(errs, validateConditions(status.Conditions, fldPath)...)
}

func validateServerStorageVersion(ssv *apiserverinternalv1alpha1.ServerStorageVersion, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range apimachineryvalidation.NameIsDNSSubdomain(ssv.APIServerID, false) {
		errs = append(errs, field.Invalid(fldPath.Child("apiServerID"), ssv.APIServerID, msg))
	}
	if msgs := apiVersionErrors(ssv.EncodingVersion); len(msgs) > 0 {
		errs = append(errs, field.Invalid(fldPath.Child("encodingVersion"), ssv.EncodingVersion, strings.Join(msgs, ",")))
	}
	for i, dv := range ssv.DecodableVersions {
		if msgs := apiVersionErrors(dv); len(msgs) > 0 {
			errs = append(errs, field.Invalid(fldPath.Child("decodableVersions").Index(i), dv, strings.Join(msgs, ",")))
		}
	}
	if !slices.Contains(ssv.DecodableVersions, ssv.EncodingVersion) {
		errs = append(errs, field.Invalid(fldPath.Child("decodableVersions"), ssv.DecodableVersions,
			fmt.Sprintf("decodableVersions must include encodingVersion %s", ssv.EncodingVersion)))
	}
	for i, sv := range ssv.ServedVersions {
		if msgs := apiVersionErrors(sv); len(msgs) > 0 {
			errs = append(errs, field.Invalid(fldPath.Child("servedVersions").Index(i), sv, strings.Join(msgs, ",")))
		}
		if !slices.Contains(ssv.DecodableVersions, sv) {
			errs = append(errs, field.Invalid(fldPath.Child("servedVersions").Index(i), sv,
				fmt.Sprintf("individual served version : %s must be included in decodableVersions : %s", sv, ssv.DecodableVersions)))
		}
	}
	return errs
}

// commonVersion is the encoding version every server reports, or nil when
// they disagree or none reports.
func commonVersion(versions []apiserverinternalv1alpha1.ServerStorageVersion) *string {
	if len(versions) == 0 {
		return nil
	}
	common := versions[0].EncodingVersion
	for _, v := range versions[1:] {
		if v.EncodingVersion != common {
			return nil
		}
	}
	return &common
}

func validateCommonVersion(status *apiserverinternalv1alpha1.StorageVersionStatus, fldPath *field.Path) *field.Error {
	actual := commonVersion(status.StorageVersions)
	claimed := status.CommonEncodingVersion
	p := fldPath.Child("commonEncodingVersion")
	switch {
	case actual == nil && claimed == nil:
		return nil
	case actual == nil:
		return field.Invalid(p, *claimed, "should be nil if servers do not agree on the same encoding version, or if there is no server reporting the supported versions yet")
	case claimed == nil:
		return field.Invalid(p, claimed, fmt.Sprintf("the common encoding version is %s", *actual))
	case *actual != *claimed:
		return field.Invalid(p, *claimed, fmt.Sprintf("the actual common encoding version is %s", *actual))
	}
	return nil
}

// validateConditions checks that condition types are unique qualified
// names, statuses qualified names, and reason and message set. As upstream,
// the paths are status[i].type etc. (without "conditions"); upstream does
// not check the type or status against a fixed list, to allow new ones.
func validateConditions(conditions []apiserverinternalv1alpha1.StorageVersionCondition, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := map[apiserverinternalv1alpha1.StorageVersionConditionType]int{}
	for i, c := range conditions {
		p := fldPath.Index(i)
		if first, ok := seen[c.Type]; ok {
			errs = append(errs, field.Invalid(p.Child("type"), string(c.Type),
				fmt.Sprintf("the type of the condition is not unique, it also appears in conditions[%d]", first)))
		}
		seen[c.Type] = i
		errs = append(errs, qualifiedName(string(c.Type), p.Child("type"))...)
		errs = append(errs, qualifiedName(string(c.Status), p.Child("status"))...)
		if c.Reason == "" {
			errs = append(errs, field.Required(p.Child("reason"), ""))
		}
		if c.Message == "" {
			errs = append(errs, field.Required(p.Child("message"), ""))
		}
	}
	return errs
}

// qualifiedName is upstream's core ValidateQualifiedName.
func qualifiedName(value string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsQualifiedName(value) {
		errs = append(errs, field.Invalid(fldPath, value, msg))
	}
	return errs
}

const (
	dns1035LabelFmt    = "[a-z]([-a-z0-9]*[a-z0-9])?"
	dns1035LabelErrMsg = "a DNS-1035 label, which must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character"
)

// apiVersionErrors checks an apiVersion: a DNS-1035 label version with an
// optional DNS subdomain group and '/' in front.
func apiVersionErrors(apiVersion string) []string {
	var errs []string
	parts := strings.Split(apiVersion, "/")
	var version string
	switch len(parts) {
	case 1:
		version = parts[0]
	case 2:
		group := parts[0]
		version = parts[1]
		if group == "" {
			errs = append(errs, "group part: "+validation.EmptyError())
		} else {
			for _, msg := range validation.IsDNS1123Subdomain(group) {
				errs = append(errs, "group part: "+msg)
			}
		}
	default:
		return []string{"an apiVersion is " + validation.RegexError(dns1035LabelErrMsg, dns1035LabelFmt, "my-name", "abc-123") +
			" with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyVersion')"}
	}
	if version == "" {
		errs = append(errs, "version part: "+validation.EmptyError())
	} else {
		for _, msg := range validation.IsDNS1035Label(version) {
			errs = append(errs, "version part: "+msg)
		}
	}
	return errs
}
