package rbac

import (
	rbacv1 "k8s.io/api/rbac/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/api/validation/path"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/gcp-project/gcp/pkg/controlplane/registry/metavalidation"
)

// validateName accepts any name usable as a path segment (colons
// included), as upstream does for RBAC objects.
func validateName(name string, _ bool) []string { return path.IsValidPathSegmentName(name) }

// ValidatePolicyRule validates one rule; namespaced rules (of Roles) may
// not name non-resource URLs.
func ValidatePolicyRule(rule rbacv1.PolicyRule, namespaced bool, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(rule.Verbs) == 0 {
		errs = append(errs, field.Required(fld.Child("verbs"), "verbs must contain at least one value"))
	}
	if len(rule.NonResourceURLs) > 0 {
		if namespaced {
			errs = append(errs, field.Invalid(fld.Child("nonResourceURLs"), rule.NonResourceURLs, "namespaced rules cannot apply to non-resource URLs"))
		}
		if len(rule.APIGroups) > 0 || len(rule.Resources) > 0 || len(rule.ResourceNames) > 0 {
			errs = append(errs, field.Invalid(fld.Child("nonResourceURLs"), rule.NonResourceURLs, "rules cannot apply to both regular resources and non-resource URLs"))
		}
		return errs
	}
	if len(rule.APIGroups) == 0 {
		errs = append(errs, field.Required(fld.Child("apiGroups"), "resource rules must supply at least one api group"))
	}
	if len(rule.Resources) == 0 {
		errs = append(errs, field.Required(fld.Child("resources"), "resource rules must supply at least one resource"))
	}
	return errs
}

func validateRules(rules []rbacv1.PolicyRule, namespaced bool) field.ErrorList {
	var errs field.ErrorList
	for i, r := range rules {
		errs = append(errs, ValidatePolicyRule(r, namespaced, field.NewPath("rules").Index(i))...)
	}
	return errs
}

// ValidateRole validates a Role.
func ValidateRole(r *rbacv1.Role) field.ErrorList {
	errs := metavalidation.ValidateObjectMeta(&r.ObjectMeta, true, validateName, field.NewPath("metadata"))
	return append(errs, validateRules(r.Rules, true)...)
}

// ValidateClusterRole validates a ClusterRole, its aggregation rule too.
func ValidateClusterRole(r *rbacv1.ClusterRole) field.ErrorList {
	errs := metavalidation.ValidateObjectMeta(&r.ObjectMeta, false, validateName, field.NewPath("metadata"))
	errs = append(errs, validateRules(r.Rules, false)...)
	if r.AggregationRule != nil {
		fld := field.NewPath("aggregationRule", "clusterRoleSelectors")
		if len(r.AggregationRule.ClusterRoleSelectors) == 0 {
			errs = append(errs, field.Required(fld, "at least one clusterRoleSelector required if aggregationRule is non-nil"))
		}
		for i := range r.AggregationRule.ClusterRoleSelectors {
			s := &r.AggregationRule.ClusterRoleSelectors[i]
			errs = append(errs, metav1validation.ValidateLabelSelector(s, metav1validation.LabelSelectorValidationOptions{}, fld.Index(i))...)
			if _, err := metav1.LabelSelectorAsSelector(s); err != nil {
				errs = append(errs, field.Invalid(fld.Index(i), s, "invalid label selector."))
			}
		}
	}
	return errs
}

// validateRoleRef checks a binding's roleRef; kinds are the kinds the
// binding may refer to.
func validateRoleRef(ref rbacv1.RoleRef, kinds ...string) field.ErrorList {
	var errs field.ErrorList
	fld := field.NewPath("roleRef")
	if ref.APIGroup != rbacv1.GroupName {
		errs = append(errs, field.NotSupported(fld.Child("apiGroup"), ref.APIGroup, []string{rbacv1.GroupName}))
	}
	kindOK := false
	for _, k := range kinds {
		kindOK = kindOK || ref.Kind == k
	}
	if !kindOK {
		errs = append(errs, field.NotSupported(fld.Child("kind"), ref.Kind, kinds))
	}
	if ref.Name == "" {
		errs = append(errs, field.Required(fld.Child("name"), ""))
	} else {
		for _, msg := range validateName(ref.Name, false) {
			errs = append(errs, field.Invalid(fld.Child("name"), ref.Name, msg))
		}
	}
	return errs
}

// ValidateSubject validates a binding subject; a ServiceAccount in a
// ClusterRoleBinding (not namespaced) needs a namespace.
func ValidateSubject(s rbacv1.Subject, namespaced bool, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.Name == "" {
		errs = append(errs, field.Required(fld.Child("name"), ""))
	}
	switch s.Kind {
	case rbacv1.ServiceAccountKind:
		if s.Name != "" {
			for _, msg := range apimachineryvalidation.ValidateServiceAccountName(s.Name, false) {
				errs = append(errs, field.Invalid(fld.Child("name"), s.Name, msg))
			}
		}
		if s.APIGroup != "" {
			errs = append(errs, field.NotSupported(fld.Child("apiGroup"), s.APIGroup, []string{""}))
		}
		if !namespaced && s.Namespace == "" {
			errs = append(errs, field.Required(fld.Child("namespace"), ""))
		}
	case rbacv1.UserKind, rbacv1.GroupKind:
		if s.APIGroup != rbacv1.GroupName {
			errs = append(errs, field.NotSupported(fld.Child("apiGroup"), s.APIGroup, []string{rbacv1.GroupName}))
		}
	default:
		errs = append(errs, field.NotSupported(fld.Child("kind"), s.Kind, []string{rbacv1.ServiceAccountKind, rbacv1.UserKind, rbacv1.GroupKind}))
	}
	return errs
}

func validateSubjects(subjects []rbacv1.Subject, namespaced bool) field.ErrorList {
	var errs field.ErrorList
	for i, s := range subjects {
		errs = append(errs, ValidateSubject(s, namespaced, field.NewPath("subjects").Index(i))...)
	}
	return errs
}

// ValidateRoleBinding validates a RoleBinding (to a Role or ClusterRole).
func ValidateRoleBinding(b *rbacv1.RoleBinding) field.ErrorList {
	errs := metavalidation.ValidateObjectMeta(&b.ObjectMeta, true, validateName, field.NewPath("metadata"))
	errs = append(errs, validateRoleRef(b.RoleRef, "Role", "ClusterRole")...)
	return append(errs, validateSubjects(b.Subjects, true)...)
}

// ValidateClusterRoleBinding validates a ClusterRoleBinding (to a
// ClusterRole only).
func ValidateClusterRoleBinding(b *rbacv1.ClusterRoleBinding) field.ErrorList {
	errs := metavalidation.ValidateObjectMeta(&b.ObjectMeta, false, validateName, field.NewPath("metadata"))
	errs = append(errs, validateRoleRef(b.RoleRef, "ClusterRole")...)
	return append(errs, validateSubjects(b.Subjects, false)...)
}

// validateRoleRefUnchanged: a binding's roleRef is immutable; delete and
// recreate the binding to point it elsewhere.
func validateRoleRefUnchanged(ref, old rbacv1.RoleRef) field.ErrorList {
	if ref != old {
		return field.ErrorList{field.Invalid(field.NewPath("roleRef"), ref, "cannot change roleRef")}
	}
	return nil
}

// SetSubjectDefaults fills in a subject's apiGroup from its kind.
func SetSubjectDefaults(s *rbacv1.Subject) {
	if s.APIGroup != "" {
		return
	}
	switch s.Kind {
	case rbacv1.UserKind, rbacv1.GroupKind:
		s.APIGroup = rbacv1.GroupName
	}
}

// setBindingDefaults defaults the roleRef's apiGroup and every subject.
func setBindingDefaults(ref *rbacv1.RoleRef, subjects []rbacv1.Subject) {
	if ref.APIGroup == "" {
		ref.APIGroup = rbacv1.GroupName
	}
	for i := range subjects {
		SetSubjectDefaults(&subjects[i])
	}
}
