// Package validation validates flowcontrol.apiserver.k8s.io/v1 FlowSchemas
// and PriorityLevelConfigurations like upstream's
// pkg/apis/flowcontrol/validation: same rules, messages and field paths,
// including the rule that the mandatory objects of the bootstrap
// configuration keep their fixed spec.
package validation

import (
	"fmt"
	"slices"
	"strings"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap"

	"github.com/gcp-project/gcp/pkg/controlplane/registry/flowcontrol/defaults"
	"github.com/gcp-project/gcp/pkg/controlplane/registry/metavalidation"
)

// MaxQueues is the largest spec.limited.limitResponse.queuing.queues.
const MaxQueues int32 = 10 * 1000 * 1000

const nsErrIntro = "each member of this list must be '*' or a DNS-1123 label; "

var (
	supportedDistinguisherMethods = []string{string(flowcontrolv1.FlowDistinguisherMethodByNamespaceType), string(flowcontrolv1.FlowDistinguisherMethodByUserType)}
	supportedVerbs                = []string{"create", "delete", "deletecollection", "get", "list", "patch", "proxy", "update", "watch"}
	supportedSubjectKinds         = []string{string(flowcontrolv1.SubjectKindGroup), string(flowcontrolv1.SubjectKindServiceAccount), string(flowcontrolv1.SubjectKindUser)}
	supportedPriorityLevelTypes   = []string{string(flowcontrolv1.PriorityLevelEnablementExempt), string(flowcontrolv1.PriorityLevelEnablementLimited)}
	supportedLimitResponseTypes   = []string{string(flowcontrolv1.LimitResponseTypeQueue), string(flowcontrolv1.LimitResponseTypeReject)}
)

// MandatoryFlowSchema returns a defaulted copy of the mandatory FlowSchema
// called name, if there is one.
func MandatoryFlowSchema(name string) (*flowcontrolv1.FlowSchema, bool) {
	for _, fs := range bootstrap.MandatoryFlowSchemas {
		if fs.Name == name {
			out := fs.DeepCopy()
			defaults.FlowSchema(out)
			return out, true
		}
	}
	return nil, false
}

// MandatoryPriorityLevelConfiguration returns a defaulted copy of the
// mandatory priority level called name, if there is one.
func MandatoryPriorityLevelConfiguration(name string) (*flowcontrolv1.PriorityLevelConfiguration, bool) {
	for _, pl := range bootstrap.MandatoryPriorityLevelConfigurations {
		if pl.Name == name {
			out := pl.DeepCopy()
			defaults.PriorityLevelConfiguration(out)
			return out, true
		}
	}
	return nil, false
}

// ValidateFlowSchema validates a FlowSchema on create and update.
func ValidateFlowSchema(fs *flowcontrolv1.FlowSchema) field.ErrorList {
	errs := metavalidation.ValidateObjectMeta(&fs.ObjectMeta, false, apimachineryvalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	specPath := field.NewPath("spec")
	errs = append(errs, ValidateFlowSchemaSpec(fs.Name, &fs.Spec, specPath)...)
	if mandatory, ok := MandatoryFlowSchema(fs.Name); ok && !apiequality.Semantic.DeepEqual(fs.Spec, mandatory.Spec) {
		errs = append(errs, field.Invalid(specPath, fs.Spec, fmt.Sprintf("spec of '%s' must equal the fixed value", fs.Name)))
	}
	return append(errs, ValidateFlowSchemaStatus(&fs.Status, field.NewPath("status"))...)
}

// ValidateFlowSchemaUpdate validates an update of a FlowSchema: the new
// object must be valid.
func ValidateFlowSchemaUpdate(fs, old *flowcontrolv1.FlowSchema) field.ErrorList {
	errs := metavalidation.ValidateObjectMetaUpdate(&fs.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	return append(errs, ValidateFlowSchema(fs)...)
}

// ValidateFlowSchemaStatusUpdate validates an update through
// flowschemas/status.
func ValidateFlowSchemaStatusUpdate(fs, old *flowcontrolv1.FlowSchema) field.ErrorList {
	return ValidateFlowSchemaStatus(&fs.Status, field.NewPath("status"))
}

// ValidateFlowSchemaSpec validates a FlowSchema's spec; fsName is the
// object's name (only 'exempt' may have matchingPrecedence 1).
func ValidateFlowSchemaSpec(fsName string, spec *flowcontrolv1.FlowSchemaSpec, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if spec.MatchingPrecedence <= 0 {
		errs = append(errs, field.Invalid(fldPath.Child("matchingPrecedence"), spec.MatchingPrecedence, "must be a positive value"))
	}
	if spec.MatchingPrecedence > flowcontrolv1.FlowSchemaMaxMatchingPrecedence {
		errs = append(errs, field.Invalid(fldPath.Child("matchingPrecedence"), spec.MatchingPrecedence, fmt.Sprintf("must not be greater than %v", flowcontrolv1.FlowSchemaMaxMatchingPrecedence)))
	}
	if spec.MatchingPrecedence == 1 && fsName != flowcontrolv1.FlowSchemaNameExempt {
		errs = append(errs, field.Invalid(fldPath.Child("matchingPrecedence"), spec.MatchingPrecedence, "only the schema named 'exempt' may have matchingPrecedence 1"))
	}
	if spec.DistinguisherMethod != nil && !slices.Contains(supportedDistinguisherMethods, string(spec.DistinguisherMethod.Type)) {
		errs = append(errs, field.NotSupported(fldPath.Child("distinguisherMethod", "type"), spec.DistinguisherMethod.Type, supportedDistinguisherMethods))
	}
	plPath := fldPath.Child("priorityLevelConfiguration", "name")
	if name := spec.PriorityLevelConfiguration.Name; name != "" {
		for _, msg := range apimachineryvalidation.NameIsDNSSubdomain(name, false) {
			errs = append(errs, field.Invalid(plPath, name, msg))
		}
	} else {
		errs = append(errs, field.Required(plPath, "must reference a priority level"))
	}
	for i := range spec.Rules {
		errs = append(errs, validatePolicyRulesWithSubjects(&spec.Rules[i], fldPath.Child("rules").Index(i))...)
	}
	return errs
}

func validatePolicyRulesWithSubjects(rule *flowcontrolv1.PolicyRulesWithSubjects, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(rule.Subjects) == 0 {
		errs = append(errs, field.Required(fldPath.Child("subjects"), "subjects must contain at least one value"))
	}
	for i := range rule.Subjects {
		errs = append(errs, validateSubject(&rule.Subjects[i], fldPath.Child("subjects").Index(i))...)
	}
	if len(rule.ResourceRules) == 0 && len(rule.NonResourceRules) == 0 {
		errs = append(errs, field.Required(fldPath, "at least one of resourceRules and nonResourceRules has to be non-empty"))
	}
	for i := range rule.ResourceRules {
		errs = append(errs, validateResourcePolicyRule(&rule.ResourceRules[i], fldPath.Child("resourceRules").Index(i))...)
	}
	for i := range rule.NonResourceRules {
		errs = append(errs, validateNonResourcePolicyRule(&rule.NonResourceRules[i], fldPath.Child("nonResourceRules").Index(i))...)
	}
	return errs
}

// validateSubject requires the member matching kind and forbids the others.
func validateSubject(s *flowcontrolv1.Subject, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	forbidUser := func() {
		if s.User != nil {
			errs = append(errs, field.Forbidden(fldPath.Child("user"), "user is forbidden when subject kind is not 'User'"))
		}
	}
	forbidGroup := func() {
		if s.Group != nil {
			errs = append(errs, field.Forbidden(fldPath.Child("group"), "group is forbidden when subject kind is not 'Group'"))
		}
	}
	forbidServiceAccount := func() {
		if s.ServiceAccount != nil {
			errs = append(errs, field.Forbidden(fldPath.Child("serviceAccount"), "serviceAccount is forbidden when subject kind is not 'ServiceAccount'"))
		}
	}
	switch s.Kind {
	case flowcontrolv1.SubjectKindServiceAccount:
		errs = append(errs, validateServiceAccountSubject(s.ServiceAccount, fldPath.Child("serviceAccount"))...)
		forbidUser()
		forbidGroup()
	case flowcontrolv1.SubjectKindUser:
		if s.User == nil {
			errs = append(errs, field.Required(fldPath.Child("user"), "user is required when subject kind is 'User'"))
		} else if s.User.Name == "" {
			errs = append(errs, field.Required(fldPath.Child("user", "name"), ""))
		}
		forbidServiceAccount()
		forbidGroup()
	case flowcontrolv1.SubjectKindGroup:
		if s.Group == nil {
			errs = append(errs, field.Required(fldPath.Child("group"), "group is required when subject kind is 'Group'"))
		} else if s.Group.Name == "" {
			errs = append(errs, field.Required(fldPath.Child("group", "name"), ""))
		}
		forbidServiceAccount()
		forbidUser()
	default:
		errs = append(errs, field.NotSupported(fldPath.Child("kind"), s.Kind, supportedSubjectKinds))
	}
	return errs
}

func validateServiceAccountSubject(s *flowcontrolv1.ServiceAccountSubject, fldPath *field.Path) field.ErrorList {
	if s == nil {
		return field.ErrorList{field.Required(fldPath, "serviceAccount is required when subject kind is 'ServiceAccount'")}
	}
	var errs field.ErrorList
	if s.Name == "" {
		errs = append(errs, field.Required(fldPath.Child("name"), ""))
	} else if s.Name != flowcontrolv1.NameAll {
		for _, msg := range apimachineryvalidation.ValidateServiceAccountName(s.Name, false) {
			errs = append(errs, field.Invalid(fldPath.Child("name"), s.Name, msg))
		}
	}
	if s.Namespace == "" {
		errs = append(errs, field.Required(fldPath.Child("namespace"), "must specify namespace for service account"))
	} else {
		for _, msg := range apimachineryvalidation.ValidateNamespaceName(s.Namespace, false) {
			errs = append(errs, field.Invalid(fldPath.Child("namespace"), s.Namespace, msg))
		}
	}
	return errs
}

// validateVerbs requires verbs: '*' alone, or supported verbs.
func validateVerbs(verbs []string, fldPath *field.Path) field.ErrorList {
	switch {
	case len(verbs) == 0:
		return field.ErrorList{field.Required(fldPath, "verbs must contain at least one value")}
	case slices.Contains(verbs, "*"):
		if len(verbs) > 1 {
			return field.ErrorList{field.Invalid(fldPath, verbs, "if '*' is present, must not specify other verbs")}
		}
	case !sets.New(supportedVerbs...).HasAll(verbs...):
		return field.ErrorList{field.NotSupported(fldPath, verbs, supportedVerbs)}
	}
	return nil
}

func validateNonResourcePolicyRule(rule *flowcontrolv1.NonResourcePolicyRule, fldPath *field.Path) field.ErrorList {
	errs := validateVerbs(rule.Verbs, fldPath.Child("verbs"))
	urlsPath := fldPath.Child("nonResourceURLs")
	switch {
	case len(rule.NonResourceURLs) == 0:
		errs = append(errs, field.Required(urlsPath, "nonResourceURLs must contain at least one value"))
	case slices.Contains(rule.NonResourceURLs, "*"):
		if len(rule.NonResourceURLs) > 1 {
			errs = append(errs, field.Invalid(urlsPath, rule.NonResourceURLs, "if '*' is present, must not specify other non-resource URLs"))
		}
	default:
		for i, url := range rule.NonResourceURLs {
			if err := ValidateNonResourceURLPath(url, urlsPath.Index(i)); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errs
}

func validateResourcePolicyRule(rule *flowcontrolv1.ResourcePolicyRule, fldPath *field.Path) field.ErrorList {
	errs := validateVerbs(rule.Verbs, fldPath.Child("verbs"))
	if len(rule.APIGroups) == 0 {
		errs = append(errs, field.Required(fldPath.Child("apiGroups"), "resource rules must supply at least one api group"))
	} else if len(rule.APIGroups) > 1 && slices.Contains(rule.APIGroups, "*") {
		errs = append(errs, field.Invalid(fldPath.Child("apiGroups"), rule.APIGroups, "if '*' is present, must not specify other api groups"))
	}
	if len(rule.Resources) == 0 {
		errs = append(errs, field.Required(fldPath.Child("resources"), "resource rules must supply at least one resource"))
	} else if len(rule.Resources) > 1 && slices.Contains(rule.Resources, "*") {
		errs = append(errs, field.Invalid(fldPath.Child("resources"), rule.Resources, "if '*' is present, must not specify other resources"))
	}
	nsPath := fldPath.Child("namespaces")
	switch {
	case len(rule.Namespaces) == 0 && !rule.ClusterScope:
		errs = append(errs, field.Required(nsPath, "resource rules that are not cluster scoped must supply at least one namespace"))
	case slices.Contains(rule.Namespaces, "*"):
		if len(rule.Namespaces) > 1 {
			errs = append(errs, field.Invalid(nsPath, rule.Namespaces, "if '*' is present, must not specify other namespaces"))
		}
	default:
		for i, ns := range rule.Namespaces {
			for _, msg := range apimachineryvalidation.ValidateNamespaceName(ns, false) {
				errs = append(errs, field.Invalid(nsPath.Index(i), ns, nsErrIntro+msg))
			}
		}
	}
	return errs
}

// ValidateNonResourceURLPath validates a non-resource URL of a rule: "/" or
// a path starting with a slash, without white-space or double slashes,
// whose only wildcard is a trailing "/*".
func ValidateNonResourceURLPath(path string, fldPath *field.Path) *field.Error {
	switch {
	case path == "":
		return field.Invalid(fldPath, path, "must not be empty")
	case path == "/":
		return nil
	case !strings.HasPrefix(path, "/"):
		return field.Invalid(fldPath, path, "must start with slash")
	case strings.Contains(path, " "):
		return field.Invalid(fldPath, path, "must not contain white-space")
	case strings.Contains(path, "//"):
		return field.Invalid(fldPath, path, "must not contain double slash")
	}
	if n := strings.Count(path, "*"); n > 1 || (n == 1 && !strings.HasSuffix(path, "/*")) {
		return field.Invalid(fldPath, path, "wildcard can only do suffix matching")
	}
	return nil
}

// ValidateFlowSchemaStatus requires each condition to have a type, at most
// once.
func ValidateFlowSchemaStatus(status *flowcontrolv1.FlowSchemaStatus, fldPath *field.Path) field.ErrorList {
	types := make([]flowcontrolv1.FlowSchemaConditionType, len(status.Conditions))
	for i, c := range status.Conditions {
		types[i] = c.Type
	}
	return validateConditionTypes(types, fldPath.Child("conditions"))
}

// validateConditionTypes requires each of a status's condition types
// (the ith at conditions[i].type) to be set, and no two the same.
func validateConditionTypes[T ~string](types []T, conditions *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := sets.New[T]()
	for i, t := range types {
		path := conditions.Index(i).Child("type")
		if seen.Has(t) {
			errs = append(errs, field.Duplicate(path, t))
		}
		seen.Insert(t)
		if t == "" {
			errs = append(errs, field.Required(path, ""))
		}
	}
	return errs
}
