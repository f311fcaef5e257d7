package bootstrappolicy

import (
	"context"
	"sync"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/component-helpers/auth/rbac/reconciliation"
)

// listed holds the policy's objects as one list per kind (and namespace)
// found them at the start of a pass, selected by BootstrappingLabel, so
// that the pass makes one request per object it writes instead of a GET
// before each: on a new cluster one create per object, on a restart
// nothing for an object that needs no update. Each object's first Get is
// answered from the lists; any later one (a retry after a conflict, or
// after AlreadyExists for one created since, or without the label) asks
// the server, as does every Get of a kind whose list failed.
type listed struct {
	mu sync.Mutex
	// objects are the listed objects by kind, namespace and name; a key
	// is deleted once answered.
	objects map[listedKey]any
	// complete are the kinds and namespaces whose list succeeded: a
	// name not in objects is not there.
	complete map[listedKey]bool
	// answered are the names answered from the lists.
	answered map[listedKey]bool
}

type listedKey struct{ kind, namespace, name string }

// listPolicy lists what policy has, one request per kind and namespace.
func listPolicy(ctx context.Context, client kubernetes.Interface, policy Policy) *listed {
	l := &listed{objects: map[listedKey]any{}, complete: map[listedKey]bool{}, answered: map[listedKey]bool{}}
	opts := metav1.ListOptions{LabelSelector: BootstrappingLabel + "=" + BootstrappingLabelValue}
	rbac := client.RbacV1()
	if len(policy.ClusterRoles) > 0 {
		if list, err := rbac.ClusterRoles().List(ctx, opts); err == nil {
			l.complete[listedKey{kind: "clusterrole"}] = true
			for i := range list.Items {
				l.objects[listedKey{"clusterrole", "", list.Items[i].Name}] = &list.Items[i]
			}
		}
	}
	if len(policy.ClusterRoleBindings) > 0 {
		if list, err := rbac.ClusterRoleBindings().List(ctx, opts); err == nil {
			l.complete[listedKey{kind: "clusterrolebinding"}] = true
			for i := range list.Items {
				l.objects[listedKey{"clusterrolebinding", "", list.Items[i].Name}] = &list.Items[i]
			}
		}
	}
	for ns := range policy.Roles {
		if list, err := rbac.Roles(ns).List(ctx, opts); err == nil {
			l.complete[listedKey{kind: "role", namespace: ns}] = true
			for i := range list.Items {
				l.objects[listedKey{"role", ns, list.Items[i].Name}] = &list.Items[i]
			}
		}
	}
	for ns := range policy.RoleBindings {
		if list, err := rbac.RoleBindings(ns).List(ctx, opts); err == nil {
			l.complete[listedKey{kind: "rolebinding", namespace: ns}] = true
			for i := range list.Items {
				l.objects[listedKey{"rolebinding", ns, list.Items[i].Name}] = &list.Items[i]
			}
		}
	}
	return l
}

// take answers the first Get of kind's namespace/name: the listed object,
// or nil if the list says there is none; ok is false when the server must
// be asked.
func (l *listed) take(kind, namespace, name string) (obj any, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	key := listedKey{kind, namespace, name}
	if l.answered[key] || !l.complete[listedKey{kind: kind, namespace: namespace}] {
		return nil, false
	}
	l.answered[key] = true
	obj = l.objects[key]
	delete(l.objects, key)
	return obj, true
}

func notFound(resource, name string) error {
	return apierrors.NewNotFound(rbacv1.Resource(resource), name)
}

// listedClusterRoles is a ClusterRoleModifier whose Gets take from l.
type listedClusterRoles struct {
	reconciliation.ClusterRoleModifier
	l *listed
}

func (m listedClusterRoles) Get(namespace, name string) (reconciliation.RuleOwner, error) {
	obj, ok := m.l.take("clusterrole", namespace, name)
	switch {
	case !ok:
		return m.ClusterRoleModifier.Get(namespace, name)
	case obj == nil:
		return nil, notFound("clusterroles", name)
	}
	return reconciliation.ClusterRoleRuleOwner{ClusterRole: obj.(*rbacv1.ClusterRole)}, nil
}

// listedRoles is a RoleModifier whose Gets take from l.
type listedRoles struct {
	reconciliation.RoleModifier
	l *listed
}

func (m listedRoles) Get(namespace, name string) (reconciliation.RuleOwner, error) {
	obj, ok := m.l.take("role", namespace, name)
	switch {
	case !ok:
		return m.RoleModifier.Get(namespace, name)
	case obj == nil:
		return nil, notFound("roles", name)
	}
	return reconciliation.RoleRuleOwner{Role: obj.(*rbacv1.Role)}, nil
}

// listedClusterRoleBindings is a ClusterRoleBindingClientAdapter whose
// Gets take from l.
type listedClusterRoleBindings struct {
	reconciliation.ClusterRoleBindingClientAdapter
	l *listed
}

func (m listedClusterRoleBindings) Get(namespace, name string) (reconciliation.RoleBinding, error) {
	obj, ok := m.l.take("clusterrolebinding", namespace, name)
	switch {
	case !ok:
		return m.ClusterRoleBindingClientAdapter.Get(namespace, name)
	case obj == nil:
		return nil, notFound("clusterrolebindings", name)
	}
	return reconciliation.ClusterRoleBindingAdapter{ClusterRoleBinding: obj.(*rbacv1.ClusterRoleBinding)}, nil
}

// listedRoleBindings is a RoleBindingClientAdapter whose Gets take from l.
type listedRoleBindings struct {
	reconciliation.RoleBindingClientAdapter
	l *listed
}

func (m listedRoleBindings) Get(namespace, name string) (reconciliation.RoleBinding, error) {
	obj, ok := m.l.take("rolebinding", namespace, name)
	switch {
	case !ok:
		return m.RoleBindingClientAdapter.Get(namespace, name)
	case obj == nil:
		return nil, notFound("rolebindings", name)
	}
	return reconciliation.RoleBindingAdapter{RoleBinding: obj.(*rbacv1.RoleBinding)}, nil
}
