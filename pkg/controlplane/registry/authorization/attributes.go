package authorization

import (
	"context"
	"fmt"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// resourceAttributes are the authorizer attributes of a request by u as
// described by in. An empty version means any version. Selectors that do
// not parse are passed on with their parsing error, for the authorizer to
// decide on (and for evaluationError to mention).
func resourceAttributes(u user.Info, in authorizationv1.ResourceAttributes) authorizer.AttributesRecord {
	a := authorizer.AttributesRecord{
		User:            u,
		Verb:            in.Verb,
		Namespace:       in.Namespace,
		APIGroup:        in.Group,
		APIVersion:      in.Version,
		Resource:        in.Resource,
		Subresource:     in.Subresource,
		Name:            in.Name,
		ResourceRequest: true,
	}
	if a.APIVersion == "" {
		a.APIVersion = "*"
	}
	if ls := in.LabelSelector; ls != nil {
		if ls.RawSelector != "" {
			if s, err := labels.Parse(ls.RawSelector); err != nil {
				a.LabelSelectorParsingErr = err
			} else {
				a.LabelSelectorRequirements, _ = s.Requirements()
			}
		}
		if len(ls.Requirements) > 0 {
			a.LabelSelectorRequirements, a.LabelSelectorParsingErr = labelRequirements(ls.Requirements)
		}
	}
	if fs := in.FieldSelector; fs != nil {
		if fs.RawSelector != "" {
			if s, err := fields.ParseSelector(fs.RawSelector); err != nil {
				a.FieldSelectorParsingErr = err
			} else {
				a.FieldSelectorRequirements = s.Requirements()
			}
		}
		if len(fs.Requirements) > 0 {
			a.FieldSelectorRequirements, a.FieldSelectorParsingErr = fieldRequirements(fs.Requirements)
		}
	}
	return a
}

var labelOperators = map[metav1.LabelSelectorOperator]selection.Operator{
	metav1.LabelSelectorOpIn:           selection.In,
	metav1.LabelSelectorOpNotIn:        selection.NotIn,
	metav1.LabelSelectorOpExists:       selection.Exists,
	metav1.LabelSelectorOpDoesNotExist: selection.DoesNotExist,
}

// labelRequirements converts what it can and reports the rest: the
// authorizer may still decide on a partial selector.
func labelRequirements(in []metav1.LabelSelectorRequirement) (labels.Requirements, error) {
	var out labels.Requirements
	var errs []error
	for _, r := range in {
		op, ok := labelOperators[r.Operator]
		if !ok {
			errs = append(errs, fmt.Errorf("%q is not a valid label selector operator", r.Operator))
			continue
		}
		values := r.Values
		if len(values) == 0 {
			values = nil
		}
		req, err := labels.NewRequirement(r.Key, op, values)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, *req)
	}
	return out, utilerrors.NewAggregate(errs)
}

// fieldRequirements converts what it can: field selectors only know
// (in)equality, so In and NotIn with one value.
func fieldRequirements(in []metav1.FieldSelectorRequirement) (fields.Requirements, error) {
	var out fields.Requirements
	var errs []error
	for _, r := range in {
		if len(r.Values) > 1 {
			errs = append(errs, fmt.Errorf("fieldSelectors do not yet support multiple values"))
			continue
		}
		switch r.Operator {
		case metav1.FieldSelectorOpIn, metav1.FieldSelectorOpNotIn:
			if len(r.Values) != 1 {
				errs = append(errs, fmt.Errorf("fieldSelectors %s must have one value", r.Operator))
				continue
			}
			op := selection.Equals
			if r.Operator == metav1.FieldSelectorOpNotIn {
				op = selection.NotEquals
			}
			out = append(out, fields.Requirement{Field: r.Key, Operator: op, Value: r.Values[0]})
		case metav1.FieldSelectorOpExists, metav1.FieldSelectorOpDoesNotExist:
			errs = append(errs, fmt.Errorf("fieldSelectors do not yet support %v", r.Operator))
		default:
			errs = append(errs, fmt.Errorf("%q is not a valid field selector operator", r.Operator))
		}
	}
	return out, utilerrors.NewAggregate(errs)
}

// nonResourceAttributes are the authorizer attributes of a request by u
// for a path.
func nonResourceAttributes(u user.Info, in authorizationv1.NonResourceAttributes) authorizer.AttributesRecord {
	return authorizer.AttributesRecord{User: u, Verb: in.Verb, Path: in.Path}
}

// reviewAttributes are the attributes of a validated review (exactly one
// of res and nonRes is set) by u.
func reviewAttributes(u user.Info, res *authorizationv1.ResourceAttributes, nonRes *authorizationv1.NonResourceAttributes) authorizer.AttributesRecord {
	if res != nil {
		return resourceAttributes(u, *res)
	}
	return nonResourceAttributes(u, *nonRes)
}

// specUser is the user a SubjectAccessReviewSpec asks about.
func specUser(spec authorizationv1.SubjectAccessReviewSpec) user.Info {
	u := &user.DefaultInfo{Name: spec.User, UID: spec.UID, Groups: spec.Groups}
	if spec.Extra != nil {
		u.Extra = make(map[string][]string, len(spec.Extra))
		for k, v := range spec.Extra {
			u.Extra[k] = v
		}
	}
	return u
}

// decide asks a and reports its decision as a review status. The
// evaluation error also says when a selector was (partly) ignored because
// it did not parse.
func decide(ctx context.Context, a authorizer.Authorizer, attrs authorizer.AttributesRecord) authorizationv1.SubjectAccessReviewStatus {
	decision, reason, err := a.Authorize(ctx, attrs)
	var evaluationErrors []string
	if err != nil {
		evaluationErrors = append(evaluationErrors, err.Error())
	}
	if reqs, err := attrs.GetFieldSelector(); err != nil {
		evaluationErrors = append(evaluationErrors, ignored("fieldSelector", len(reqs) > 0))
	}
	if reqs, err := attrs.GetLabelSelector(); err != nil {
		evaluationErrors = append(evaluationErrors, ignored("labelSelector", len(reqs) > 0))
	}
	return authorizationv1.SubjectAccessReviewStatus{
		Allowed:         decision == authorizer.DecisionAllow,
		Denied:          decision == authorizer.DecisionDeny,
		Reason:          reason,
		EvaluationError: strings.Join(evaluationErrors, "; "),
	}
}

func ignored(selector string, partly bool) string {
	if partly {
		return "spec.resourceAttributes." + selector + " partially ignored due to parse error"
	}
	return "spec.resourceAttributes." + selector + " ignored due to parse error"
}
