package validation

import (
	"fmt"
	"regexp"
	"strings"
	"sync"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/environment"
)

// maxMatchConditions is how many match conditions a webhook or policy
// may have.
const maxMatchConditions = 64

// statelessCompiler is the compiler for expressions that cannot refer to
// variables. Building its environments is costly and they never change,
// so it is built once, on first use, and shared.
var statelessCompiler = sync.OnceValue(func() plugincel.Compiler {
	return plugincel.NewCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
})

// newCompiler returns the compiler for a policy's expressions. One that
// declares variables needs a composited compiler of its own, which
// remembers the variables compiled so far.
func newCompiler(composition bool) plugincel.Compiler {
	if !composition {
		return statelessCompiler()
	}
	compiler, err := plugincel.NewCompositedCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
	if err != nil {
		// Not expected: the base environment is built in.
		return statelessCompiler()
	}
	return compiler
}

// envType is the environment an expression compiles in: expressions the
// object already had are stored ones, compiled with the more permissive
// stored environment so that an object stays updatable after a library
// change; new expressions use the new-expressions environment.
func envType(preexisting sets.Set[string], expression string) environment.Type {
	if preexisting.Has(expression) {
		return environment.StoredExpressions
	}
	return environment.NewExpressions
}

// compile compiles expression and returns its error, if any, at fldPath.
func compile(compiler plugincel.Compiler, expression plugincel.ExpressionAccessor, decls plugincel.OptionalVariableDeclarations, env environment.Type, fldPath *field.Path) field.ErrorList {
	result := compiler.CompileCELExpression(expression, decls, env)
	if result.Error != nil {
		return field.ErrorList{celError(fldPath, expression, result.Error)}
	}
	return nil
}

// celError turns a CEL compilation error into a field error: invalid
// ("compilation failed: ...") for the expression's value, required, or
// internal.
func celError(fldPath *field.Path, expression plugincel.ExpressionAccessor, err *apiservercel.Error) *field.Error {
	switch err.Type {
	case apiservercel.ErrorTypeRequired:
		return field.Required(fldPath, err.Detail)
	case apiservercel.ErrorTypeInvalid:
		return field.Invalid(fldPath, expression.GetExpression(), err.Detail)
	case apiservercel.ErrorTypeInternal:
		return field.InternalError(fldPath, err)
	}
	return field.InternalError(fldPath, fmt.Errorf("unsupported error type: %w", err))
}

// matchConditionOptions says how to validate match conditions.
type matchConditionOptions struct {
	// allowParams declares the params variable (policies with a paramKind).
	allowParams bool
	// preexisting are the expressions the old object had.
	preexisting sets.Set[string]
}

// validateMatchConditions validates at most 64 match conditions with
// unique qualified names and compiling expressions.
func validateMatchConditions(conditions []admissionregistrationv1.MatchCondition, opts matchConditionOptions, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(conditions) > maxMatchConditions {
		errs = append(errs, field.TooMany(fldPath, len(conditions), maxMatchConditions))
	}
	names := sets.New[string]()
	for i, c := range conditions {
		p := fldPath.Index(i)
		if expr := strings.TrimSpace(c.Expression); expr == "" {
			errs = append(errs, field.Required(p.Child("expression"), ""))
		} else {
			errs = append(errs, compile(statelessCompiler(), &matchconditions.MatchCondition{Expression: expr},
				plugincel.OptionalVariableDeclarations{HasParams: opts.allowParams, HasAuthorizer: true},
				envType(opts.preexisting, expr), p.Child("expression"))...)
		}
		if c.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
		} else {
			for _, msg := range validation.IsQualifiedName(c.Name) {
				errs = append(errs, field.Invalid(p.Child("name"), c.Name, msg))
			}
			if names.Has(c.Name) {
				errs = append(errs, field.Duplicate(p.Child("name"), c.Name))
			}
			names.Insert(c.Name)
		}
	}
	return errs
}

var (
	celIdentifier = regexp.MustCompile("^[_a-zA-Z][_a-zA-Z0-9]*$")
	celReserved   = sets.New("true", "false", "null", "in",
		"as", "break", "const", "continue", "else",
		"for", "function", "if", "import", "let",
		"loop", "package", "namespace", "return",
		"var", "void", "while")
)

// isCELIdentifier reports whether name is a CEL identifier: letters,
// digits and underscores, not starting with a digit, not reserved.
func isCELIdentifier(name string) bool {
	return celIdentifier.MatchString(name) && !celReserved.Has(name)
}
