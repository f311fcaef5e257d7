// Package authorization serves authorization.k8s.io/v1, the access review
// APIs: SubjectAccessReview, LocalSubjectAccessReview,
// SelfSubjectAccessReview and SelfSubjectRulesReview. Nothing is stored;
// each create asks the server's authorizer and returns its answer, which is
// what `kubectl auth can-i` uses.
package authorization

import (
	"context"
	"fmt"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"

	"github.com/gcp-project/gcp/pkg/controlplane/registry"
	"github.com/gcp-project/gcp/pkg/controlplane/registry/typed"
)

// APIGroup is authorization.k8s.io. The access reviews need the server's
// authorizer and the rules review its rule resolver; a resource whose
// dependency is missing is not served.
type APIGroup struct{}

var _ registry.APIGroup = APIGroup{}

// GroupName returns authorization.k8s.io.
func (APIGroup) GroupName() string { return authorizationv1.GroupName }

// InstallScheme registers the four review types.
func (APIGroup) InstallScheme(scheme *runtime.Scheme) error {
	typed.AddVersionedAsInternal(scheme, authorizationv1.SchemeGroupVersion,
		&authorizationv1.SubjectAccessReview{},
		&authorizationv1.LocalSubjectAccessReview{},
		&authorizationv1.SelfSubjectAccessReview{},
		&authorizationv1.SelfSubjectRulesReview{},
	)
	return nil
}

// NewRESTStorage builds the review resources.
func (APIGroup) NewRESTStorage(opts registry.StorageOptions) (genericapiserver.APIGroupInfo, bool, error) {
	info := opts.NewAPIGroupInfo(authorizationv1.GroupName)
	storage := map[string]rest.Storage{}
	if a := opts.Auth.Authorizer; a != nil {
		storage["subjectaccessreviews"] = &typed.CreateOnly[*authorizationv1.SubjectAccessReview]{NewObj: func() *authorizationv1.SubjectAccessReview { return &authorizationv1.SubjectAccessReview{} }, Singular: "subjectaccessreview", Answer: subjectAccessReview(a)}
		storage["localsubjectaccessreviews"] = &typed.CreateOnly[*authorizationv1.LocalSubjectAccessReview]{NewObj: func() *authorizationv1.LocalSubjectAccessReview { return &authorizationv1.LocalSubjectAccessReview{} }, Singular: "localsubjectaccessreview", Namespaced: true, Answer: localSubjectAccessReview(a)}
		storage["selfsubjectaccessreviews"] = &typed.CreateOnly[*authorizationv1.SelfSubjectAccessReview]{NewObj: func() *authorizationv1.SelfSubjectAccessReview { return &authorizationv1.SelfSubjectAccessReview{} }, Singular: "selfsubjectaccessreview", Answer: selfSubjectAccessReview(a)}
	}
	if r := opts.Auth.RuleResolver; r != nil {
		storage["selfsubjectrulesreviews"] = &typed.CreateOnly[*authorizationv1.SelfSubjectRulesReview]{NewObj: func() *authorizationv1.SelfSubjectRulesReview { return &authorizationv1.SelfSubjectRulesReview{} }, Singular: "selfsubjectrulesreview", Answer: selfSubjectRulesReview(r)}
	}
	return info, opts.Enabled(&info, authorizationv1.SchemeGroupVersion, storage), nil
}

func invalid(kind, name string, errs field.ErrorList) error {
	return apierrors.NewInvalid(authorizationv1.SchemeGroupVersion.WithKind(kind).GroupKind(), name, errs)
}

func requestUser(ctx context.Context) (user.Info, error) {
	u, ok := genericapirequest.UserFrom(ctx)
	if !ok {
		return nil, apierrors.NewBadRequest("no user present on request")
	}
	return u, nil
}

// validateAttributes checks that exactly one of resource and non-resource
// attributes is set, and that selector attributes are well-formed.
func validateAttributes(res *authorizationv1.ResourceAttributes, nonRes *authorizationv1.NonResourceAttributes, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch {
	case res == nil && nonRes == nil:
		errs = append(errs, field.Required(fld.Child("resourceAttributes"), "exactly one of nonResourceAttributes or resourceAttributes must be specified"))
	case res != nil && nonRes != nil:
		errs = append(errs, field.Invalid(fld.Child("nonResourceAttributes"), nonRes, `cannot be specified in combination with resourceAttributes`))
	}
	if res != nil {
		errs = append(errs, validateSelectors(res, fld.Child("resourceAttributes"))...)
	}
	return errs
}

func validateSelectors(res *authorizationv1.ResourceAttributes, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if fs := res.FieldSelector; fs != nil {
		p := fld.Child("fieldSelector")
		switch {
		case fs.RawSelector != "" && len(fs.Requirements) > 0:
			errs = append(errs, field.Invalid(p.Child("rawSelector"), fs.RawSelector, "may not specified at the same time as requirements"))
		case fs.RawSelector == "" && len(fs.Requirements) == 0:
			errs = append(errs, field.Required(p.Child("requirements"), "when fieldSelector is specified, requirements or rawSelector is required"))
		}
		for i, r := range fs.Requirements {
			rp := p.Child("requirements").Index(i)
			if r.Key == "" {
				errs = append(errs, field.Required(rp.Child("key"), "must be specified"))
			}
			switch r.Operator {
			case metav1.FieldSelectorOpIn, metav1.FieldSelectorOpNotIn:
				if len(r.Values) == 0 {
					errs = append(errs, field.Required(rp.Child("values"), "must be specified when `operator` is 'In' or 'NotIn'"))
				}
			case metav1.FieldSelectorOpExists, metav1.FieldSelectorOpDoesNotExist:
				if len(r.Values) > 0 {
					errs = append(errs, field.Forbidden(rp.Child("values"), "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
				}
			default:
				errs = append(errs, field.NotSupported(rp.Child("operator"), r.Operator, []string{string(metav1.FieldSelectorOpIn), string(metav1.FieldSelectorOpNotIn), string(metav1.FieldSelectorOpExists), string(metav1.FieldSelectorOpDoesNotExist)}))
			}
		}
	}
	if ls := res.LabelSelector; ls != nil {
		p := fld.Child("labelSelector")
		switch {
		case ls.RawSelector != "" && len(ls.Requirements) > 0:
			errs = append(errs, field.Invalid(p.Child("rawSelector"), ls.RawSelector, "may not specified at the same time as requirements"))
		case ls.RawSelector == "" && len(ls.Requirements) == 0:
			errs = append(errs, field.Required(p.Child("requirements"), "when labelSelector is specified, requirements or rawSelector is required"))
		}
	}
	return errs
}

// attributes turns review attributes into authorizer attributes, as the
// request filters would for a real request by u.
func attributes(u user.Info, res *authorizationv1.ResourceAttributes, nonRes *authorizationv1.NonResourceAttributes) authorizer.AttributesRecord {
	if res == nil {
		return authorizer.AttributesRecord{User: u, Verb: nonRes.Verb, Path: nonRes.Path}
	}
	a := authorizer.AttributesRecord{
		User:            u,
		Verb:            res.Verb,
		Namespace:       res.Namespace,
		APIGroup:        res.Group,
		APIVersion:      res.Version,
		Resource:        res.Resource,
		Subresource:     res.Subresource,
		Name:            res.Name,
		ResourceRequest: true,
	}
	if fs := res.FieldSelector; fs != nil {
		a.FieldSelectorRequirements, a.FieldSelectorParsingErr = fieldRequirements(fs)
	}
	if ls := res.LabelSelector; ls != nil {
		a.LabelSelectorRequirements, a.LabelSelectorParsingErr = labelRequirements(ls)
	}
	return a
}

func fieldRequirements(fs *authorizationv1.FieldSelectorAttributes) (fields.Requirements, error) {
	if fs.RawSelector != "" {
		s, err := fields.ParseSelector(fs.RawSelector)
		if err != nil {
			return nil, err
		}
		return s.Requirements(), nil
	}
	var out fields.Requirements
	for _, r := range fs.Requirements {
		switch {
		case r.Operator == metav1.FieldSelectorOpIn && len(r.Values) == 1:
			out = append(out, fields.Requirement{Field: r.Key, Operator: selection.Equals, Value: r.Values[0]})
		case r.Operator == metav1.FieldSelectorOpNotIn && len(r.Values) == 1:
			out = append(out, fields.Requirement{Field: r.Key, Operator: selection.NotEquals, Value: r.Values[0]})
		default:
			return nil, fmt.Errorf("fieldSelector requirement %q %s %v: only In or NotIn with a single value can be authorized", r.Key, r.Operator, r.Values)
		}
	}
	return out, nil
}

func labelRequirements(ls *authorizationv1.LabelSelectorAttributes) (labels.Requirements, error) {
	if ls.RawSelector != "" {
		s, err := labels.Parse(ls.RawSelector)
		if err != nil {
			return nil, err
		}
		reqs, _ := s.Requirements()
		return reqs, nil
	}
	s, err := metav1.LabelSelectorAsSelector(&metav1.LabelSelector{MatchExpressions: ls.Requirements})
	if err != nil {
		return nil, err
	}
	reqs, _ := s.Requirements()
	return reqs, nil
}

// decide fills status from the authorizer's decision.
func decide(ctx context.Context, a authorizer.Authorizer, attrs authorizer.AttributesRecord) authorizationv1.SubjectAccessReviewStatus {
	decision, reason, err := a.Authorize(ctx, attrs)
	status := authorizationv1.SubjectAccessReviewStatus{
		Allowed: decision == authorizer.DecisionAllow,
		Denied:  decision == authorizer.DecisionDeny,
		Reason:  reason,
	}
	if err != nil {
		status.EvaluationError = err.Error()
	}
	return status
}

// validateSubject: a review about someone else must say who.
func validateSubject(spec authorizationv1.SubjectAccessReviewSpec) field.ErrorList {
	if spec.User == "" && len(spec.Groups) == 0 {
		return field.ErrorList{field.Invalid(field.NewPath("spec", "user"), spec.User, `at least one of user or group must be specified`)}
	}
	return nil
}

// specUser is the user a review asks about.
func specUser(spec authorizationv1.SubjectAccessReviewSpec) user.Info {
	u := &user.DefaultInfo{Name: spec.User, UID: spec.UID, Groups: spec.Groups, Extra: map[string][]string{}}
	for k, v := range spec.Extra {
		u.Extra[k] = v
	}
	return u
}

func subjectAccessReview(a authorizer.Authorizer) func(context.Context, *authorizationv1.SubjectAccessReview) (*authorizationv1.SubjectAccessReview, error) {
	return func(ctx context.Context, r *authorizationv1.SubjectAccessReview) (*authorizationv1.SubjectAccessReview, error) {
		spec := r.Spec
		errs := validateAttributes(spec.ResourceAttributes, spec.NonResourceAttributes, field.NewPath("spec"))
		errs = append(errs, validateSubject(spec)...)
		if len(errs) > 0 {
			return nil, invalid("SubjectAccessReview", r.Name, errs)
		}
		r.Status = decide(ctx, a, attributes(specUser(spec), spec.ResourceAttributes, spec.NonResourceAttributes))
		return r, nil
	}
}

func localSubjectAccessReview(a authorizer.Authorizer) func(context.Context, *authorizationv1.LocalSubjectAccessReview) (*authorizationv1.LocalSubjectAccessReview, error) {
	return func(ctx context.Context, r *authorizationv1.LocalSubjectAccessReview) (*authorizationv1.LocalSubjectAccessReview, error) {
		spec := r.Spec
		namespace, _ := genericapirequest.NamespaceFrom(ctx)
		var errs field.ErrorList
		if spec.ResourceAttributes == nil {
			errs = append(errs, field.Required(field.NewPath("spec", "resourceAttributes"), ""))
		} else {
			errs = append(errs, validateSelectors(spec.ResourceAttributes, field.NewPath("spec", "resourceAttributes"))...)
			if spec.ResourceAttributes.Namespace != namespace {
				errs = append(errs, field.Invalid(field.NewPath("spec", "resourceAttributes", "namespace"), spec.ResourceAttributes.Namespace, fmt.Sprintf("must match the namespace of the request, %q", namespace)))
			}
		}
		if spec.NonResourceAttributes != nil {
			errs = append(errs, field.Invalid(field.NewPath("spec", "nonResourceAttributes"), spec.NonResourceAttributes, `disallowed on this kind of request`))
		}
		errs = append(errs, validateSubject(spec)...)
		if len(errs) > 0 {
			return nil, invalid("LocalSubjectAccessReview", r.Name, errs)
		}
		r.Status = decide(ctx, a, attributes(specUser(spec), spec.ResourceAttributes, nil))
		return r, nil
	}
}

func selfSubjectAccessReview(a authorizer.Authorizer) func(context.Context, *authorizationv1.SelfSubjectAccessReview) (*authorizationv1.SelfSubjectAccessReview, error) {
	return func(ctx context.Context, r *authorizationv1.SelfSubjectAccessReview) (*authorizationv1.SelfSubjectAccessReview, error) {
		if errs := validateAttributes(r.Spec.ResourceAttributes, r.Spec.NonResourceAttributes, field.NewPath("spec")); len(errs) > 0 {
			return nil, invalid("SelfSubjectAccessReview", r.Name, errs)
		}
		u, err := requestUser(ctx)
		if err != nil {
			return nil, err
		}
		r.Status = decide(ctx, a, attributes(u, r.Spec.ResourceAttributes, r.Spec.NonResourceAttributes))
		return r, nil
	}
}

func selfSubjectRulesReview(resolver authorizer.RuleResolver) func(context.Context, *authorizationv1.SelfSubjectRulesReview) (*authorizationv1.SelfSubjectRulesReview, error) {
	return func(ctx context.Context, r *authorizationv1.SelfSubjectRulesReview) (*authorizationv1.SelfSubjectRulesReview, error) {
		u, err := requestUser(ctx)
		if err != nil {
			return nil, err
		}
		namespace := r.Spec.Namespace
		if namespace == "" {
			// Upstream requires a namespace: rules are always asked in one.
			return nil, apierrors.NewBadRequest("no namespace on request")
		}
		resourceRules, nonResourceRules, incomplete, err := resolver.RulesFor(ctx, u, namespace)
		r.Status = authorizationv1.SubjectRulesReviewStatus{Incomplete: incomplete, ResourceRules: []authorizationv1.ResourceRule{}, NonResourceRules: []authorizationv1.NonResourceRule{}}
		for _, rr := range resourceRules {
			r.Status.ResourceRules = append(r.Status.ResourceRules, authorizationv1.ResourceRule{
				Verbs: rr.GetVerbs(), APIGroups: rr.GetAPIGroups(), Resources: rr.GetResources(), ResourceNames: rr.GetResourceNames(),
			})
		}
		for _, nr := range nonResourceRules {
			r.Status.NonResourceRules = append(r.Status.NonResourceRules, authorizationv1.NonResourceRule{
				Verbs: nr.GetVerbs(), NonResourceURLs: nr.GetNonResourceURLs(),
			})
		}
		if err != nil {
			r.Status.EvaluationError = err.Error()
		}
		return r, nil
	}
}
