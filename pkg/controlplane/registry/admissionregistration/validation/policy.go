package validation

import (
	"fmt"
	"regexp"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	validatingpolicy "k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/client-go/util/jsonpath"
)

const (
	maxAuditAnnotations = 20
	// maxAuditAnnotationValueExpressionLength is below the 10kB limit of
	// an audit annotation's value, since a concatenating expression
	// often yields a longer value than itself.
	maxAuditAnnotationValueExpressionLength = 5 * 1024
)

var supportedValidationPolicyReasons = sets.New(
	string(metav1.StatusReasonForbidden),
	string(metav1.StatusReasonInvalid),
	string(metav1.StatusReasonRequestEntityTooLarge),
)

// policyOptions says how to validate a policy's spec on create or update.
type policyOptions struct {
	// ignoreMatchConditions skips match conditions an update left as
	// they were (with the same paramKind).
	ignoreMatchConditions bool
	// preexisting are the old object's expressions by kind, compiled in
	// the stored-expressions environment.
	preexisting preexisting
}

type preexisting struct {
	matchConditions, validations, messageExpressions, auditAnnotations, applyConfigurations, jsonPatches sets.Set[string]
}

func newPreexisting() preexisting {
	return preexisting{sets.New[string](), sets.New[string](), sets.New[string](), sets.New[string](), sets.New[string](), sets.New[string]()}
}

// ValidateValidatingAdmissionPolicy validates a new policy.
func ValidateValidatingAdmissionPolicy(p *admissionregistrationv1.ValidatingAdmissionPolicy) field.ErrorList {
	return validateValidatingAdmissionPolicy(p, policyOptions{preexisting: newPreexisting()})
}

// ValidateValidatingAdmissionPolicyUpdate validates an update of a policy;
// expressions the old policy had compile in the stored environment.
func ValidateValidatingAdmissionPolicyUpdate(p, old *admissionregistrationv1.ValidatingAdmissionPolicy) field.ErrorList {
	pre := newPreexisting()
	for _, mc := range old.Spec.MatchConditions {
		pre.matchConditions.Insert(mc.Expression)
	}
	for _, v := range old.Spec.Validations {
		pre.validations.Insert(v.Expression)
		if v.MessageExpression != "" {
			pre.messageExpressions.Insert(v.MessageExpression)
		}
	}
	for _, a := range old.Spec.AuditAnnotations {
		pre.auditAnnotations.Insert(a.ValueExpression)
	}
	return validateValidatingAdmissionPolicy(p, policyOptions{
		ignoreMatchConditions: apiequality.Semantic.DeepEqual(p.Spec.ParamKind, old.Spec.ParamKind) &&
			apiequality.Semantic.DeepEqual(p.Spec.MatchConditions, old.Spec.MatchConditions),
		preexisting: pre,
	})
}

// ValidateValidatingAdmissionPolicyStatusUpdate validates the status an
// update through validatingadmissionpolicies/status writes.
func ValidateValidatingAdmissionPolicyStatusUpdate(p, _ *admissionregistrationv1.ValidatingAdmissionPolicy) field.ErrorList {
	fldPath := field.NewPath("status")
	var errs field.ErrorList
	if tc := p.Status.TypeChecking; tc != nil {
		for i, w := range tc.ExpressionWarnings {
			p := fldPath.Child("typeChecking", "expressionWarnings").Index(i)
			if w.Warning == "" {
				errs = append(errs, field.Required(p.Child("warning"), ""))
			}
			errs = append(errs, validateFieldRef(w.FieldRef, p.Child("fieldRef"))...)
		}
	}
	return append(errs, metav1validation.ValidateConditions(p.Status.Conditions, fldPath.Child("conditions"))...)
}

// validateFieldRef requires a JSONPath.
func validateFieldRef(fieldRef string, fldPath *field.Path) field.ErrorList {
	fieldRef = strings.TrimSpace(fieldRef)
	if fieldRef == "" {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	if err := jsonpath.New("spec").Parse(fmt.Sprintf("{%s}", fieldRef)); err != nil {
		return field.ErrorList{field.Invalid(fldPath, fieldRef, fmt.Sprintf("invalid JSONPath: %v", err))}
	}
	return nil
}

func validateValidatingAdmissionPolicy(p *admissionregistrationv1.ValidatingAdmissionPolicy, opts policyOptions) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMeta(&p.ObjectMeta, false, apimachineryvalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	spec := &p.Spec
	fldPath := field.NewPath("spec")
	// A policy with variables needs a compiler of its own that remembers
	// them; made on first use.
	var compiler plugincel.Compiler
	getCompiler := func() plugincel.Compiler {
		if compiler == nil {
			compiler = newCompiler(len(spec.Variables) > 0)
		}
		return compiler
	}
	errs = append(errs, validateFailurePolicy(spec.FailurePolicy, fldPath.Child("failurePolicy"))...)
	hasParams := spec.ParamKind != nil
	if hasParams {
		errs = append(errs, validateParamKind(*spec.ParamKind, fldPath.Child("paramKind"))...)
	}
	errs = append(errs, validateMatchConstraints(spec.MatchConstraints, fldPath.Child("matchConstraints"))...)
	if !opts.ignoreMatchConditions {
		errs = append(errs, validateMatchConditions(spec.MatchConditions, matchConditionOptions{allowParams: hasParams, preexisting: opts.preexisting.matchConditions}, fldPath.Child("matchConditions"))...)
	}
	for i := range spec.Variables {
		errs = append(errs, validateVariable(getCompiler(), &spec.Variables[i], hasParams, opts.preexisting.validations, fldPath.Child("variables").Index(i))...)
	}
	if len(spec.Validations) == 0 && len(spec.AuditAnnotations) == 0 {
		errs = append(errs,
			field.Required(fldPath.Child("validations"), "validations or auditAnnotations must contain at least one item"),
			field.Required(fldPath.Child("auditAnnotations"), "validations or auditAnnotations must contain at least one item"))
		return errs
	}
	for i := range spec.Validations {
		errs = append(errs, validateValidation(getCompiler(), &spec.Validations[i], hasParams, opts.preexisting, fldPath.Child("validations").Index(i))...)
	}
	if len(spec.AuditAnnotations) > maxAuditAnnotations {
		errs = append(errs, field.Invalid(fldPath.Child("auditAnnotations"), spec.AuditAnnotations, fmt.Sprintf("must not have more than %d auditAnnotations", maxAuditAnnotations)))
	}
	keys := sets.New[string]()
	for i := range spec.AuditAnnotations {
		a := &spec.AuditAnnotations[i]
		ap := fldPath.Child("auditAnnotations").Index(i)
		errs = append(errs, validateAuditAnnotation(getCompiler(), p.Name, a, hasParams, opts.preexisting.auditAnnotations, ap)...)
		if keys.Has(a.Key) {
			errs = append(errs, field.Duplicate(ap.Child("key"), a.Key))
		}
		keys.Insert(a.Key)
	}
	return errs
}

func validateFailurePolicy(p *admissionregistrationv1.FailurePolicyType, fldPath *field.Path) field.ErrorList {
	if p == nil {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	if !supportedFailurePolicies.Has(string(*p)) {
		return field.ErrorList{field.NotSupported(fldPath, *p, sets.List(supportedFailurePolicies))}
	}
	return nil
}

// validateMatchConstraints requires a policy's match constraints with at
// least one resource rule, which gives the expressions their types.
func validateMatchConstraints(m *admissionregistrationv1.MatchResources, fldPath *field.Path) field.ErrorList {
	if m == nil {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	errs := validateMatchResources(m, fldPath)
	if len(m.ResourceRules) == 0 {
		errs = append(errs, field.Required(fldPath.Child("resourceRules"), ""))
	}
	return errs
}

// validateParamKind requires an apiVersion ("group/version" or "version",
// a DNS subdomain group and a DNS label version) and a kind.
func validateParamKind(kind admissionregistrationv1.ParamKind, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if kind.APIVersion == "" {
		errs = append(errs, field.Required(fldPath.Child("apiVersion"), ""))
	} else if group, version, err := parseGroupVersion(kind.APIVersion); err != nil {
		errs = append(errs, field.Invalid(fldPath.Child("apiVersion"), kind.APIVersion, err.Error()))
	} else {
		if group != "" {
			if msgs := validation.IsDNS1123Subdomain(group); len(msgs) > 0 {
				errs = append(errs, field.Invalid(fldPath.Child("apiVersion"), group, strings.Join(msgs, ",")))
			}
		}
		if version == "" {
			errs = append(errs, field.Invalid(fldPath.Child("apiVersion"), kind.APIVersion, "version must be specified"))
		} else if msgs := validation.IsDNS1035Label(version); len(msgs) > 0 {
			errs = append(errs, field.Invalid(fldPath.Child("apiVersion"), version, strings.Join(msgs, ",")))
		}
	}
	if kind.Kind == "" {
		errs = append(errs, field.Required(fldPath.Child("kind"), ""))
	} else if msgs := validation.IsDNS1035Label(strings.ToLower(kind.Kind)); len(msgs) > 0 {
		errs = append(errs, field.Invalid(fldPath.Child("kind"), kind.Kind, "may have mixed case, but should otherwise match: "+strings.Join(msgs, ",")))
	}
	return errs
}

// parseGroupVersion splits "group/version" or "version"; more than one
// slash is an error.
func parseGroupVersion(gv string) (group, version string, err error) {
	if gv == "" || gv == "/" {
		return "", "", nil
	}
	switch strings.Count(gv, "/") {
	case 0:
		return "", gv, nil
	case 1:
		group, version, _ = strings.Cut(gv, "/")
		return group, version, nil
	default:
		return "", "", fmt.Errorf("unexpected GroupVersion string: %v", gv)
	}
}

// validateVariable requires a CEL identifier name and an expression that
// compiles; the compiler remembers it for the expressions after it.
// Expressions the old object had among its validations compile in the
// stored environment, as upstream.
func validateVariable(compiler plugincel.Compiler, v *admissionregistrationv1.Variable, hasParams bool, preexisting sets.Set[string], fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if strings.TrimSpace(v.Name) == "" {
		errs = append(errs, field.Required(fldPath.Child("name"), "name is not specified"))
	} else if !isCELIdentifier(v.Name) {
		errs = append(errs, field.Invalid(fldPath.Child("name"), v.Name, "must be a valid CEL identifier"))
	}
	if strings.TrimSpace(v.Expression) == "" {
		return append(errs, field.Required(fldPath.Child("expression"), "expression is not specified"))
	}
	composited, ok := compiler.(*plugincel.CompositedCompiler)
	if !ok {
		return append(errs, field.InternalError(fldPath, fmt.Errorf("variable composition is not allowed")))
	}
	variable := &validatingpolicy.Variable{Name: v.Name, Expression: v.Expression}
	result := composited.CompileAndStoreVariable(variable, plugincel.OptionalVariableDeclarations{HasParams: hasParams, HasAuthorizer: true}, envType(preexisting, v.Expression))
	if result.Error != nil {
		errs = append(errs, celError(fldPath.Child("expression"), variable, result.Error))
	}
	return errs
}

var newlines = regexp.MustCompile(`[\n\r]+`)

// validateValidation requires an expression that compiles to a bool, a
// message expression that compiles to a string when set, a one-line
// message and a known reason.
func validateValidation(compiler plugincel.Compiler, v *admissionregistrationv1.Validation, hasParams bool, pre preexisting, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if strings.TrimSpace(v.Expression) == "" {
		errs = append(errs, field.Required(fldPath.Child("expression"), "expression is not specified"))
	} else {
		errs = append(errs, compile(compiler, &validatingpolicy.ValidationCondition{Expression: v.Expression},
			plugincel.OptionalVariableDeclarations{HasParams: hasParams, HasAuthorizer: true},
			envType(pre.validations, v.Expression), fldPath.Child("expression"))...)
	}
	if v.MessageExpression != "" && strings.TrimSpace(v.MessageExpression) == "" {
		errs = append(errs, field.Invalid(fldPath.Child("messageExpression"), v.MessageExpression, "must be non-empty if specified"))
	} else if v.MessageExpression != "" {
		// The untrimmed expression, so the compiler's columns are right.
		errs = append(errs, compile(compiler, &validatingpolicy.MessageExpressionCondition{MessageExpression: v.MessageExpression},
			plugincel.OptionalVariableDeclarations{HasParams: hasParams, HasAuthorizer: false},
			envType(pre.messageExpressions, v.MessageExpression), fldPath.Child("messageExpression"))...)
	}
	message := strings.TrimSpace(v.Message)
	if v.Message != "" && message == "" {
		errs = append(errs, field.Invalid(fldPath.Child("message"), v.Message, "must be non-empty if specified"))
	} else if newlines.MatchString(message) {
		errs = append(errs, field.Invalid(fldPath.Child("message"), v.Message, "must not contain line breaks"))
	}
	if v.Reason != nil && !supportedValidationPolicyReasons.Has(string(*v.Reason)) {
		errs = append(errs, field.NotSupported(fldPath.Child("reason"), *v.Reason, sets.List(supportedValidationPolicyReasons)))
	}
	return errs
}

// validateAuditAnnotation requires a key that, prefixed with the policy
// name and "/", is a qualified name, and a value expression of at most
// 5kB that compiles to a string or null.
func validateAuditAnnotation(compiler plugincel.Compiler, policyName string, a *admissionregistrationv1.AuditAnnotation, hasParams bool, preexisting sets.Set[string], fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if policyName != "" {
		for _, msg := range validation.IsQualifiedName(policyName + "/" + a.Key) {
			errs = append(errs, field.Invalid(fldPath.Child("key"), policyName+"/"+a.Key, msg))
		}
	} else {
		errs = append(errs, field.Invalid(fldPath.Child("key"), a.Key, "requires metadata.name be non-empty"))
	}
	value := strings.TrimSpace(a.ValueExpression)
	switch {
	case value == "":
		errs = append(errs, field.Required(fldPath.Child("valueExpression"), "valueExpression is not specified"))
	case len(value) > maxAuditAnnotationValueExpressionLength:
		errs = append(errs, field.Required(fldPath.Child("valueExpression"), fmt.Sprintf("must not exceed %d bytes in length", maxAuditAnnotationValueExpressionLength)))
	default:
		result := compiler.CompileCELExpression(&validatingpolicy.AuditAnnotationCondition{ValueExpression: value},
			plugincel.OptionalVariableDeclarations{HasParams: hasParams, HasAuthorizer: true}, envType(preexisting, a.ValueExpression))
		if result.Error != nil {
			errs = append(errs, celError(fldPath.Child("valueExpression"), &validatingpolicy.AuditAnnotationCondition{ValueExpression: a.ValueExpression}, result.Error))
		}
	}
	return errs
}
