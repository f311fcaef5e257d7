// Package rbac serves rbac.authorization.k8s.io/v1: roles, rolebindings,
// clusterroles and clusterrolebindings, with Kubernetes' validation and
// escalation prevention (a user may grant only what they hold, unless they
// hold the escalate or bind verb). The authorizer that enforces these
// objects is pkg/controlplane/auth/rbac.
package rbac

import (
	"context"
	"fmt"
	"strings"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/storage/names"

	authrbac "github.com/gcp-project/gcp/pkg/controlplane/auth/rbac"
	"github.com/gcp-project/gcp/pkg/controlplane/registry"
	"github.com/gcp-project/gcp/pkg/controlplane/registry/metavalidation"
	"github.com/gcp-project/gcp/pkg/controlplane/registry/table"
	"github.com/gcp-project/gcp/pkg/controlplane/registry/typed"
)

// APIGroup is rbac.authorization.k8s.io.
type APIGroup struct{}

var _ registry.APIGroup = APIGroup{}

// GroupName returns rbac.authorization.k8s.io.
func (APIGroup) GroupName() string { return rbacv1.GroupName }

// ReadBy makes the group one --runtime-config cannot turn off: the RBAC
// authorizer would deny every request it cannot read a policy for, and
// its informers would fail to list for ever.
func (APIGroup) ReadBy() string { return "the RBAC authorizer" }

// DiscoveryPriorities implements registry.DiscoveryPrioritizer with
// kube-apiserver's priorities for the group.
func (APIGroup) DiscoveryPriorities() map[string]registry.DiscoveryPriority {
	return map[string]registry.DiscoveryPriority{
		"v1": {Group: 17000, Version: 15},
	}
}

// InstallScheme registers the v1 types and their defaults.
func (APIGroup) InstallScheme(scheme *runtime.Scheme) error {
	typed.AddVersionedAsInternal(scheme, rbacv1.SchemeGroupVersion,
		&rbacv1.Role{}, &rbacv1.RoleList{},
		&rbacv1.RoleBinding{}, &rbacv1.RoleBindingList{},
		&rbacv1.ClusterRole{}, &rbacv1.ClusterRoleList{},
		&rbacv1.ClusterRoleBinding{}, &rbacv1.ClusterRoleBindingList{},
	)
	scheme.AddTypeDefaultingFunc(&rbacv1.RoleBinding{}, func(obj interface{}) {
		b := obj.(*rbacv1.RoleBinding)
		setBindingDefaults(&b.RoleRef, b.Subjects)
	})
	scheme.AddTypeDefaultingFunc(&rbacv1.ClusterRoleBinding{}, func(obj interface{}) {
		b := obj.(*rbacv1.ClusterRoleBinding)
		setBindingDefaults(&b.RoleRef, b.Subjects)
	})
	return nil
}

// NewRESTStorage builds the four resources.
func (APIGroup) NewRESTStorage(opts registry.StorageOptions) (genericapiserver.APIGroupInfo, bool, error) {
	info := opts.NewAPIGroupInfo(rbacv1.GroupName)
	getter := opts.RESTOptionsGetter
	roles, err := typed.Resource[*rbacv1.Role, *rbacv1.RoleList]{
		GroupResource: rbacv1.Resource("roles"),
		Singular:      "role",
		New:           func() *rbacv1.Role { return &rbacv1.Role{} },
		NewList:       func() *rbacv1.RoleList { return &rbacv1.RoleList{} },
		Strategy: strategy(opts.Scheme, true, ValidateRole, func(r, old *rbacv1.Role) field.ErrorList {
			return append(ValidateRole(r), metavalidation.ValidateObjectMetaUpdate(&r.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))...)
		}),
		Table: roleTable(),
	}.NewStore(getter)
	if err != nil {
		return info, false, err
	}
	clusterRoles, err := typed.Resource[*rbacv1.ClusterRole, *rbacv1.ClusterRoleList]{
		GroupResource: rbacv1.Resource("clusterroles"),
		Singular:      "clusterrole",
		New:           func() *rbacv1.ClusterRole { return &rbacv1.ClusterRole{} },
		NewList:       func() *rbacv1.ClusterRoleList { return &rbacv1.ClusterRoleList{} },
		Strategy: strategy(opts.Scheme, false, ValidateClusterRole, func(r, old *rbacv1.ClusterRole) field.ErrorList {
			return append(ValidateClusterRole(r), metavalidation.ValidateObjectMetaUpdate(&r.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))...)
		}),
		Table: roleTable(),
	}.NewStore(getter)
	if err != nil {
		return info, false, err
	}
	roleBindings, err := typed.Resource[*rbacv1.RoleBinding, *rbacv1.RoleBindingList]{
		GroupResource: rbacv1.Resource("rolebindings"),
		Singular:      "rolebinding",
		New:           func() *rbacv1.RoleBinding { return &rbacv1.RoleBinding{} },
		NewList:       func() *rbacv1.RoleBindingList { return &rbacv1.RoleBindingList{} },
		Strategy: strategy(opts.Scheme, true, ValidateRoleBinding, func(b, old *rbacv1.RoleBinding) field.ErrorList {
			errs := append(ValidateRoleBinding(b), metavalidation.ValidateObjectMetaUpdate(&b.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))...)
			return append(errs, validateRoleRefUnchanged(b.RoleRef, old.RoleRef)...)
		}),
		Table: bindingTable(),
	}.NewStore(getter)
	if err != nil {
		return info, false, err
	}
	clusterRoleBindings, err := typed.Resource[*rbacv1.ClusterRoleBinding, *rbacv1.ClusterRoleBindingList]{
		GroupResource: rbacv1.Resource("clusterrolebindings"),
		Singular:      "clusterrolebinding",
		New:           func() *rbacv1.ClusterRoleBinding { return &rbacv1.ClusterRoleBinding{} },
		NewList:       func() *rbacv1.ClusterRoleBindingList { return &rbacv1.ClusterRoleBindingList{} },
		Strategy: strategy(opts.Scheme, false, ValidateClusterRoleBinding, func(b, old *rbacv1.ClusterRoleBinding) field.ErrorList {
			errs := append(ValidateClusterRoleBinding(b), metavalidation.ValidateObjectMetaUpdate(&b.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))...)
			return append(errs, validateRoleRefUnchanged(b.RoleRef, old.RoleRef)...)
		}),
		Table: bindingTable(),
	}.NewStore(getter)
	if err != nil {
		return info, false, err
	}

	stored := storeResolver{roles: roles, roleBindings: roleBindings, clusterRoles: clusterRoles, clusterRoleBindings: clusterRoleBindings}
	e := escalation{authz: opts.Auth.Authorizer, resolver: authrbac.NewResolver(stored, stored, stored, stored)}
	enabled := opts.Enabled(&info, rbacv1.SchemeGroupVersion, map[string]rest.Storage{
		"roles":               &policyStore{Store: roles, check: e.checkRole(rbacv1.Resource("roles"))},
		"clusterroles":        &policyStore{Store: clusterRoles, check: e.checkRole(rbacv1.Resource("clusterroles"))},
		"rolebindings":        &policyStore{Store: roleBindings, check: e.checkBinding(rbacv1.Resource("rolebindings"))},
		"clusterrolebindings": &policyStore{Store: clusterRoleBindings, check: e.checkBinding(rbacv1.Resource("clusterrolebindings"))},
	})
	return info, enabled, nil
}

// strategy is the strategy every RBAC resource shares: PUT may create and
// needs no resourceVersion, as upstream.
func strategy[T runtime.Object](typer runtime.ObjectTyper, namespaced bool, validate func(T) field.ErrorList, validateUpdate func(obj, old T) field.ErrorList) *typed.Strategy[T] {
	return &typed.Strategy[T]{
		ObjectTyper:         typer,
		NameGenerator:       names.SimpleNameGenerator,
		Namespaced:          namespaced,
		CreateOnUpdate:      true,
		UnconditionalUpdate: true,
		ValidateCreate:      func(_ context.Context, obj T) field.ErrorList { return validate(obj) },
		ValidateUpdateFn:    func(_ context.Context, obj, old T) field.ErrorList { return validateUpdate(obj, old) },
	}
}

// roleTable prints NAME and CREATED AT, as kubectl does for roles.
func roleTable() table.Convertor {
	return table.New([]metav1.TableColumnDefinition{
		table.NameColumn(),
		{Name: "Created At", Type: "date", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]},
	}, func(obj runtime.Object) ([]interface{}, error) {
		switch r := obj.(type) {
		case *rbacv1.Role:
			return []interface{}{r.Name, r.CreationTimestamp.UTC().Format(time.RFC3339)}, nil
		case *rbacv1.ClusterRole:
			return []interface{}{r.Name, r.CreationTimestamp.UTC().Format(time.RFC3339)}, nil
		}
		return nil, fmt.Errorf("unexpected %T", obj)
	})
}

// bindingTable prints NAME, ROLE and AGE, and with -o wide the users,
// groups and service accounts bound.
func bindingTable() table.Convertor {
	return table.New([]metav1.TableColumnDefinition{
		table.NameColumn(),
		{Name: "Role", Type: "string", Description: rbacv1.RoleBinding{}.SwaggerDoc()["roleRef"]},
		table.AgeColumn(),
		{Name: "Users", Type: "string", Priority: 1, Description: "Users in the roleBinding"},
		{Name: "Groups", Type: "string", Priority: 1, Description: "Groups in the roleBinding"},
		{Name: "ServiceAccounts", Type: "string", Priority: 1, Description: "ServiceAccounts in the roleBinding"},
	}, func(obj runtime.Object) ([]interface{}, error) {
		var m metav1.ObjectMeta
		var ref rbacv1.RoleRef
		var subjects []rbacv1.Subject
		switch b := obj.(type) {
		case *rbacv1.RoleBinding:
			m, ref, subjects = b.ObjectMeta, b.RoleRef, b.Subjects
		case *rbacv1.ClusterRoleBinding:
			m, ref, subjects = b.ObjectMeta, b.RoleRef, b.Subjects
		default:
			return nil, fmt.Errorf("unexpected %T", obj)
		}
		var users, groups, sas []string
		for _, s := range subjects {
			switch s.Kind {
			case rbacv1.UserKind:
				users = append(users, s.Name)
			case rbacv1.GroupKind:
				groups = append(groups, s.Name)
			case rbacv1.ServiceAccountKind:
				sas = append(sas, s.Namespace+"/"+s.Name)
			}
		}
		return []interface{}{m.Name, ref.Kind + "/" + ref.Name, table.Age(m.CreationTimestamp),
			strings.Join(users, ", "), strings.Join(groups, ", "), strings.Join(sas, ", ")}, nil
	})
}
