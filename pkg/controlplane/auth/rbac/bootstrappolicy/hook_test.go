package bootstrappolicy

import (
	"context"
	"errors"
	"maps"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	rbacvalidation "k8s.io/component-helpers/auth/rbac/validation"
)

func reconciled(t *testing.T) *fake.Clientset {
	t.Helper()
	client := fake.NewClientset()
	if err := Reconcile(context.Background(), client, testPolicy()); err != nil {
		t.Fatalf("first pass: %v", err)
	}
	return client
}

// writes lists the mutating actions the client saw.
func writes(client *fake.Clientset) []string {
	var w []string
	for _, a := range client.Actions() {
		if a.GetVerb() != "get" && a.GetVerb() != "list" && a.GetVerb() != "watch" {
			w = append(w, a.GetVerb()+" "+a.GetResource().Resource)
		}
	}
	return w
}

func TestReconcileCreatesEverything(t *testing.T) {
	client := reconciled(t)
	ctx := context.Background()
	rbac := client.RbacV1()
	for _, want := range mustAggregate(t, testPolicy()).ClusterRoles {
		got, err := rbac.ClusterRoles().Get(ctx, want.Name, metav1.GetOptions{})
		if err != nil {
			t.Errorf("clusterrole %s: %v", want.Name, err)
			continue
		}
		if ok, missing := rbacvalidation.Covers(got.Rules, want.Rules); !ok {
			t.Errorf("clusterrole %s misses %v", want.Name, missing)
		}
		if (want.AggregationRule == nil) != (got.AggregationRule == nil) {
			t.Errorf("clusterrole %s: aggregation rule %v", want.Name, got.AggregationRule)
		}
		if got.Labels[BootstrappingLabel] != BootstrappingLabelValue || got.Annotations[rbacv1.AutoUpdateAnnotationKey] != "true" {
			t.Errorf("clusterrole %s: labels %v annotations %v", want.Name, got.Labels, got.Annotations)
		}
	}
	for _, want := range ClusterRoleBindings() {
		got, err := rbac.ClusterRoleBindings().Get(ctx, want.Name, metav1.GetOptions{})
		if err != nil || got.RoleRef != want.RoleRef || len(got.Subjects) != len(want.Subjects) {
			t.Errorf("clusterrolebinding %s: %v %v", want.Name, got, err)
		}
	}
	for ns, roles := range NamespaceRoles() {
		for _, want := range roles {
			got, err := rbac.Roles(ns).Get(ctx, want.Name, metav1.GetOptions{})
			if err != nil || len(got.Rules) != len(want.Rules) {
				t.Errorf("role %s/%s: %v %v", ns, want.Name, got, err)
			}
		}
	}
	for ns, bindings := range NamespaceRoleBindings() {
		for _, want := range bindings {
			got, err := rbac.RoleBindings(ns).Get(ctx, want.Name, metav1.GetOptions{})
			if err != nil || got.RoleRef != want.RoleRef {
				t.Errorf("rolebinding %s/%s: %v %v", ns, want.Name, got, err)
			}
		}
	}
	// kube-system did not exist; the pass created it for the roles.
	if _, err := client.CoreV1().Namespaces().Get(ctx, "kube-system", metav1.GetOptions{}); err != nil {
		t.Errorf("kube-system: %v", err)
	}
	list, _ := rbac.ClusterRoles().List(ctx, metav1.ListOptions{})
	if want := len(testPolicy().ClusterRoles); len(list.Items) != want {
		t.Errorf("%d clusterroles, want %d", len(list.Items), want)
	}
}

func TestReconcileIsIdempotent(t *testing.T) {
	client := reconciled(t)
	client.ClearActions()
	if err := Reconcile(context.Background(), client, testPolicy()); err != nil {
		t.Fatal(err)
	}
	if w := writes(client); len(w) != 0 {
		t.Errorf("second pass wrote: %v", w)
	}
}

func TestReconcileKeepsUserAdditionsAndRestoresRemovals(t *testing.T) {
	client := reconciled(t)
	ctx := context.Background()
	rbac := client.RbacV1()
	widgets := rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{"example.com"}, Resources: []string{"widgets"}}

	// edit gets a user's rule and loses a default one, so the pass must
	// update it and keep the user's rule while doing so.
	edit, _ := rbac.ClusterRoles().Get(ctx, "edit", metav1.GetOptions{})
	wantEdit := edit.Rules
	edit.Rules = append(edit.Rules[1:], widgets)
	edit.Labels["team"] = "platform"
	if _, err := rbac.ClusterRoles().Update(ctx, edit, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	basic, _ := rbac.ClusterRoles().Get(ctx, "system:basic-user", metav1.GetOptions{})
	basic.Rules = append(basic.Rules[1:], widgets)
	if _, err := rbac.ClusterRoles().Update(ctx, basic, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	view, _ := rbac.ClusterRoles().Get(ctx, "view", metav1.GetOptions{})
	wantView := view.Rules
	view.Rules = view.Rules[1:]
	if _, err := rbac.ClusterRoles().Update(ctx, view, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// A user's extra subject on a default binding, and a default binding deleted.
	discovery, _ := rbac.ClusterRoleBindings().Get(ctx, "system:discovery", metav1.GetOptions{})
	discovery.Subjects = append(discovery.Subjects, userSubject("alice"))
	if _, err := rbac.ClusterRoleBindings().Update(ctx, discovery, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := rbac.ClusterRoleBindings().Delete(ctx, "system:basic-user", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// A user's own role stays.
	if _, err := rbac.ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "mine"}, Rules: []rbacv1.PolicyRule{widgets}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	if err := Reconcile(ctx, client, testPolicy()); err != nil {
		t.Fatal(err)
	}
	edit, _ = rbac.ClusterRoles().Get(ctx, "edit", metav1.GetOptions{})
	if ok, _ := rbacvalidation.Covers(edit.Rules, []rbacv1.PolicyRule{widgets}); !ok || edit.Labels["team"] != "platform" {
		t.Errorf("reconciling dropped what a user added to edit: %v %v", edit.Rules, edit.Labels)
	}
	if ok, missing := rbacvalidation.Covers(edit.Rules, wantEdit); !ok {
		t.Errorf("reconciling did not restore edit's rules, missing %v", missing)
	}
	basic, _ = rbac.ClusterRoles().Get(ctx, "system:basic-user", metav1.GetOptions{})
	if ok, _ := rbacvalidation.Covers(basic.Rules, []rbacv1.PolicyRule{widgets}); !ok {
		t.Errorf("reconciling dropped what a user added to system:basic-user: %v", basic.Rules)
	}
	if ok, missing := rbacvalidation.Covers(basic.Rules, clusterRolesByName(t)["system:basic-user"].Rules); !ok {
		t.Errorf("reconciling did not restore system:basic-user, missing %v", missing)
	}
	view, _ = rbac.ClusterRoles().Get(ctx, "view", metav1.GetOptions{})
	if ok, missing := rbacvalidation.Covers(view.Rules, wantView); !ok {
		t.Errorf("reconciling did not restore view's rules, missing %v", missing)
	}
	discovery, _ = rbac.ClusterRoleBindings().Get(ctx, "system:discovery", metav1.GetOptions{})
	if len(discovery.Subjects) != 2 {
		t.Errorf("system:discovery subjects %v", discovery.Subjects)
	}
	if _, err := rbac.ClusterRoleBindings().Get(ctx, "system:basic-user", metav1.GetOptions{}); err != nil {
		t.Errorf("deleted default binding not restored: %v", err)
	}
	if _, err := rbac.ClusterRoles().Get(ctx, "mine", metav1.GetOptions{}); err != nil {
		t.Errorf("a user's role is gone: %v", err)
	}
	for _, a := range client.Actions() {
		if a.GetVerb() == "delete" && !strings.Contains(a.GetResource().Resource, "bindings") {
			t.Errorf("reconciling deleted: %v", a)
		}
	}
}

func TestReconcileLeavesAutoupdateFalseAlone(t *testing.T) {
	client := reconciled(t)
	ctx := context.Background()
	rbac := client.RbacV1()

	monitoring, _ := rbac.ClusterRoles().Get(ctx, "system:monitoring", metav1.GetOptions{})
	monitoring.Annotations[rbacv1.AutoUpdateAnnotationKey] = "false"
	monitoring.Rules = []rbacv1.PolicyRule{{Verbs: []string{"get"}, NonResourceURLs: []string{"/metrics"}}}
	if _, err := rbac.ClusterRoles().Update(ctx, monitoring, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	public, _ := rbac.ClusterRoleBindings().Get(ctx, "system:public-info-viewer", metav1.GetOptions{})
	public.Annotations[rbacv1.AutoUpdateAnnotationKey] = "false"
	public.Subjects = public.Subjects[:1] // no longer for unauthenticated users
	if _, err := rbac.ClusterRoleBindings().Update(ctx, public, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	reader, _ := rbac.Roles("kube-system").Get(ctx, extensionAuthenticationRead, metav1.GetOptions{})
	reader.Annotations[rbacv1.AutoUpdateAnnotationKey] = "false"
	reader.Rules = nil
	if _, err := rbac.Roles("kube-system").Update(ctx, reader, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	client.ClearActions()
	if err := Reconcile(ctx, client, testPolicy()); err != nil {
		t.Fatal(err)
	}
	if w := writes(client); len(w) != 0 {
		t.Errorf("reconciling wrote %v", w)
	}
	monitoring, _ = rbac.ClusterRoles().Get(ctx, "system:monitoring", metav1.GetOptions{})
	if len(monitoring.Rules) != 1 || len(monitoring.Rules[0].NonResourceURLs) != 1 {
		t.Errorf("system:monitoring changed: %v", monitoring.Rules)
	}
	public, _ = rbac.ClusterRoleBindings().Get(ctx, "system:public-info-viewer", metav1.GetOptions{})
	if len(public.Subjects) != 1 {
		t.Errorf("system:public-info-viewer changed: %v", public.Subjects)
	}
	reader, _ = rbac.Roles("kube-system").Get(ctx, extensionAuthenticationRead, metav1.GetOptions{})
	if len(reader.Rules) != 0 {
		t.Errorf("%s changed: %v", extensionAuthenticationRead, reader.Rules)
	}
}

// TestReconcileRetriesConflicts: a conflicting update (another server, the
// aggregation controller) is retried within the pass.
func TestReconcileRetriesConflicts(t *testing.T) {
	client := reconciled(t)
	ctx := context.Background()
	view, _ := client.RbacV1().ClusterRoles().Get(ctx, "view", metav1.GetOptions{})
	view.Rules = nil
	if _, err := client.RbacV1().ClusterRoles().Update(ctx, view, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	var conflicts atomic.Int32
	client.PrependReactor("update", "clusterroles", func(clienttesting.Action) (bool, runtime.Object, error) {
		if conflicts.Add(1) <= 2 {
			return true, nil, apierrors.NewConflict(schema.GroupResource{Group: rbacv1.GroupName, Resource: "clusterroles"}, "view", errors.New("changed"))
		}
		return false, nil, nil
	})
	if err := Reconcile(ctx, client, testPolicy()); err != nil {
		t.Fatal(err)
	}
	if conflicts.Load() < 3 {
		t.Errorf("%d updates, want the conflicting two and a successful one", conflicts.Load())
	}
	view, _ = client.RbacV1().ClusterRoles().Get(ctx, "view", metav1.GetOptions{})
	if len(view.Rules) == 0 {
		t.Error("view not restored after conflicts")
	}
}

// TestReconcileUntil: a pass failing for a moment (kube-system not
// creatable yet) is retried until it succeeds; one failing throughout
// fails after the timeout with the last error.
func TestReconcileUntil(t *testing.T) {
	client := fake.NewClientset()
	var failures atomic.Int32
	client.PrependReactor("create", "namespaces", func(clienttesting.Action) (bool, runtime.Object, error) {
		if failures.Add(1) <= 2 {
			return true, nil, apierrors.NewInternalError(errors.New("storage not ready"))
		}
		return false, nil, nil
	})
	if err := reconcileUntil(context.Background(), client, testPolicy(), 10*time.Millisecond, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	for ns, roles := range NamespaceRoles() {
		for _, r := range roles {
			if _, err := client.RbacV1().Roles(ns).Get(context.Background(), r.Name, metav1.GetOptions{}); err != nil {
				t.Errorf("role %s/%s: %v", ns, r.Name, err)
			}
		}
	}

	broken := fake.NewClientset()
	broken.PrependReactor("*", "clusterroles", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewInternalError(errors.New("etcd down"))
	})
	err := reconcileUntil(context.Background(), broken, testPolicy(), 10*time.Millisecond, 100*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "etcd down") {
		t.Errorf("reconcileUntil with a broken server: %v", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Reconcile(ctx, fake.NewClientset(), testPolicy()); err == nil {
		t.Error("Reconcile with a cancelled context succeeded")
	}
}

// TestReconcileRequests: a pass lists each kind (and namespace) once and
// then makes one request per object it writes, none per object that is
// fine: no GET before each create on a new cluster, none at all on a
// restart.
func TestReconcileRequests(t *testing.T) {
	policy := testPolicy()
	objects := len(policy.ClusterRoles) + len(policy.ClusterRoleBindings)
	lists := 2
	for _, roles := range policy.Roles {
		objects += len(roles)
		lists++
	}
	for _, bindings := range policy.RoleBindings {
		objects += len(bindings)
		lists++
	}
	client := fake.NewClientset()
	if err := Reconcile(context.Background(), client, policy); err != nil {
		t.Fatal(err)
	}
	// kube-system is made once, by whichever role or binding comes first:
	// a GET, a create, and for the others a GET that finds it.
	byVerb := func() map[string]int {
		verbs := map[string]int{}
		for _, a := range client.Actions() {
			if a.GetResource().Resource != "namespaces" {
				verbs[a.GetVerb()]++
			}
		}
		return verbs
	}
	if got, want := byVerb(), map[string]int{"list": lists, "create": objects}; !maps.Equal(got, want) {
		t.Errorf("a pass on a new cluster made %v, want %v", got, want)
	}
	client.ClearActions()
	if err := Reconcile(context.Background(), client, policy); err != nil {
		t.Fatal(err)
	}
	if got, want := byVerb(), map[string]int{"list": lists}; !maps.Equal(got, want) {
		t.Errorf("a pass on a reconciled cluster made %v, want %v", got, want)
	}
}

// TestReconcileObjectsWithoutTheLabel: a default object that has lost the
// bootstrapping label, which the pass's lists select on, is still
// reconciled (its create finds it there; the retry reads and updates it).
func TestReconcileObjectsWithoutTheLabel(t *testing.T) {
	client := reconciled(t)
	ctx := context.Background()
	rbac := client.RbacV1()
	view, _ := rbac.ClusterRoles().Get(ctx, "view", metav1.GetOptions{})
	delete(view.Labels, BootstrappingLabel)
	view.Rules = nil
	if _, err := rbac.ClusterRoles().Update(ctx, view, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := Reconcile(ctx, client, testPolicy()); err != nil {
		t.Fatal(err)
	}
	view, _ = rbac.ClusterRoles().Get(ctx, "view", metav1.GetOptions{})
	if ok, missing := rbacvalidation.Covers(view.Rules, clusterRolesByName(t)["view"].Rules); !ok {
		t.Errorf("view not restored, missing %v", missing)
	}
}
