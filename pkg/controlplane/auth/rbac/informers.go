package rbac

import (
	"context"
	"fmt"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/apiserver/pkg/authentication/user"
	rbacinformers "k8s.io/client-go/informers/rbac/v1"
	rbaclisters "k8s.io/client-go/listers/rbac/v1"
	"k8s.io/client-go/tools/cache"
)

// subjectIndex indexes bindings by the identities their subjects name, so
// a decision reads only the bindings that can apply to the user instead of
// every binding.
const subjectIndex = "gcp.io/rbac-subject"

// NewFromInformers returns an authorizer that reads roles and bindings from
// the informer caches, never from etcd per request, and that lets a request
// they do not allow wait for them to load. It adds a subject index to the
// binding informers, so call it before the informers start.
func NewFromInformers(informers rbacinformers.Interface) (*Authorizer, error) {
	rbs, crbs := informers.RoleBindings().Informer(), informers.ClusterRoleBindings().Informer()
	for _, inf := range []cache.SharedIndexInformer{rbs, crbs} {
		if err := inf.AddIndexers(cache.Indexers{subjectIndex: indexBySubject}); err != nil {
			return nil, fmt.Errorf("RBAC subject index: %w", err)
		}
	}
	a := New(NewResolver(
		roleLister{informers.Roles().Lister()},
		roleBindingLister{l: informers.RoleBindings().Lister(), idx: rbs.GetIndexer()},
		clusterRoleLister{informers.ClusterRoles().Lister()},
		clusterRoleBindingLister{l: informers.ClusterRoleBindings().Lister(), idx: crbs.GetIndexer()},
	))
	roles, clusterRoles := informers.Roles().Informer(), informers.ClusterRoles().Informer()
	a.synced = []cache.DoneChecker{roles.HasSyncedChecker(), rbs.HasSyncedChecker(), clusterRoles.HasSyncedChecker(), crbs.HasSyncedChecker()}
	return a, nil
}

// indexBySubject returns the identity keys a binding's subjects name,
// prefixed with the binding's namespace: "team-a/User:alice",
// "team-a/Group:dev", "/User:system:serviceaccount:team-a:robot" (a
// ClusterRoleBinding has no namespace). A ServiceAccount subject is indexed
// by its user name; without a namespace it means the binding's namespace,
// and in a ClusterRoleBinding it names nobody.
func indexBySubject(obj any) ([]string, error) {
	var subjects []rbacv1.Subject
	var namespace string
	switch b := obj.(type) {
	case *rbacv1.RoleBinding:
		subjects, namespace = b.Subjects, b.Namespace
	case *rbacv1.ClusterRoleBinding:
		subjects = b.Subjects
	default:
		return nil, nil
	}
	keys := make([]string, 0, len(subjects))
	for _, s := range subjects {
		switch s.Kind {
		case rbacv1.UserKind, rbacv1.GroupKind:
			keys = append(keys, namespace+"/"+s.Kind+":"+s.Name)
		case rbacv1.ServiceAccountKind:
			ns := namespace
			if s.Namespace != "" {
				ns = s.Namespace
			}
			if ns != "" {
				keys = append(keys, namespace+"/User:"+serviceaccount.MakeUsername(ns, s.Name))
			}
		}
	}
	return keys, nil
}

// byUser returns the distinct bindings of namespace ("" for
// ClusterRoleBindings) indexed under u's name or groups.
func byUser[T any](idx cache.Indexer, u user.Info, namespace string) ([]T, error) {
	keys := make([]string, 0, 1+len(u.GetGroups()))
	keys = append(keys, namespace+"/User:"+u.GetName())
	for _, g := range u.GetGroups() {
		keys = append(keys, namespace+"/Group:"+g)
	}
	var out []T
	seen := map[any]bool{}
	for _, key := range keys {
		objs, err := idx.ByIndex(subjectIndex, key)
		if err != nil {
			return nil, err
		}
		for _, o := range objs {
			b, ok := o.(T)
			if !ok || seen[o] {
				continue
			}
			seen[o] = true
			out = append(out, b)
		}
	}
	return out, nil
}

type roleLister struct{ l rbaclisters.RoleLister }

func (l roleLister) GetRole(_ context.Context, namespace, name string) (*rbacv1.Role, error) {
	return l.l.Roles(namespace).Get(name)
}

type roleBindingLister struct {
	l   rbaclisters.RoleBindingLister
	idx cache.Indexer
}

func (l roleBindingLister) ListRoleBindings(_ context.Context, namespace string) ([]*rbacv1.RoleBinding, error) {
	return l.l.RoleBindings(namespace).List(labels.Everything())
}

func (l roleBindingLister) ListRoleBindingsFor(ctx context.Context, u user.Info, namespace string) ([]*rbacv1.RoleBinding, error) {
	if l.idx == nil {
		return l.ListRoleBindings(ctx, namespace)
	}
	return byUser[*rbacv1.RoleBinding](l.idx, u, namespace)
}

type clusterRoleLister struct{ l rbaclisters.ClusterRoleLister }

func (l clusterRoleLister) GetClusterRole(_ context.Context, name string) (*rbacv1.ClusterRole, error) {
	return l.l.Get(name)
}

type clusterRoleBindingLister struct {
	l   rbaclisters.ClusterRoleBindingLister
	idx cache.Indexer
}

func (l clusterRoleBindingLister) ListClusterRoleBindings(context.Context) ([]*rbacv1.ClusterRoleBinding, error) {
	return l.l.List(labels.Everything())
}

func (l clusterRoleBindingLister) ListClusterRoleBindingsFor(ctx context.Context, u user.Info) ([]*rbacv1.ClusterRoleBinding, error) {
	if l.idx == nil {
		return l.ListClusterRoleBindings(ctx)
	}
	return byUser[*rbacv1.ClusterRoleBinding](l.idx, u, "")
}
