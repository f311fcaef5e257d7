package integration

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	rbacvalidation "k8s.io/component-helpers/auth/rbac/validation"

	"github.com/gcp-project/gcp/pkg/controlplane/auth/rbac/bootstrappolicy"
	"github.com/gcp-project/gcp/pkg/layering"
	"github.com/gcp-project/gcp/pkg/testserver"
	"github.com/gcp-project/gcp/test/poll"
)

func createNamespace(t testing.TB, c kubernetes.Interface, name string) {
	t.Helper()
	if _, err := c.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func createRoleBinding(t *testing.T, c kubernetes.Interface, ns, name, kind, role string, subjects ...rbacv1.Subject) {
	t.Helper()
	if _, err := c.RbacV1().RoleBindings(ns).Create(context.Background(), &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: kind, Name: role},
		Subjects:   subjects,
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func createClusterRole(t *testing.T, c kubernetes.Interface, name string, rules ...rbacv1.PolicyRule) {
	t.Helper()
	if _, err := c.RbacV1().ClusterRoles().Create(context.Background(), &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func createClusterRoleBinding(t *testing.T, c kubernetes.Interface, name, role string, subjects ...rbacv1.Subject) {
	t.Helper()
	if _, err := c.RbacV1().ClusterRoleBindings().Create(context.Background(), &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects:   subjects,
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func group(name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: name}
}

func userSubject(name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: name}
}

// canI asks the server with a SelfSubjectAccessReview as c's user;
// resource is "resource" or "resource.group".
func canI(t *testing.T, c kubernetes.Interface, verb, resource, ns string) bool {
	t.Helper()
	resource, group, _ := strings.Cut(resource, ".")
	r, err := c.AuthorizationV1().SelfSubjectAccessReviews().Create(context.Background(), &authorizationv1.SelfSubjectAccessReview{
		Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: verb, Group: group, Resource: resource, Namespace: ns}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("SelfSubjectAccessReview: %v", err)
	}
	return r.Status.Allowed
}

func forbidden(t *testing.T, err error, contains string) {
	t.Helper()
	if !apierrors.IsForbidden(err) {
		t.Fatalf("want 403 Forbidden, got %v", err)
	}
	if !strings.Contains(err.Error(), contains) {
		t.Fatalf("message %q does not contain %q", err.Error(), contains)
	}
}

// TestRBACUserScenario is the walk-through: a group bound to edit in
// one namespace can write configmaps there and nowhere else.
func TestRBACUserScenario(t *testing.T) {
	t.Parallel()
	s := startGeneric(t)
	ctx := context.Background()
	createNamespace(t, s.Client, "team-a")
	createRoleBinding(t, s.Client, "team-a", "dev-edit", "ClusterRole", "edit", group("dev"))
	alice := userClient(t, s, "alice", "dev")

	poll.UntilTrue(t, 20*time.Millisecond, 10*time.Second, "alice may create configmaps in team-a", func() bool { return canI(t, alice, "create", "configmaps", "team-a") })
	if canI(t, alice, "create", "configmaps", "default") {
		t.Fatal("alice may create configmaps in default")
	}
	if _, err := alice.CoreV1().ConfigMaps("team-a").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create in team-a: %v", err)
	}
	_, err := alice.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}}, metav1.CreateOptions{})
	forbidden(t, err, `User "alice" cannot create resource "configmaps" in API group "" in the namespace "default"`)
	if _, err := s.Client.CoreV1().ConfigMaps("default").Get(ctx, "c", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the forbidden create left something: %v", err)
	}
	_, err = alice.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	forbidden(t, err, `User "alice" cannot list resource "namespaces" in API group "" at the cluster scope`)

	// Discovery and the basic-user self reviews work for every
	// authenticated user through the bootstrap policy.
	if _, err := alice.Discovery().ServerGroups(); err != nil {
		t.Fatalf("discovery as alice: %v", err)
	}
	// system:masters keeps full access through the chain.
	if !canI(t, s.Client, "delete", "clusterroles.rbac.authorization.k8s.io", "") {
		t.Fatal("admin may not delete clusterroles")
	}
}

// TestRBACEscalationPrevention: a user can grant only what they hold,
// unless they hold escalate or bind.
func TestRBACEscalationPrevention(t *testing.T) {
	t.Parallel()
	s := startGeneric(t)
	ctx := context.Background()
	createNamespace(t, s.Client, "team-a")
	createNamespace(t, s.Client, "team-b")
	createRoleBinding(t, s.Client, "team-a", "alice-admin", "ClusterRole", "admin", userSubject("alice"))
	createRoleBinding(t, s.Client, "team-a", "big", "ClusterRole", "cluster-admin", userSubject("bob"))
	alice := userClient(t, s, "alice")
	poll.UntilTrue(t, 20*time.Millisecond, 10*time.Second, "alice is admin of team-a", func() bool { return canI(t, alice, "create", "roles.rbac.authorization.k8s.io", "team-a") })

	widgets := rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{"example.com"}, Resources: []string{"widgets"}}
	cmRead := rbacv1.PolicyRule{Verbs: []string{"get", "list"}, APIGroups: []string{""}, Resources: []string{"configmaps"}}

	t.Run("role with more than the creator holds", func(t *testing.T) {
		_, err := alice.RbacV1().Roles("team-a").Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "more"}, Rules: []rbacv1.PolicyRule{widgets}}, metav1.CreateOptions{})
		forbidden(t, err, "is attempting to grant RBAC permissions not currently held")
		if !strings.Contains(err.Error(), `{APIGroups:["example.com"], Resources:["widgets"], Verbs:["get"]}`) {
			t.Errorf("message does not name the missing rule: %v", err)
		}
		if _, err := s.Client.RbacV1().Roles("team-a").Get(ctx, "more", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("forbidden role exists: %v", err)
		}
	})
	t.Run("role within what the creator holds, bound at once", func(t *testing.T) {
		if _, err := alice.RbacV1().Roles("team-a").Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "cm-reader"}, Rules: []rbacv1.PolicyRule{cmRead}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		createRoleBinding(t, alice, "team-a", "carol-reads", "Role", "cm-reader", userSubject("carol"))
	})
	t.Run("role in a namespace where the creator holds nothing", func(t *testing.T) {
		_, err := alice.RbacV1().Roles("team-b").Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "cm-reader"}, Rules: []rbacv1.PolicyRule{cmRead}}, metav1.CreateOptions{})
		forbidden(t, err, "")
	})
	t.Run("binding to a role the creator cannot bind", func(t *testing.T) {
		_, err := alice.RbacV1().RoleBindings("team-a").Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "steal"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
			Subjects:   []rbacv1.Subject{userSubject("alice")},
		}, metav1.CreateOptions{})
		forbidden(t, err, "is attempting to grant RBAC permissions not currently held")
	})
	t.Run("user adds themselves to a binding to escalate", func(t *testing.T) {
		b, err := alice.RbacV1().RoleBindings("team-a").Get(ctx, "big", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		b.Subjects = append(b.Subjects, userSubject("alice"))
		_, err = alice.RbacV1().RoleBindings("team-a").Update(ctx, b, metav1.UpdateOptions{})
		forbidden(t, err, "")
		got, _ := s.Client.RbacV1().RoleBindings("team-a").Get(ctx, "big", metav1.GetOptions{})
		if len(got.Subjects) != 1 {
			t.Fatalf("forbidden update changed subjects: %v", got.Subjects)
		}
	})
	t.Run("user points their own binding at a bigger role", func(t *testing.T) {
		b, err := alice.RbacV1().RoleBindings("team-a").Get(ctx, "alice-admin", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		b.RoleRef.Name = "cluster-admin"
		_, err = alice.RbacV1().RoleBindings("team-a").Update(ctx, b, metav1.UpdateOptions{})
		forbidden(t, err, "is attempting to grant RBAC permissions not currently held")
		got, _ := s.Client.RbacV1().RoleBindings("team-a").Get(ctx, "alice-admin", metav1.GetOptions{})
		if got.RoleRef.Name != "admin" {
			t.Fatalf("forbidden update changed the roleRef: %v", got.RoleRef)
		}
	})
	t.Run("roleRef is immutable", func(t *testing.T) {
		b, err := s.Client.RbacV1().RoleBindings("team-a").Get(ctx, "alice-admin", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		b.RoleRef.Name = "cluster-admin"
		_, err = s.Client.RbacV1().RoleBindings("team-a").Update(ctx, b, metav1.UpdateOptions{})
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "roleRef") {
			t.Fatalf("want 422 on roleRef, got %v", err)
		}
	})
	t.Run("bind verb allows binding without holding the rules", func(t *testing.T) {
		createClusterRole(t, s.Client, "widget-reader", widgets)
		createClusterRole(t, s.Client, "bind-widget-reader", rbacv1.PolicyRule{Verbs: []string{"bind"}, APIGroups: []string{rbacv1.GroupName}, Resources: []string{"clusterroles"}, ResourceNames: []string{"widget-reader"}})
		createRoleBinding(t, s.Client, "team-a", "alice-binds", "ClusterRole", "bind-widget-reader", userSubject("alice"))
		poll.UntilTrue(t, 20*time.Millisecond, 10*time.Second, "alice may bind widget-reader", func() bool {
			_, err := alice.RbacV1().RoleBindings("team-a").Create(ctx, &rbacv1.RoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: "dave-widgets"},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "widget-reader"},
				Subjects:   []rbacv1.Subject{userSubject("dave")},
			}, metav1.CreateOptions{})
			return err == nil
		})
	})
	t.Run("escalate verb allows any rule", func(t *testing.T) {
		createClusterRole(t, s.Client, "escalate-roles", rbacv1.PolicyRule{Verbs: []string{"escalate"}, APIGroups: []string{rbacv1.GroupName}, Resources: []string{"roles"}})
		createRoleBinding(t, s.Client, "team-a", "alice-escalates", "ClusterRole", "escalate-roles", userSubject("alice"))
		poll.UntilTrue(t, 20*time.Millisecond, 10*time.Second, "alice may escalate roles", func() bool {
			_, err := alice.RbacV1().Roles("team-a").Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "more"}, Rules: []rbacv1.PolicyRule{widgets}}, metav1.CreateOptions{})
			return err == nil
		})
	})
	t.Run("aggregationRule needs escalate", func(t *testing.T) {
		createClusterRole(t, s.Client, "clusterrole-writer", rbacv1.PolicyRule{Verbs: []string{"create"}, APIGroups: []string{rbacv1.GroupName}, Resources: []string{"clusterroles"}})
		createClusterRoleBinding(t, s.Client, "alice-clusterroles", "clusterrole-writer", userSubject("alice"))
		poll.UntilTrue(t, 20*time.Millisecond, 10*time.Second, "alice may create clusterroles", func() bool { return canI(t, alice, "create", "clusterroles.rbac.authorization.k8s.io", "") })
		_, err := alice.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
			ObjectMeta:      metav1.ObjectMeta{Name: "aggregated"},
			AggregationRule: &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"x": "y"}}}},
		}, metav1.CreateOptions{})
		forbidden(t, err, "")
		if _, err := s.Client.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
			ObjectMeta:      metav1.ObjectMeta{Name: "aggregated"},
			AggregationRule: &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"x": "y"}}}},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("admin may create an aggregated role: %v", err)
		}
	})
}

// TestRBACInvalidObjects: invalid RBAC objects get 422 with field paths.
func TestRBACInvalidObjects(t *testing.T) {
	t.Parallel()
	s := startGeneric(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		create func() error
		field  string
	}{
		{"rule without verbs", func() error {
			_, err := s.Client.RbacV1().Roles("default").Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "x"}, Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}}}}, metav1.CreateOptions{})
			return err
		}, "rules[0].verbs"},
		{"non-resource URL in a namespaced role", func() error {
			_, err := s.Client.RbacV1().Roles("default").Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "x"}, Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz"}}}}, metav1.CreateOptions{})
			return err
		}, "rules[0].nonResourceURLs"},
		{"binding to an unknown role kind", func() error {
			_, err := s.Client.RbacV1().RoleBindings("default").Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "x"}, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Widget", Name: "x"}}, metav1.CreateOptions{})
			return err
		}, "roleRef.kind"},
		{"subject of unknown kind", func() error {
			_, err := s.Client.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "x"}, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
				Subjects: []rbacv1.Subject{{Kind: "Robot", Name: "r"}}}, metav1.CreateOptions{})
			return err
		}, "subjects[0].kind"},
		{"service account without namespace in a cluster binding", func() error {
			_, err := s.Client.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "x"}, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
				Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "r"}}}, metav1.CreateOptions{})
			return err
		}, "subjects[0].namespace"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.create()
			if !apierrors.IsInvalid(err) {
				t.Fatalf("want 422, got %v", err)
			}
			if !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("error %q does not name %s", err, tc.field)
			}
		})
	}
}

// TestImpersonation: --as needs the impersonate verb, granted by RBAC.
func TestImpersonation(t *testing.T) {
	t.Parallel()
	s := startGeneric(t)
	ctx := context.Background()
	createNamespace(t, s.Client, "team-a")
	createRoleBinding(t, s.Client, "team-a", "dev-edit", "ClusterRole", "edit", group("dev"))

	as := func(cfg *rest.Config, name string, groups ...string) kubernetes.Interface {
		c := rest.CopyConfig(cfg)
		c.Impersonate = rest.ImpersonationConfig{UserName: name, Groups: groups}
		return kubernetes.NewForConfigOrDie(c)
	}
	// The admin impersonates alice in dev: alice's rights, not the admin's.
	asAlice := as(s.AdminConfig, "alice", "dev")
	poll.UntilTrue(t, 20*time.Millisecond, 10*time.Second, "alice (impersonated) may create configmaps in team-a", func() bool { return canI(t, asAlice, "create", "configmaps", "team-a") })
	if canI(t, asAlice, "create", "configmaps", "default") {
		t.Fatal("impersonated alice has the admin's rights")
	}
	if _, err := asAlice.CoreV1().Secrets("default").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("impersonated alice listing secrets in default: want 403, got %v", err)
	}

	// Without the impersonate verb, impersonation is forbidden.
	bobCfg := userConfig(t, s, "bob")
	_, err := as(bobCfg, "alice", "dev").CoreV1().ConfigMaps("team-a").List(ctx, metav1.ListOptions{})
	// 1.37 tries constrained impersonation first and reports its verb.
	forbidden(t, err, `User "bob" cannot impersonate`)

	// Granted for user alice only.
	createClusterRole(t, s.Client, "impersonate-alice", rbacv1.PolicyRule{Verbs: []string{"impersonate"}, APIGroups: []string{""}, Resources: []string{"users"}, ResourceNames: []string{"alice"}})
	createClusterRoleBinding(t, s.Client, "bob-impersonates-alice", "impersonate-alice", userSubject("bob"))
	poll.UntilTrue(t, 20*time.Millisecond, 10*time.Second, "bob may impersonate alice", func() bool {
		_, err := as(bobCfg, "alice").CoreV1().ConfigMaps("team-a").List(ctx, metav1.ListOptions{})
		// alice without the dev group has no rights: 403 for alice, not bob.
		return err != nil && strings.Contains(err.Error(), `User "alice" cannot list`)
	})
	_, err = as(bobCfg, "carol").CoreV1().ConfigMaps("team-a").List(ctx, metav1.ListOptions{})
	forbidden(t, err, `User "bob" cannot impersonate`)
	_, err = as(bobCfg, "alice", "dev").CoreV1().ConfigMaps("team-a").List(ctx, metav1.ListOptions{})
	forbidden(t, err, `User "bob" cannot impersonate`)
}

// TestWithoutRBACLayer: a control plane composed without the RBAC layer
// serves no RBAC API and authorizes only system:masters, while the review
// APIs still answer from that authorizer.
func TestWithoutRBACLayer(t *testing.T) {
	t.Parallel()
	s := testserver.Start(t, testserver.Options{Stack: layering.Generic().Without(layering.RBAC)})
	ctx := context.Background()
	if _, err := s.Client.RbacV1().ClusterRoles().List(ctx, metav1.ListOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("clusterroles without the RBAC layer: want 404, got %v", err)
	}
	alice := userClient(t, s, "alice", "dev")
	_, err := alice.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{})
	forbidden(t, err, `User "alice" cannot list resource "configmaps"`)
	if !canI(t, s.Client, "delete", "namespaces", "") {
		t.Fatal("system:masters is not allowed without RBAC")
	}
	// Health stays public; discovery is for system:masters only.
	if code := getStatus(t, httpsClient(t, s, nil), s.URL+"/readyz"); code != 200 {
		t.Fatalf("anonymous /readyz: %d", code)
	}
	rules, err := s.Client.AuthorizationV1().SelfSubjectRulesReviews().Create(ctx, &authorizationv1.SelfSubjectRulesReview{Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: "default"}}, metav1.CreateOptions{})
	if err != nil || len(rules.Status.ResourceRules) != 1 || rules.Status.ResourceRules[0].Verbs[0] != "*" {
		t.Fatalf("rules of system:masters without RBAC: %+v, %v", rules, err)
	}
}

// TestBootstrapPolicy: the default roles exist once /readyz is ready and
// the hook is listed; reconciling again keeps user additions, restores
// what was removed, and leaves roles with autoupdate=false alone.
func TestBootstrapPolicy(t *testing.T) {
	t.Parallel()
	s := startGeneric(t)
	ctx := context.Background()
	rbac := s.Client.RbacV1()
	for _, name := range []string{"cluster-admin", "admin", "edit", "view", "system:discovery", "system:basic-user", "system:public-info-viewer",
		"system:auth-delegator", "system:monitoring", "system:service-account-issuer-discovery", "system:controller:namespace-controller", "system:gcp-controllers"} {
		if _, err := rbac.ClusterRoles().Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Errorf("clusterrole %s: %v", name, err)
		}
	}
	body, err := s.Client.Discovery().RESTClient().Get().AbsPath("/readyz").Param("verbose", "true").DoRaw(ctx)
	if err != nil || !strings.Contains(string(body), "[+]poststarthook/rbac/bootstrap-roles ok") {
		t.Fatalf("/readyz does not list the bootstrap hook: %s %v", body, err)
	}

	edit, _ := rbac.ClusterRoles().Get(ctx, "edit", metav1.GetOptions{})
	edit.Rules = append(edit.Rules, rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{"example.com"}, Resources: []string{"widgets"}})
	if _, err := rbac.ClusterRoles().Update(ctx, edit, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	view, _ := rbac.ClusterRoles().Get(ctx, "view", metav1.GetOptions{})
	viewRules := view.Rules
	view.Rules = view.Rules[:1]
	if _, err := rbac.ClusterRoles().Update(ctx, view, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	monitoring, _ := rbac.ClusterRoles().Get(ctx, "system:monitoring", metav1.GetOptions{})
	monitoring.Annotations[rbacv1.AutoUpdateAnnotationKey] = "false"
	monitoring.Rules = nil
	if _, err := rbac.ClusterRoles().Update(ctx, monitoring, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := rbac.ClusterRoleBindings().Delete(ctx, "system:discovery", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The generic stack's policy: the bootstrap policy and the layers' own
	// roles, view's rules among them.
	comp, err := layering.Generic().Compose()
	if err != nil {
		t.Fatal(err)
	}
	if err := bootstrappolicy.Reconcile(ctx, s.Client, comp.Policy); err != nil {
		t.Fatal(err)
	}
	edit, _ = rbac.ClusterRoles().Get(ctx, "edit", metav1.GetOptions{})
	if !strings.Contains(fmt.Sprint(edit.Rules), "widgets") {
		t.Error("reconciling dropped a rule a user added to edit")
	}
	view, _ = rbac.ClusterRoles().Get(ctx, "view", metav1.GetOptions{})
	if covers, missing := rbacvalidation.Covers(view.Rules, viewRules); !covers {
		t.Errorf("reconciling did not restore view's rules, missing %v", missing)
	}
	monitoring, _ = rbac.ClusterRoles().Get(ctx, "system:monitoring", metav1.GetOptions{})
	if len(monitoring.Rules) != 0 {
		t.Error("reconciling changed a role with autoupdate=false")
	}
	if _, err := rbac.ClusterRoleBindings().Get(ctx, "system:discovery", metav1.GetOptions{}); err != nil {
		t.Errorf("deleted default binding not restored: %v", err)
	}
}

func getStatus(t *testing.T, c *http.Client, url string) int {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestAccessReviews: SubjectAccessReview, LocalSubjectAccessReview and
// SelfSubjectRulesReview answer from the server's authorizer.
func TestAccessReviews(t *testing.T) {
	t.Parallel()
	s := startGeneric(t)
	ctx := context.Background()
	createNamespace(t, s.Client, "team-a")
	createRoleBinding(t, s.Client, "team-a", "dev-edit", "ClusterRole", "edit", group("dev"))
	sar := func(ns string) authorizationv1.SubjectAccessReviewStatus {
		r, err := s.Client.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: "alice", Groups: []string{"dev"}, ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "create", Resource: "configmaps", Namespace: ns}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return r.Status
	}
	poll.UntilTrue(t, 20*time.Millisecond, 10*time.Second, "SubjectAccessReview allows alice in team-a", func() bool { return sar("team-a").Allowed })
	if st := sar("team-a"); !strings.Contains(st.Reason, `RoleBinding "dev-edit/team-a" of ClusterRole "edit" to Group "dev"`) {
		t.Errorf("reason %q", st.Reason)
	}
	if st := sar("default"); st.Allowed || st.Denied {
		t.Errorf("default: %+v (RBAC has no opinion, it never denies)", st)
	}
	lsar, err := s.Client.AuthorizationV1().LocalSubjectAccessReviews("team-a").Create(ctx, &authorizationv1.LocalSubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: "alice", Groups: []string{"dev"}, ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "delete", Resource: "secrets", Namespace: "team-a"}}}, metav1.CreateOptions{})
	if err != nil || !lsar.Status.Allowed {
		t.Fatalf("LocalSubjectAccessReview: %+v %v", lsar, err)
	}
	_, err = s.Client.AuthorizationV1().LocalSubjectAccessReviews("team-a").Create(ctx, &authorizationv1.LocalSubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: "alice", ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "get", Resource: "secrets", Namespace: "default"}}}, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.resourceAttributes.namespace") {
		t.Fatalf("namespace mismatch: want 422, got %v", err)
	}

	alice := userClient(t, s, "alice", "dev")
	rules, err := alice.AuthorizationV1().SelfSubjectRulesReviews().Create(ctx, &authorizationv1.SelfSubjectRulesReview{Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: "team-a"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var resources, urls []string
	for _, r := range rules.Status.ResourceRules {
		resources = append(resources, r.Resources...)
	}
	for _, r := range rules.Status.NonResourceRules {
		urls = append(urls, r.NonResourceURLs...)
	}
	if got := strings.Join(resources, ","); !strings.Contains(got, "configmaps") || !strings.Contains(got, "selfsubjectaccessreviews") {
		t.Errorf("resource rules in team-a: %s", got)
	}
	if !strings.Contains(strings.Join(urls, ","), "/version") {
		t.Errorf("non-resource rules: %v", urls)
	}
	rules, _ = alice.AuthorizationV1().SelfSubjectRulesReviews().Create(ctx, &authorizationv1.SelfSubjectRulesReview{Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: "default"}}, metav1.CreateOptions{})
	for _, r := range rules.Status.ResourceRules {
		if strings.Contains(strings.Join(r.Resources, ","), "configmaps") {
			t.Errorf("alice has configmap rules in default: %+v", r)
		}
	}
}
