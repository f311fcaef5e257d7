package rbac

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	rbaclisters "k8s.io/client-go/listers/rbac/v1"
	"k8s.io/client-go/tools/cache"
)

// cachedResolver returns a resolver over real informer indexers filled
// with objs, as the server's informers would be, with the subject index
// (indexed) or without it.
func cachedResolver(t testing.TB, indexed bool, objs ...any) *Resolver {
	t.Helper()
	idx := func() cache.Indexer {
		return cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc, subjectIndex: indexBySubject})
	}
	roles, rbs, crs, crbs := idx(), idx(), idx(), idx()
	for _, o := range objs {
		var err error
		switch o.(type) {
		case *rbacv1.Role:
			err = roles.Add(o)
		case *rbacv1.RoleBinding:
			err = rbs.Add(o)
		case *rbacv1.ClusterRole:
			err = crs.Add(o)
		case *rbacv1.ClusterRoleBinding:
			err = crbs.Add(o)
		default:
			t.Fatalf("unexpected %T", o)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	rbl := roleBindingLister{l: rbaclisters.NewRoleBindingLister(rbs)}
	crbl := clusterRoleBindingLister{l: rbaclisters.NewClusterRoleBindingLister(crbs)}
	if indexed {
		rbl.idx, crbl.idx = rbs, crbs
		return NewResolver(roleLister{rbaclisters.NewRoleLister(roles)}, rbl, clusterRoleLister{rbaclisters.NewClusterRoleLister(crs)}, crbl)
	}
	// Without the index, hide the optional methods.
	return NewResolver(roleLister{rbaclisters.NewRoleLister(roles)}, plainRBs{rbl}, clusterRoleLister{rbaclisters.NewClusterRoleLister(crs)}, plainCRBs{crbl})
}

type plainRBs struct{ l roleBindingLister }

func (p plainRBs) ListRoleBindings(ctx context.Context, ns string) ([]*rbacv1.RoleBinding, error) {
	return p.l.ListRoleBindings(ctx, ns)
}

type plainCRBs struct{ l clusterRoleBindingLister }

func (p plainCRBs) ListClusterRoleBindings(ctx context.Context) ([]*rbacv1.ClusterRoleBinding, error) {
	return p.l.ListClusterRoleBindings(ctx)
}

func rule(verbs, groups, resources string, names ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{Verbs: strings.Split(verbs, ","), APIGroups: strings.Split(groups, ","), Resources: strings.Split(resources, ","), ResourceNames: names}
}

func urlRule(verbs, urls string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{Verbs: strings.Split(verbs, ","), NonResourceURLs: strings.Split(urls, ",")}
}

func clusterRole(name string, rules ...rbacv1.PolicyRule) *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}
}

func role(ns, name string, rules ...rbacv1.PolicyRule) *rbacv1.Role {
	return &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Rules: rules}
}

func subject(kind, name string) rbacv1.Subject {
	s := rbacv1.Subject{Kind: kind, Name: name}
	if kind == rbacv1.ServiceAccountKind {
		if ns, n, ok := strings.Cut(name, "/"); ok {
			s.Namespace, s.Name = ns, n
		}
	}
	return s
}

func clusterBinding(name, roleName string, subjects ...rbacv1.Subject) *rbacv1.ClusterRoleBinding {
	return &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name}, Subjects: subjects,
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: roleName}}
}

func binding(ns, name, kind, roleName string, subjects ...rbacv1.Subject) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Subjects: subjects,
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: kind, Name: roleName}}
}

func resourceAttrs(u user.Info, verb, ns, group, resource, sub, name string) authorizer.AttributesRecord {
	return authorizer.AttributesRecord{User: u, Verb: verb, Namespace: ns, APIGroup: group, Resource: resource, Subresource: sub, Name: name, ResourceRequest: true}
}

func pathAttrs(u user.Info, verb, path string) authorizer.AttributesRecord {
	return authorizer.AttributesRecord{User: u, Verb: verb, Path: path}
}

func TestAuthorize(t *testing.T) {
	alice := &user.DefaultInfo{Name: "alice", Groups: []string{"dev", user.AllAuthenticated}}
	bob := &user.DefaultInfo{Name: "bob", Groups: []string{user.AllAuthenticated}}
	robot := &user.DefaultInfo{Name: "system:serviceaccount:team-a:robot", Groups: []string{"system:serviceaccounts", "system:serviceaccounts:team-a"}}

	policy := []any{
		clusterRole("edit", rule("get,list,watch,create,update,patch,delete", "", "configmaps,secrets")),
		clusterRole("reader", rule("get,list,watch", "*", "*")),
		clusterRole("status-writer", rule("update", "", "namespaces/status")),
		clusterRole("any-scale", rule("get", "apps", "*/scale")),
		clusterRole("one-cm", rule("get,update", "", "configmaps", "settings")),
		clusterRole("discovery", urlRule("get", "/api,/api/*,/apis,/apis/*,/version")),
		clusterRole("all-urls", urlRule("*", "*")),
		clusterRole("star", rule("*", "*", "*")),
		role("team-a", "lease-writer", rule("create,update", "coordination.k8s.io", "leases")),

		binding("team-a", "dev-edit", "ClusterRole", "edit", subject(rbacv1.GroupKind, "dev")),
		binding("team-a", "alice-leases", "Role", "lease-writer", subject(rbacv1.UserKind, "alice")),
		binding("team-a", "robot-cm", "ClusterRole", "one-cm", subject(rbacv1.ServiceAccountKind, "robot")),
		binding("team-b", "robot-elsewhere", "ClusterRole", "edit", subject(rbacv1.ServiceAccountKind, "team-a/robot")),
		binding("team-a", "dangling", "Role", "missing", subject(rbacv1.UserKind, "bob")),
		clusterBinding("bob-reads", "reader", subject(rbacv1.UserKind, "bob")),
		clusterBinding("bob-status", "status-writer", subject(rbacv1.UserKind, "bob")),
		clusterBinding("bob-scale", "any-scale", subject(rbacv1.UserKind, "bob")),
		clusterBinding("discovery", "discovery", subject(rbacv1.GroupKind, user.AllAuthenticated)),
		clusterBinding("admins", "star", subject(rbacv1.GroupKind, "admins")),
		clusterBinding("admins-urls", "all-urls", subject(rbacv1.GroupKind, "admins")),
		// A ServiceAccount subject of a ClusterRoleBinding without a
		// namespace matches nobody.
		clusterBinding("sa-no-namespace", "star", subject(rbacv1.ServiceAccountKind, "robot")),
	}
	admin := &user.DefaultInfo{Name: "root", Groups: []string{"admins"}}
	for _, indexed := range []bool{false, true} {
		a := New(cachedResolver(t, indexed, policy...))
		t.Run(fmt.Sprintf("indexed=%v", indexed), func(t *testing.T) { testAuthorize(t, a, alice, bob, robot, admin) })
	}
}

func testAuthorize(t *testing.T, a *Authorizer, alice, bob, robot, admin user.Info) {
	for _, tc := range []struct {
		name  string
		attrs authorizer.AttributesRecord
		allow bool
	}{
		{"group binding in its namespace", resourceAttrs(alice, "create", "team-a", "", "configmaps", "", ""), true},
		{"group binding not in another namespace", resourceAttrs(alice, "create", "default", "", "configmaps", "", ""), false},
		{"group binding not cluster-wide", resourceAttrs(alice, "list", "", "", "configmaps", "", ""), false},
		{"verb not in rule", resourceAttrs(alice, "deletecollection", "team-a", "", "configmaps", "", ""), false},
		{"resource not in rule", resourceAttrs(alice, "get", "team-a", "", "serviceaccounts", "", ""), false},
		{"group of rule must match", resourceAttrs(alice, "get", "team-a", "apps", "configmaps", "", ""), false},
		{"subresource is not the resource", resourceAttrs(alice, "get", "team-a", "", "configmaps", "status", ""), false},
		{"role in namespace", resourceAttrs(alice, "update", "team-a", "coordination.k8s.io", "leases", "", "x"), true},
		{"role not elsewhere", resourceAttrs(alice, "update", "team-b", "coordination.k8s.io", "leases", "", "x"), false},
		{"cluster binding everywhere", resourceAttrs(bob, "watch", "team-b", "apps", "deployments", "", ""), true},
		{"cluster binding cluster-scoped", resourceAttrs(bob, "list", "", "", "namespaces", "", ""), true},
		{"star resource covers subresources", resourceAttrs(bob, "get", "x", "", "namespaces", "status", "x"), true},
		{"cluster binding verb limits", resourceAttrs(bob, "delete", "team-b", "", "configmaps", "", ""), false},
		{"exact subresource", resourceAttrs(bob, "update", "", "", "namespaces", "status", "ns1"), true},
		{"exact subresource not main", resourceAttrs(bob, "update", "", "", "namespaces", "", "ns1"), false},
		{"star slash subresource", resourceAttrs(bob, "get", "x", "apps", "deployments", "scale", "d"), true},
		{"star slash subresource not main", resourceAttrs(bob, "get", "x", "apps", "deployments", "", "d"), true}, // reader allows it anyway
		{"star slash not other subresource", resourceAttrs(bob, "update", "x", "apps", "deployments", "status", "d"), false},
		{"resource name matches", resourceAttrs(robot, "get", "team-a", "", "configmaps", "", "settings"), true},
		{"resource name differs", resourceAttrs(robot, "get", "team-a", "", "configmaps", "", "other"), false},
		{"resource names do not allow list", resourceAttrs(robot, "update", "team-a", "", "configmaps", "", ""), false},
		{"sa subject defaults to binding namespace", resourceAttrs(robot, "update", "team-a", "", "configmaps", "", "settings"), true},
		{"sa subject with namespace in other namespace", resourceAttrs(robot, "create", "team-b", "", "secrets", "", ""), true},
		{"sa in cluster binding needs namespace", resourceAttrs(robot, "get", "kube-system", "", "secrets", "", ""), false},
		{"non-resource exact", pathAttrs(alice, "get", "/version"), true},
		{"non-resource prefix", pathAttrs(alice, "get", "/apis/rbac.authorization.k8s.io/v1"), true},
		{"non-resource prefix needs the slash", pathAttrs(alice, "get", "/apisx"), false},
		{"non-resource verb", pathAttrs(alice, "post", "/version"), false},
		{"non-resource not listed", pathAttrs(alice, "get", "/metrics"), false},
		{"non-resource star", pathAttrs(admin, "post", "/anything/at/all"), true},
		{"resource rules do not grant paths", pathAttrs(bob, "get", "/metrics"), false},
		{"star everything", resourceAttrs(admin, "escalate", "", "rbac.authorization.k8s.io", "clusterroles", "", "x"), true},
		{"dangling binding", resourceAttrs(bob, "create", "team-a", "", "configmaps", "", ""), false},
		{"no user bindings", resourceAttrs(&user.DefaultInfo{Name: "eve"}, "get", "team-a", "", "configmaps", "", ""), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			decision, reason, err := a.Authorize(context.Background(), tc.attrs)
			if err != nil {
				t.Fatalf("error: %v", err)
			}
			if got := decision == authorizer.DecisionAllow; got != tc.allow {
				t.Fatalf("allowed = %v, want %v (reason %q)", got, tc.allow, reason)
			}
			if decision == authorizer.DecisionDeny {
				t.Fatalf("RBAC must never deny, only have no opinion")
			}
			if tc.allow && !strings.HasPrefix(reason, "RBAC: allowed by ") {
				t.Errorf("reason %q", reason)
			}
		})
	}
}

func TestAuthorizeReasons(t *testing.T) {
	alice := &user.DefaultInfo{Name: "alice", Groups: []string{"dev"}}
	robot := &user.DefaultInfo{Name: "system:serviceaccount:team-a:robot"}
	a := New(cachedResolver(t, true,
		clusterRole("edit", rule("*", "", "configmaps")),
		binding("team-a", "dev-edit", "ClusterRole", "edit", subject(rbacv1.GroupKind, "dev")),
		binding("team-a", "robot-edit", "ClusterRole", "edit", subject(rbacv1.ServiceAccountKind, "robot")),
		binding("team-a", "dangling", "Role", "gone", subject(rbacv1.UserKind, "alice")),
	))
	_, reason, _ := a.Authorize(context.Background(), resourceAttrs(alice, "get", "team-a", "", "configmaps", "", ""))
	if want := `RBAC: allowed by RoleBinding "dev-edit/team-a" of ClusterRole "edit" to Group "dev"`; reason != want {
		t.Errorf("reason %q, want %q", reason, want)
	}
	_, reason, _ = a.Authorize(context.Background(), resourceAttrs(robot, "get", "team-a", "", "configmaps", "", ""))
	if want := `RBAC: allowed by RoleBinding "robot-edit/team-a" of ClusterRole "edit" to ServiceAccount "robot/team-a"`; reason != want {
		t.Errorf("reason %q, want %q", reason, want)
	}
	decision, reason, err := a.Authorize(context.Background(), resourceAttrs(alice, "get", "team-a", "", "secrets", "", ""))
	if decision != authorizer.DecisionNoOpinion || err != nil || !strings.Contains(reason, `"gone" not found`) {
		t.Errorf("dangling binding: decision %v, reason %q, err %v", decision, reason, err)
	}
}

func TestRulesFor(t *testing.T) {
	alice := &user.DefaultInfo{Name: "alice", Groups: []string{"dev"}}
	a := New(cachedResolver(t, true,
		clusterRole("edit", rule("get", "", "configmaps")),
		clusterRole("urls", urlRule("get", "/healthz")),
		binding("team-a", "dev-edit", "ClusterRole", "edit", subject(rbacv1.GroupKind, "dev")),
		clusterBinding("urls", "urls", subject(rbacv1.UserKind, "alice")),
	))
	res, nonRes, incomplete, err := a.RulesFor(context.Background(), alice, "team-a")
	if err != nil || incomplete || len(res) != 1 || len(nonRes) != 1 {
		t.Fatalf("got %v %v %v %v", res, nonRes, incomplete, err)
	}
	if res[0].GetResources()[0] != "configmaps" || nonRes[0].GetNonResourceURLs()[0] != "/healthz" {
		t.Errorf("rules %v %v", res, nonRes)
	}
	res, _, _, _ = a.RulesFor(context.Background(), alice, "team-b")
	if len(res) != 0 {
		t.Errorf("team-b: %v", res)
	}
}

func TestCompactString(t *testing.T) {
	got := CompactString(rule("get", "apps", "deployments"))
	if want := `{APIGroups:["apps"], Resources:["deployments"], Verbs:["get"]}`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	compact := CompactRules([]rbacv1.PolicyRule{rule("get", "", "secrets"), rule("list", "", "secrets"), rule("get", "", "configmaps")})
	if len(compact) != 2 || fmt.Sprint(compact[0].Verbs) != "[get list]" {
		t.Errorf("compact: %v", compact)
	}
}

// BenchmarkAuthorize measures one decision with 1,000 roles and 1,000
// bindings in the caches: 500 ClusterRoles with 500 ClusterRoleBindings and
// 500 Roles with 500 RoleBindings in the request's namespace, the user's own
// binding last.
func BenchmarkAuthorize(b *testing.B) {
	var objs []any
	for i := range 500 {
		objs = append(objs,
			clusterRole(fmt.Sprintf("cr-%d", i), rule("get,list", "example.com", fmt.Sprintf("things%d", i))),
			clusterBinding(fmt.Sprintf("crb-%d", i), fmt.Sprintf("cr-%d", i), subject(rbacv1.UserKind, fmt.Sprintf("user-%d", i)), subject(rbacv1.GroupKind, fmt.Sprintf("group-%d", i))),
			role("team-a", fmt.Sprintf("r-%d", i), rule("get,list", "", "configmaps")),
			binding("team-a", fmt.Sprintf("rb-%d", i), "Role", fmt.Sprintf("r-%d", i), subject(rbacv1.UserKind, fmt.Sprintf("user-%d", i))),
		)
	}
	objs = append(objs, binding("team-a", "zz-alice", "Role", "r-499", subject(rbacv1.UserKind, "alice")))
	indexed := New(cachedResolver(b, true, objs...))
	plain := New(cachedResolver(b, false, objs...))
	alice := &user.DefaultInfo{Name: "alice", Groups: []string{"dev", user.AllAuthenticated}}
	for _, bc := range []struct {
		name  string
		attrs authorizer.AttributesRecord
		allow bool
	}{
		{"allowed", resourceAttrs(alice, "get", "team-a", "", "configmaps", "", "x"), true},
		{"denied", resourceAttrs(alice, "delete", "team-a", "", "configmaps", "", "x"), false},
	} {
		for _, a := range []struct {
			name string
			a    *Authorizer
		}{{"scan", plain}, {"indexed", indexed}} {
			b.Run(a.name+"/"+bc.name, func(b *testing.B) {
				ctx := context.Background()
				b.ReportAllocs()
				for b.Loop() {
					d, _, _ := a.a.Authorize(ctx, bc.attrs)
					if (d == authorizer.DecisionAllow) != bc.allow {
						b.Fatalf("decision %v", d)
					}
				}
			})
		}
	}
}

// Before the caches have loaded, a request they do not allow waits for
// them and is decided on what they hold then; one that times out waiting
// says why it was refused.
func TestAuthorizeWaitsForCaches(t *testing.T) {
	t.Parallel()
	alice := &user.DefaultInfo{Name: "alice"}
	attrs := resourceAttrs(alice, "get", "team-a", "", "configmaps", "", "")
	idx := func() cache.Indexer {
		return cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc, subjectIndex: indexBySubject})
	}
	roles, rbs, crs, crbs := idx(), idx(), idx(), idx()
	resolver := NewResolver(roleLister{rbaclisters.NewRoleLister(roles)}, roleBindingLister{l: rbaclisters.NewRoleBindingLister(rbs), idx: rbs},
		clusterRoleLister{rbaclisters.NewClusterRoleLister(crs)}, clusterRoleBindingLister{l: rbaclisters.NewClusterRoleBindingLister(crbs), idx: crbs})
	synced := askedChecker{done: make(chan struct{}), asked: make(chan struct{}, 2)}
	a := &Authorizer{resolver: resolver, synced: []cache.DoneChecker{synced}}
	// The caches load once Authorize waits for them: its second look at
	// them (the first asks whether they are done, after a decision on the
	// empty caches; the second is client-go's cache.WaitFor).
	go func() {
		<-synced.asked
		<-synced.asked
		_ = crs.Add(clusterRole("view", rule("get", "", "configmaps")))
		_ = rbs.Add(binding("team-a", "alice-view", "ClusterRole", "view", subject(rbacv1.UserKind, "alice")))
		close(synced.done)
	}()
	if decision, reason, err := a.Authorize(context.Background(), attrs); decision != authorizer.DecisionAllow || err != nil {
		t.Errorf("before the caches loaded: %v %q %v, want allowed once they had", decision, reason, err)
	}

	never := &Authorizer{resolver: New(cachedResolver(t, true)).resolver, synced: []cache.DoneChecker{make(chanChecker)}}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if decision, reason, _ := never.Authorize(ctx, attrs); decision == authorizer.DecisionAllow || !strings.Contains(reason, "have not loaded yet") {
		t.Errorf("caches that never load: %v %q", decision, reason)
	}
}

// askedChecker is done when done is closed, and says on asked (without
// waiting) each time it is looked at.
type askedChecker struct {
	done, asked chan struct{}
}

func (c askedChecker) Name() string { return "test caches" }

func (c askedChecker) Done() <-chan struct{} {
	select {
	case c.asked <- struct{}{}:
	default:
	}
	return c.done
}

// chanChecker is done when it is closed.
type chanChecker chan struct{}

func (c chanChecker) Name() string          { return "test caches" }
func (c chanChecker) Done() <-chan struct{} { return c }
