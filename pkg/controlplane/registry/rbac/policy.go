package rbac

import (
	"context"
	"errors"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"

	authrbac "github.com/gcp-project/gcp/pkg/controlplane/auth/rbac"
)

// policyStore is a store whose writes must not escalate: check runs on the
// new object before create and update (not for updates that only touch
// owner references or finalizers, so garbage collection always works).
type policyStore struct {
	*genericregistry.Store
	check func(ctx context.Context, obj runtime.Object) error
}

// Create checks for escalation, then creates.
func (s *policyStore) Create(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc, options *metav1.CreateOptions) (runtime.Object, error) {
	if err := s.check(ctx, obj); err != nil {
		return nil, err
	}
	return s.Store.Create(ctx, obj, createValidation, options)
}

// Update checks the updated object for escalation, then updates.
func (s *policyStore) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc, updateValidation rest.ValidateObjectUpdateFunc, forceAllowCreate bool, options *metav1.UpdateOptions) (runtime.Object, bool, error) {
	checked := rest.WrapUpdatedObjectInfo(objInfo, func(ctx context.Context, obj, old runtime.Object) (runtime.Object, error) {
		if onlyGCFieldsChanged(obj, old) {
			return obj, nil
		}
		if err := s.check(ctx, obj); err != nil {
			return nil, err
		}
		return obj, nil
	})
	return s.Store.Update(ctx, name, checked, createValidation, updateValidation, forceAllowCreate, options)
}

// onlyGCFieldsChanged reports whether obj differs from old only in owner
// references, finalizers or managed fields.
func onlyGCFieldsChanged(obj, old runtime.Object) bool {
	if old == nil {
		return false
	}
	oldMeta, err := meta.Accessor(old)
	if err != nil || oldMeta.GetUID() == "" {
		return false
	}
	copied := obj.DeepCopyObject()
	m, err := meta.Accessor(copied)
	if err != nil {
		return false
	}
	m.SetOwnerReferences(oldMeta.GetOwnerReferences())
	m.SetFinalizers(oldMeta.GetFinalizers())
	m.SetManagedFields(oldMeta.GetManagedFields())
	return equality.Semantic.DeepEqual(copied, old)
}

// escalation holds what the checks need: the server's authorizer (for the
// escalate and bind verbs) and a resolver over this group's own storage, so
// a role created a moment ago can be bound at once.
type escalation struct {
	authz    authorizer.Authorizer
	resolver *authrbac.Resolver
}

func forbidden(gr schema.GroupResource, obj runtime.Object, err error) error {
	name := ""
	if m, merr := meta.Accessor(obj); merr == nil {
		name = m.GetName()
	}
	return apierrors.NewForbidden(gr, name, err)
}

// checkRole lets a role through when the user may escalate, or holds every
// rule it grants. An aggregationRule always needs escalate rights.
func (e escalation) checkRole(gr schema.GroupResource) func(ctx context.Context, obj runtime.Object) error {
	return func(ctx context.Context, obj runtime.Object) error {
		if authrbac.EscalationAllowed(ctx) || authrbac.RoleEscalationAuthorized(ctx, e.authz) {
			return nil
		}
		var rules []rbacv1.PolicyRule
		switch r := obj.(type) {
		case *rbacv1.Role:
			rules = r.Rules
		case *rbacv1.ClusterRole:
			if r.AggregationRule != nil {
				return forbidden(gr, obj, errors.New("must have cluster-admin privileges to use the aggregationRule"))
			}
			rules = r.Rules
		}
		if err := authrbac.ConfirmNoEscalation(ctx, e.resolver, rules); err != nil {
			return forbidden(gr, obj, err)
		}
		return nil
	}
}

// checkBinding lets a binding through when the user may bind its role, or
// holds every rule of the role.
func (e escalation) checkBinding(gr schema.GroupResource) func(ctx context.Context, obj runtime.Object) error {
	return func(ctx context.Context, obj runtime.Object) error {
		if authrbac.EscalationAllowed(ctx) {
			return nil
		}
		var ref rbacv1.RoleRef
		namespace := ""
		switch b := obj.(type) {
		case *rbacv1.RoleBinding:
			ref, namespace = b.RoleRef, b.Namespace
			if namespace == "" {
				namespace, _ = genericapirequest.NamespaceFrom(ctx)
			}
		case *rbacv1.ClusterRoleBinding:
			ref = b.RoleRef
		}
		if authrbac.BindingAuthorized(ctx, ref, namespace, e.authz) {
			return nil
		}
		rules, err := e.resolver.GetRoleReferenceRules(ctx, ref, namespace)
		if err != nil {
			return err
		}
		if err := authrbac.ConfirmNoEscalation(ctx, e.resolver, rules); err != nil {
			return forbidden(gr, obj, err)
		}
		return nil
	}
}

// storeResolver reads roles and bindings from this group's stores.
type storeResolver struct {
	roles, roleBindings, clusterRoles, clusterRoleBindings *genericregistry.Store
}

func (s storeResolver) GetRole(ctx context.Context, namespace, name string) (*rbacv1.Role, error) {
	obj, err := s.roles.Get(genericapirequest.WithNamespace(ctx, namespace), name, &metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return obj.(*rbacv1.Role), nil
}

func (s storeResolver) GetClusterRole(ctx context.Context, name string) (*rbacv1.ClusterRole, error) {
	obj, err := s.clusterRoles.Get(genericapirequest.WithNamespace(ctx, ""), name, &metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return obj.(*rbacv1.ClusterRole), nil
}

func (s storeResolver) ListRoleBindings(ctx context.Context, namespace string) ([]*rbacv1.RoleBinding, error) {
	obj, err := s.roleBindings.List(genericapirequest.WithNamespace(ctx, namespace), &metainternalversion.ListOptions{})
	if err != nil {
		return nil, err
	}
	items := obj.(*rbacv1.RoleBindingList).Items
	out := make([]*rbacv1.RoleBinding, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out, nil
}

func (s storeResolver) ListClusterRoleBindings(ctx context.Context) ([]*rbacv1.ClusterRoleBinding, error) {
	obj, err := s.clusterRoleBindings.List(genericapirequest.WithNamespace(ctx, ""), &metainternalversion.ListOptions{})
	if err != nil {
		return nil, err
	}
	items := obj.(*rbacv1.ClusterRoleBindingList).Items
	out := make([]*rbacv1.ClusterRoleBinding, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out, nil
}
