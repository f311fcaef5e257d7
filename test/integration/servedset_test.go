package integration

import (
	"slices"
	"sort"
	"strings"
	"testing"

	"k8s.io/client-go/kubernetes"

	servertesting "github.com/gcp-project/gcp/pkg/controlplane/apiserver/testing"
	"github.com/gcp-project/gcp/pkg/layering"
)

// servedResources lists resource[.group] for every resource and
// subresource discovery reports, sorted.
func servedResources(t *testing.T, client kubernetes.Interface) []string {
	t.Helper()
	_, lists, err := client.Discovery().ServerGroupsAndResources()
	if err != nil {
		t.Fatalf("discovery: %v", err)
	}
	seen := map[string]bool{}
	for _, list := range lists {
		group := strings.Split(list.GroupVersion, "/")[0]
		if !strings.Contains(list.GroupVersion, "/") {
			group = ""
		}
		for _, r := range list.APIResources {
			name := r.Name
			if group != "" {
				name += "." + group
			}
			seen[name] = true
		}
	}
	var out []string
	for name := range seen {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// TestServedResources pins the exact set of served resources: adding or
// removing an API must change this list.
func TestServedResources(t *testing.T) {
	t.Parallel()
	s := startGeneric(t)
	want := []string{
		"apiservices.apiregistration.k8s.io",
		"apiservices/status.apiregistration.k8s.io",
		"clusterrolebindings.rbac.authorization.k8s.io",
		"clusterroles.rbac.authorization.k8s.io",
		"configmaps",
		"customresourcedefinitions.apiextensions.k8s.io",
		"customresourcedefinitions/status.apiextensions.k8s.io",
		"events",
		"events.events.k8s.io",
		"leases.coordination.k8s.io",
		"localsubjectaccessreviews.authorization.k8s.io",
		"namespaces",
		"namespaces/finalize",
		"namespaces/status",
		"resourcequotas",
		"resourcequotas/status",
		"rolebindings.rbac.authorization.k8s.io",
		"roles.rbac.authorization.k8s.io",
		"secrets",
		"selfsubjectaccessreviews.authorization.k8s.io",
		"selfsubjectreviews.authentication.k8s.io",
		"selfsubjectrulesreviews.authorization.k8s.io",
		"serviceaccounts",
		"serviceaccounts/token",
		"subjectaccessreviews.authorization.k8s.io",
		"tokenreviews.authentication.k8s.io",
	}
	if got := servedResources(t, s.Client); !slices.Equal(got, want) {
		t.Fatalf("served resources:\n got %q\nwant %q", got, want)
	}
}

// TestWithoutCoordinationLayer shows a layer removed in code: leases are not
// served, everything else is.
func TestWithoutCoordinationLayer(t *testing.T) {
	t.Parallel()
	s := servertesting.StartTestServer(t, servertesting.Options{
		Extra: genericExtra(t, layering.Generic().Without(layering.Coordination)),
	})
	got := servedResources(t, s.Client)
	if slices.Contains(got, "leases.coordination.k8s.io") {
		t.Fatalf("leases served without the coordination layer: %q", got)
	}
	for _, r := range []string{"configmaps", "namespaces", "customresourcedefinitions.apiextensions.k8s.io", "events.events.k8s.io"} {
		if !slices.Contains(got, r) {
			t.Errorf("%s not served without the coordination layer: %q", r, got)
		}
	}
}

// TestSubresourceVerbs: status and finalize only read and update the
// namespace; they cannot create or delete through the subresource.
func TestSubresourceVerbs(t *testing.T) {
	t.Parallel()
	s := startGeneric(t)
	list, err := s.Client.Discovery().ServerResourcesForGroupVersion("v1")
	if err != nil {
		t.Fatal(err)
	}
	verbs := map[string][]string{}
	for _, r := range list.APIResources {
		v := append([]string(nil), r.Verbs...)
		sort.Strings(v)
		verbs[r.Name] = v
	}
	for _, sub := range []string{"namespaces/status", "namespaces/finalize"} {
		want := []string{"get", "patch", "update"}
		if sub == "namespaces/finalize" {
			want = []string{"update"}
		}
		if !slices.Equal(verbs[sub], want) {
			t.Errorf("%s verbs %v, want %v", sub, verbs[sub], want)
		}
	}
	want := []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}
	if !slices.Equal(verbs["configmaps"], want) {
		t.Errorf("configmaps verbs %v, want %v", verbs["configmaps"], want)
	}
}
