package clusterroleaggregation

import (
	"context"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
)

func rule(verb, resource string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{Verbs: []string{verb}, APIGroups: []string{""}, Resources: []string{resource}}
}

func role(name string, lbls map[string]string, rules ...rbacv1.PolicyRule) *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbls}, Rules: rules}
}

func aggregating(name string, lbls map[string]string, selectors ...map[string]string) *rbacv1.ClusterRole {
	r := role(name, lbls)
	r.AggregationRule = &rbacv1.AggregationRule{}
	for _, s := range selectors {
		r.AggregationRule.ClusterRoleSelectors = append(r.AggregationRule.ClusterRoleSelectors, metav1.LabelSelector{MatchLabels: s})
	}
	return r
}

func lister(roles ...*rbacv1.ClusterRole) func(labels.Selector) ([]*rbacv1.ClusterRole, error) {
	return func(s labels.Selector) ([]*rbacv1.ClusterRole, error) {
		var out []*rbacv1.ClusterRole
		for _, r := range roles {
			if s.Matches(labels.Set(r.Labels)) {
				out = append(out, r)
			}
		}
		return out, nil
	}
}

func TestAggregatedRules(t *testing.T) {
	a, b := map[string]string{"a": "true"}, map[string]string{"b": "true"}
	getPods, listPods, getSecrets := rule("get", "pods"), rule("list", "pods"), rule("get", "secrets")
	// A rule equal but for nil against empty fields is the same rule.
	getPodsEmpty := getPods
	getPodsEmpty.ResourceNames = []string{}
	for _, tc := range []struct {
		name  string
		agg   *rbacv1.ClusterRole
		roles []*rbacv1.ClusterRole
		want  []rbacv1.PolicyRule
	}{{
		name: "nothing matches",
		agg:  aggregating("agg", nil, a),
		want: []rbacv1.PolicyRule{},
	}, {
		name:  "by name within a selector, deduplicated",
		agg:   aggregating("agg", nil, a),
		roles: []*rbacv1.ClusterRole{role("z", a, getSecrets, getPods), role("m", a, getPods, listPods), role("other", b, rule("delete", "pods"))},
		want:  []rbacv1.PolicyRule{getPods, listPods, getSecrets},
	}, {
		name:  "selectors in order",
		agg:   aggregating("agg", nil, b, a),
		roles: []*rbacv1.ClusterRole{role("1", a, getPods), role("2", b, getSecrets), role("3", a, getPodsEmpty)},
		want:  []rbacv1.PolicyRule{getSecrets, getPods},
	}, {
		name:  "not itself",
		agg:   aggregating("agg", a, a),
		roles: []*rbacv1.ClusterRole{role("x", a, getPods)},
		want:  []rbacv1.PolicyRule{getPods},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			tc.agg.Rules = []rbacv1.PolicyRule{rule("stale", "x")}
			got, err := AggregatedRules(tc.agg, lister(append(tc.roles, tc.agg)...))
			if err != nil {
				t.Fatal(err)
			}
			if got == nil || !equality.Semantic.DeepEqual(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestAggregatedRulesBadSelector(t *testing.T) {
	agg := aggregating("agg", nil)
	agg.AggregationRule.ClusterRoleSelectors = []metav1.LabelSelector{{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Bogus"}}}}
	if _, err := AggregatedRules(agg, lister()); err == nil {
		t.Error("no error for an invalid selector")
	}
}

func TestRun(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	a := map[string]string{"a": "true"}
	client := fake.NewClientset(
		aggregating("agg", nil, a),
		role("one", a, rule("get", "pods")),
		role("plain", nil, rule("get", "secrets")),
	)
	factory := informers.NewSharedInformerFactory(client, 0)
	c, err := New(factory.Rbac().V1().ClusterRoles(), client.RbacV1())
	if err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	done := make(chan struct{})
	go func() { c.Run(ctx); close(done) }()
	defer func() { cancel(); <-done; factory.Shutdown() }()

	roles := client.RbacV1().ClusterRoles()
	hasRules := func(name string, want ...rbacv1.PolicyRule) {
		t.Helper()
		var last []rbacv1.PolicyRule
		err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 5*time.Second, true, func(ctx context.Context) (bool, error) {
			r, err := roles.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			last = r.Rules
			return equality.Semantic.DeepEqual(r.Rules, want), nil
		})
		if err != nil {
			t.Fatalf("%s: rules %v, want %v: %v", name, last, want, err)
		}
	}
	hasRules("agg", rule("get", "pods"))
	if _, err := roles.Create(ctx, role("two", a, rule("list", "pods")), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	hasRules("agg", rule("get", "pods"), rule("list", "pods"))
	one := role("one", a, rule("watch", "pods"))
	if _, err := roles.Update(ctx, one, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	hasRules("agg", rule("watch", "pods"), rule("list", "pods"))
	if err := roles.Delete(ctx, "two", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	hasRules("agg", rule("watch", "pods"))
	hasRules("plain", rule("get", "secrets"))
}

// An aggregated role already up to date is not written.
func TestSyncNoWrite(t *testing.T) {
	a := map[string]string{"a": "true"}
	agg := aggregating("agg", nil, a)
	agg.Rules = []rbacv1.PolicyRule{rule("get", "pods")}
	objs := []runtime.Object{agg, role("one", a, rule("get", "pods"))}
	client := fake.NewClientset(objs...)
	factory := informers.NewSharedInformerFactory(client, 0)
	c, err := New(factory.Rbac().V1().ClusterRoles(), client.RbacV1())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	factory.Start(ctx.Done())
	defer func() { cancel(); factory.Shutdown(); c.queue.ShutDown() }()
	factory.WaitForCacheSync(ctx.Done())
	client.ClearActions()
	if err := c.sync(ctx, "agg"); err != nil {
		t.Fatal(err)
	}
	if a := client.Actions(); len(a) != 0 {
		t.Errorf("actions %v, want none", a)
	}
}
