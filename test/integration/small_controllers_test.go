package integration

import (
	"context"
	"maps"
	"os"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/gcp-project/gcp/pkg/controlplane/controllers/clusterroleaggregation"
	"github.com/gcp-project/gcp/pkg/controlplane/controllers/rootcacertpublisher"
	"github.com/gcp-project/gcp/pkg/controlplane/controllers/serviceaccount"
	"github.com/gcp-project/gcp/pkg/testserver"
)

// scStart starts a server running the three small controllers.
func scStart(t *testing.T) *testserver.Server {
	t.Helper()
	s := startGeneric(t)
	runControllers(t, s, serviceaccount.Descriptor(), rootcacertpublisher.Descriptor(), clusterroleaggregation.Descriptor())
	return s
}

// scWithin polls cond until it holds, failing after d.
func scWithin(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, d, true, func(context.Context) (bool, error) {
		return cond(), nil
	})
	if err != nil {
		t.Fatalf("no %s within %s", what, d)
	}
}

// scPrompt is how soon the controllers must act; generous for a loaded
// machine, they take a few milliseconds.
const scPrompt = 5 * time.Second

func scHasDefaultSA(c kubernetes.Interface, ns string) func() bool {
	return func() bool {
		_, err := c.CoreV1().ServiceAccounts(ns).Get(context.Background(), serviceaccount.DefaultName, metav1.GetOptions{})
		return err == nil
	}
}

func scHasRootCA(c kubernetes.Interface, ns string, ca []byte) func() bool {
	return func() bool {
		cm, err := c.CoreV1().ConfigMaps(ns).Get(context.Background(), rootcacertpublisher.ConfigMapName, metav1.GetOptions{})
		return err == nil &&
			maps.Equal(cm.Data, map[string]string{rootcacertpublisher.DataKey: string(ca)}) &&
			cm.Annotations[rootcacertpublisher.DescriptionAnnotation] == rootcacertpublisher.Description
	}
}

// TestServiceAccountControllerDefaultAccount: every namespace, old or new,
// gets ServiceAccount default, again when it is deleted.
func TestServiceAccountControllerDefaultAccount(t *testing.T) {
	t.Parallel()
	s := scStart(t)
	c := s.Client
	ctx := context.Background()

	for _, ns := range []string{metav1.NamespaceDefault, metav1.NamespaceSystem} {
		scWithin(t, scPrompt, "default service account in "+ns, scHasDefaultSA(c, ns))
	}
	createNamespace(t, c, "sc-sa")
	scWithin(t, scPrompt, "default service account in a new namespace", scHasDefaultSA(c, "sc-sa"))

	old, err := c.CoreV1().ServiceAccounts("sc-sa").Get(ctx, serviceaccount.DefaultName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.CoreV1().ServiceAccounts("sc-sa").Delete(ctx, serviceaccount.DefaultName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	scWithin(t, scPrompt, "default service account recreated", func() bool {
		sa, err := c.CoreV1().ServiceAccounts("sc-sa").Get(ctx, serviceaccount.DefaultName, metav1.GetOptions{})
		return err == nil && sa.UID != old.UID
	})
}

// TestRootCAPublisher: every namespace gets ConfigMap kube-root-ca.crt with
// the server's CA; deleting or editing it is undone.
func TestRootCAPublisher(t *testing.T) {
	t.Parallel()
	s := scStart(t)
	c := s.Client
	ctx := context.Background()
	ca, err := os.ReadFile(s.PKI.CACert)
	if err != nil {
		t.Fatal(err)
	}

	for _, ns := range []string{metav1.NamespaceDefault, metav1.NamespaceSystem} {
		scWithin(t, scPrompt, "root CA in "+ns, scHasRootCA(c, ns, ca))
	}
	const ns = "sc-ca"
	createNamespace(t, c, ns)
	scWithin(t, scPrompt, "root CA in a new namespace", scHasRootCA(c, ns, ca))

	cms := c.CoreV1().ConfigMaps(ns)
	cm, err := cms.Get(ctx, rootcacertpublisher.ConfigMapName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data = map[string]string{rootcacertpublisher.DataKey: "not a CA", "extra": "x"}
	delete(cm.Annotations, rootcacertpublisher.DescriptionAnnotation)
	if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	scWithin(t, scPrompt, "edited root CA restored", scHasRootCA(c, ns, ca))

	if err := cms.Delete(ctx, rootcacertpublisher.ConfigMapName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	scWithin(t, scPrompt, "deleted root CA recreated", scHasRootCA(c, ns, ca))

	// Other ConfigMaps are not its business.
	other := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "other"}, Data: map[string]string{"k": "v"}}
	if _, err := cms.Create(ctx, other, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got, err := cms.Get(ctx, "other", metav1.GetOptions{}); err != nil || !maps.Equal(got.Data, other.Data) {
		t.Fatalf("other ConfigMap: %v %v", got, err)
	}
}

func scRule(verb, group, resource string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{Verbs: []string{verb}, APIGroups: []string{group}, Resources: []string{resource}}
}

func scClusterRole(name string, labels map[string]string, rules ...rbacv1.PolicyRule) *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Rules: rules}
}

// scRulesAre waits until ClusterRole name has exactly rules, in order.
func scRulesAre(t *testing.T, c kubernetes.Interface, name string, rules ...rbacv1.PolicyRule) {
	t.Helper()
	var last []rbacv1.PolicyRule
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, scPrompt, true, func(ctx context.Context) (bool, error) {
		r, err := c.RbacV1().ClusterRoles().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last = r.Rules
		return equality.Semantic.DeepEqual(r.Rules, rules), nil
	})
	if err != nil {
		t.Fatalf("ClusterRole %s has rules %v, want %v", name, last, rules)
	}
}

// TestClusterRoleAggregation: an aggregated ClusterRole has the rules of
// the roles its selectors match, following them as they change, appear and
// go.
func TestClusterRoleAggregation(t *testing.T) {
	t.Parallel()
	s := scStart(t)
	c := s.Client
	ctx := context.Background()
	roles := c.RbacV1().ClusterRoles()
	partA, partB := map[string]string{"sc.example.com/part": "a"}, map[string]string{"sc.example.com/part": "b"}
	getWidgets := scRule("get", "example.com", "widgets")
	listWidgets := scRule("list", "example.com", "widgets")
	getGadgets := scRule("get", "example.com", "gadgets")

	if _, err := roles.Create(ctx, scClusterRole("sc-a1", partA, getWidgets, listWidgets), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	agg := scClusterRole("sc-aggregated", nil)
	agg.AggregationRule = &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: partA}, {MatchLabels: partB}}}
	if _, err := roles.Create(ctx, agg, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	scRulesAre(t, c, "sc-aggregated", getWidgets, listWidgets)

	// A new matching role; a rule already there is not repeated.
	if _, err := roles.Create(ctx, scClusterRole("sc-b1", partB, getGadgets, getWidgets), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	scRulesAre(t, c, "sc-aggregated", getWidgets, listWidgets, getGadgets)

	// A matching role changes.
	a1, err := roles.Get(ctx, "sc-a1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	a1.Rules = []rbacv1.PolicyRule{listWidgets}
	if a1, err = roles.Update(ctx, a1, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	scRulesAre(t, c, "sc-aggregated", listWidgets, getGadgets, getWidgets)

	// A role stops matching, another goes.
	a1.Labels = nil
	if _, err := roles.Update(ctx, a1, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	scRulesAre(t, c, "sc-aggregated", getGadgets, getWidgets)
	if err := roles.Delete(ctx, "sc-b1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	scRulesAre(t, c, "sc-aggregated")

	// Rules written over are put back.
	if _, err := roles.Create(ctx, scClusterRole("sc-b2", partB, getGadgets), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	scRulesAre(t, c, "sc-aggregated", getGadgets)
	cur, err := roles.Get(ctx, "sc-aggregated", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cur.Rules = []rbacv1.PolicyRule{scRule("*", "*", "*")}
	if _, err := roles.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	scRulesAre(t, c, "sc-aggregated", getGadgets)
}

// scCovered reports whether ClusterRole name has every rule of every other
// ClusterRole its aggregation rule selects.
func scCovered(t *testing.T, c kubernetes.Interface, name string) bool {
	t.Helper()
	ctx := context.Background()
	role, err := c.RbacV1().ClusterRoles().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if role.AggregationRule == nil {
		t.Fatalf("ClusterRole %s has no aggregation rule", name)
	}
	for _, sel := range role.AggregationRule.ClusterRoleSelectors {
		matched, err := c.RbacV1().ClusterRoles().List(ctx, metav1.ListOptions{LabelSelector: metav1.FormatLabelSelector(&sel)})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range matched.Items {
			if m.Name == name {
				continue
			}
			for _, r := range m.Rules {
				if !slices.ContainsFunc(role.Rules, func(have rbacv1.PolicyRule) bool { return equality.Semantic.DeepEqual(have, r) }) {
					return false
				}
			}
		}
	}
	return true
}

// TestClusterRoleAggregationBootstrapRoles: admin, edit and view cover the
// roles aggregated into them, including new ones, through the chain
// view -> edit -> admin.
func TestClusterRoleAggregationBootstrapRoles(t *testing.T) {
	t.Parallel()
	s := scStart(t)
	c := s.Client
	ctx := context.Background()
	bootstrap := []string{"admin", "edit", "view"}
	for _, name := range bootstrap {
		scWithin(t, scPrompt, name+" covering its aggregated roles", func() bool { return scCovered(t, c, name) })
	}

	readWidgets := scRule("get", "example.com", "widgets")
	extra := scClusterRole("sc-aggregate-to-view", map[string]string{"rbac.authorization.k8s.io/aggregate-to-view": "true"}, readWidgets)
	if _, err := c.RbacV1().ClusterRoles().Create(ctx, extra, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, name := range bootstrap {
		scWithin(t, scPrompt, name+" with the rule aggregated to view", func() bool {
			r, err := c.RbacV1().ClusterRoles().Get(ctx, name, metav1.GetOptions{})
			return err == nil && slices.ContainsFunc(r.Rules, func(have rbacv1.PolicyRule) bool { return equality.Semantic.DeepEqual(have, readWidgets) })
		})
		if !scCovered(t, c, name) {
			t.Errorf("%s does not cover its aggregated roles", name)
		}
	}
}
