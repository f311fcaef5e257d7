// Package paramauthz checks, as upstream's admissionregistration
// strategies do, that whoever writes an admission policy with a paramKind,
// or a binding with a paramRef, may read the parameters it names: without
// the check, a policy's messages could disclose objects the writer cannot
// read.
package paramauthz

import (
	"context"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"

	authrbac "github.com/gcp-project/gcp/pkg/controlplane/auth/rbac"
)

// Resolver maps a kind to its resource.
type Resolver interface {
	Resolve(gvk schema.GroupVersionKind) (schema.GroupVersionResource, error)
}

// SchemeResolver resolves the kinds the server's own scheme serves (the
// native types, whose resources are their lower-case plural kinds) and
// asks Mapper, if set, for any other: a custom resource's, an aggregated
// API's. A kind neither knows is not resolved, and the checks then ask for
// permission on every resource of the group version, as upstream does
// when discovery cannot resolve a kind.
type SchemeResolver struct {
	Scheme *runtime.Scheme
	// Mapper is discovery-backed; a miss resets it once, since a custom
	// resource definition may be newer than its cache.
	Mapper meta.ResettableRESTMapper
}

// Resolve returns gvk's resource.
func (r SchemeResolver) Resolve(gvk schema.GroupVersionKind) (schema.GroupVersionResource, error) {
	notFound := &meta.NoKindMatchError{GroupKind: gvk.GroupKind(), SearchedVersions: []string{gvk.Version}}
	if gvk.Version == runtime.APIVersionInternal {
		return schema.GroupVersionResource{}, notFound
	}
	if r.Scheme != nil && r.Scheme.Recognizes(gvk) {
		plural, _ := meta.UnsafeGuessKindToResource(gvk)
		return plural, nil
	}
	if r.Mapper == nil {
		return schema.GroupVersionResource{}, notFound
	}
	m, err := r.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		r.Mapper.Reset()
		m, err = r.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	}
	if err != nil {
		return schema.GroupVersionResource{}, err
	}
	return m.Resource, nil
}

// Checker authorizes parameter access. A nil Authorizer allows everything.
type Checker struct {
	Authorizer authorizer.UnconditionalAuthorizer
	Resolver   Resolver
}

// target is the group, version and resource to authorize: "*" for what
// could not be determined.
func (c Checker) target(paramKind *admissionregistrationv1.ParamKind) (group, version, resource string, parseErr, resolveErr error) {
	group, version, resource = "*", "*", "*"
	gv, err := schema.ParseGroupVersion(paramKind.APIVersion)
	if err != nil {
		return group, version, resource, err, nil
	}
	group, version = gv.Group, gv.Version
	if c.Resolver == nil {
		return group, version, resource, nil, fmt.Errorf("no resolver")
	}
	gvr, err := c.Resolver.Resolve(gv.WithKind(paramKind.Kind))
	if err != nil {
		return group, version, resource, nil, err
	}
	return group, version, gvr.Resource, nil, nil
}

// Policy requires that the user may get every object of the policy's
// paramKind. Members of system:masters skip the check.
func (c Checker) Policy(ctx context.Context, paramKind *admissionregistrationv1.ParamKind) error {
	if c.Authorizer == nil || paramKind == nil || authrbac.EscalationAllowed(ctx) {
		return nil
	}
	user, ok := genericapirequest.UserFrom(ctx)
	if !ok {
		return fmt.Errorf("cannot identify user to authorize read access to paramKind resources")
	}
	group, version, resource, _, _ := c.target(paramKind)
	decision, _, err := c.Authorizer.Authorize(ctx, authorizer.AttributesRecord{
		User: user, Verb: "get", ResourceRequest: true, Name: "*", Namespace: "*",
		APIGroup: group, APIVersion: version, Resource: resource,
	})
	if err != nil {
		return err
	}
	if decision != authorizer.DecisionAllow {
		return fmt.Errorf(`user %v must have "get" permission on all objects of the referenced paramKind (kind=%s, apiVersion=%s)`, user, paramKind.Kind, paramKind.APIVersion)
	}
	return nil
}

// PolicyParamKind returns the paramKind of the named policy.
type PolicyParamKind func(ctx context.Context, name string) (*admissionregistrationv1.ParamKind, error)

// Binding requires that the user may get the object the binding's
// paramRef names (list, for a selector), in the paramRef's namespace, of
// the bound policy's paramKind; when the policy cannot be read or its kind
// not resolved, on every resource. Members of system:masters skip it.
func (c Checker) Binding(ctx context.Context, policyName string, ref *admissionregistrationv1.ParamRef, policyParamKind PolicyParamKind) error {
	if c.Authorizer == nil || ref == nil || authrbac.EscalationAllowed(ctx) {
		return nil
	}
	user, ok := genericapirequest.UserFrom(ctx)
	if !ok {
		return fmt.Errorf("cannot identify user to authorize read access to paramRef object")
	}
	group, version, resource := "*", "*", "*"
	paramKind, policyErr := policyParamKind(ctx, policyName)
	var parseErr, resolveErr error
	if policyErr == nil && paramKind != nil {
		group, version, resource, parseErr, resolveErr = c.target(paramKind)
	}
	verb := "get"
	if ref.Name == "" {
		verb = "list"
	}
	decision, _, err := c.Authorizer.Authorize(ctx, authorizer.AttributesRecord{
		User: user, Verb: verb, ResourceRequest: true, Name: ref.Name, Namespace: ref.Namespace,
		APIGroup: group, APIVersion: version, Resource: resource,
	})
	if err != nil {
		return fmt.Errorf(`failed to authorize request: %w`, err)
	}
	if decision == authorizer.DecisionAllow {
		return nil
	}
	switch {
	case policyErr != nil:
		return fmt.Errorf(`unable to get policy %s to determine minimum required permissions and user %v does not have "%v" permission for all groups, versions and resources`, policyName, user, verb)
	case parseErr != nil:
		return fmt.Errorf(`unable to parse paramKind %v to determine minimum required permissions and user %v does not have "%v" permission for all groups, versions and resources`, paramKind, user, verb)
	case resolveErr != nil:
		return fmt.Errorf(`unable to resolve paramKind %v to determine minimum required permissions and user %v does not have "%v" permission for all groups, versions and resources`, paramKind, user, verb)
	}
	return fmt.Errorf(`user %v does not have "%v" permission on the object referenced by paramRef`, user, verb)
}

// PolicyWrite authorizes the write of a policy whose paramKind is
// paramKind and was old (nil on create): as upstream, a paramKind that is
// set on create or changed on update needs Policy; an error is a Forbidden
// at spec.paramKind. Call it only for a policy that validated.
func (c Checker) PolicyWrite(ctx context.Context, paramKind, old *admissionregistrationv1.ParamKind) field.ErrorList {
	if paramKind == nil || old != nil && *old == *paramKind {
		return nil
	}
	if err := c.Policy(ctx, paramKind); err != nil {
		return field.ErrorList{field.Forbidden(field.NewPath("spec", "paramKind"), err.Error())}
	}
	return nil
}

// BindingWrite authorizes the write of a binding of policy with paramRef
// ref, which was a binding of oldPolicy with oldRef (nil on create): as
// upstream, every create needs Binding, and an update unless it keeps both
// a paramRef and the policy; an error is a Forbidden at spec.paramRef.
// Call it only for a binding that validated.
func (c Checker) BindingWrite(ctx context.Context, policy string, ref *admissionregistrationv1.ParamRef, oldPolicy string, oldRef *admissionregistrationv1.ParamRef, policyParamKind PolicyParamKind) field.ErrorList {
	if oldRef != nil && apiequality.Semantic.DeepEqual(ref, oldRef) && policy == oldPolicy {
		return nil
	}
	if err := c.Binding(ctx, policy, ref, policyParamKind); err != nil {
		return field.ErrorList{field.Forbidden(field.NewPath("spec", "paramRef"), err.Error())}
	}
	return nil
}
