package integration

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// BenchmarkConfigMapGet measures GET of one configmap through real HTTPS,
// authentication, authorization, the watch cache and protobuf encoding, as
// the admin (system:masters, allowed before RBAC is consulted) and as a
// user whose access comes from an RBAC RoleBinding, first with the bootstrap
// policy only and then with 1,000 more roles and bindings. Same server, same
// run, so the ratios are what to read:
//
//	go test ./test/integration -run '^$' -bench ConfigMapGet -benchtime 5s
func BenchmarkConfigMapGet(b *testing.B) {
	s := startGeneric(b)
	ctx := context.Background()
	if _, err := s.Client.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "bench"}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	if _, err := s.Client.RbacV1().RoleBindings("default").Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "bench-view"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "bench-user"}},
	}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	userCfg := userConfig(b, s, "bench-user")
	userCfg.QPS, userCfg.Burst = -1, -1
	user := kubernetes.NewForConfigOrDie(userCfg)

	get := func(c kubernetes.Interface) func(b *testing.B) {
		return func(b *testing.B) {
			cms := c.CoreV1().ConfigMaps("default")
			// Until the RBAC caches have the binding the user gets 403.
			for {
				if _, err := cms.Get(ctx, "bench", metav1.GetOptions{}); err == nil {
					break
				}
			}
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := cms.Get(ctx, "bench", metav1.GetOptions{}); err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
	}
	b.Run("admin", get(s.Client))
	b.Run("rbac-user", get(user))

	for i := range 500 {
		name := fmt.Sprintf("bench-%d", i)
		subjects := []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: name}}
		rule := rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{"example.com"}, Resources: []string{name}}
		if _, err := s.Client.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: []rbacv1.PolicyRule{rule}}, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		if _, err := s.Client.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name}, Subjects: subjects,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name}}, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		if _, err := s.Client.RbacV1().Roles("default").Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: []rbacv1.PolicyRule{rule}}, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		if _, err := s.Client.RbacV1().RoleBindings("default").Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name}, Subjects: subjects,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name}}, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("rbac-user-1000-more-bindings", get(user))
}
