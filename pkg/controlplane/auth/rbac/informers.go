package rbac

import (
	"context"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/labels"
	rbacinformers "k8s.io/client-go/informers/rbac/v1"
	rbaclisters "k8s.io/client-go/listers/rbac/v1"
)

// NewFromInformers returns an authorizer that reads roles and bindings from
// the informer caches, never from etcd per request.
func NewFromInformers(informers rbacinformers.Interface) *Authorizer {
	return New(NewResolver(
		roleLister{informers.Roles().Lister()},
		roleBindingLister{informers.RoleBindings().Lister()},
		clusterRoleLister{informers.ClusterRoles().Lister()},
		clusterRoleBindingLister{informers.ClusterRoleBindings().Lister()},
	))
}

type roleLister struct{ l rbaclisters.RoleLister }

func (l roleLister) GetRole(_ context.Context, namespace, name string) (*rbacv1.Role, error) {
	return l.l.Roles(namespace).Get(name)
}

type roleBindingLister struct{ l rbaclisters.RoleBindingLister }

func (l roleBindingLister) ListRoleBindings(_ context.Context, namespace string) ([]*rbacv1.RoleBinding, error) {
	return l.l.RoleBindings(namespace).List(labels.Everything())
}

type clusterRoleLister struct{ l rbaclisters.ClusterRoleLister }

func (l clusterRoleLister) GetClusterRole(_ context.Context, name string) (*rbacv1.ClusterRole, error) {
	return l.l.Get(name)
}

type clusterRoleBindingLister struct {
	l rbaclisters.ClusterRoleBindingLister
}

func (l clusterRoleBindingLister) ListClusterRoleBindings(context.Context) ([]*rbacv1.ClusterRoleBinding, error) {
	return l.l.List(labels.Everything())
}
